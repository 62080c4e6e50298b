package exec

import (
	"maps"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/shaledb/shaledb/internal/ysql/pgwire"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// pg_stat_activity: the node's sessions and what each is doing, and
// pg_cancel_backend / pg_terminate_backend on them. As in YugabyteDB, a
// node shows and signals its own sessions: a pid is the node's.

// activity is what pg_stat_activity shows of a session. The session's
// goroutine writes it at each statement's start and end; other sessions
// read it under mu.
type activity struct {
	mu                      sync.Mutex
	state, query, appName   string
	backendStart, xactStart time.Time
	queryStart, stateChange time.Time
	clientAddr              string
	clientPort              int64
	// cancel and terminate are set before the session is registered and
	// never change: readers need no lock for them.
	cancel, terminate func()
	// depth counts the statements running: a statement run inside
	// another (DECLARE's query) leaves the outer one's activity alone.
	depth int
	// settingsGen: Session.settingsGen when appName was read (the
	// session's goroutine reads and writes it).
	settingsGen uint64
}

// sessionRegistry is the engine's live sessions, by pid.
type sessionRegistry struct {
	mu    sync.Mutex
	byPID map[uint32]*Session
}

// register enters a new session and what its connection tells of it.
func (e *Engine) register(s *Session, info pgwire.ConnInfo) {
	now := time.Now()
	a := &s.act
	a.backendStart, a.stateChange, a.state = now, now, "idle"
	a.cancel, a.terminate = info.Cancel, info.Terminate
	if host, port, err := net.SplitHostPort(info.RemoteAddr); err == nil {
		a.clientAddr = host
		a.clientPort, _ = strconv.ParseInt(port, 10, 64)
	}
	a.appName, _ = s.show("application_name")
	a.settingsGen = s.settingsGen
	e.reg.mu.Lock()
	if e.reg.byPID == nil {
		e.reg.byPID = map[uint32]*Session{}
	}
	e.reg.byPID[s.pid] = s
	e.reg.mu.Unlock()
}

func (e *Engine) unregister(s *Session) {
	e.reg.mu.Lock()
	if e.reg.byPID[s.pid] == s {
		delete(e.reg.byPID, s.pid)
	}
	e.reg.mu.Unlock()
}

// activityStart records that the session runs sql.
func (s *Session) activityStart(sql string) {
	a := &s.act
	if a.depth++; a.depth > 1 {
		return
	}
	now := time.Now()
	a.mu.Lock()
	a.state, a.query, a.queryStart, a.stateChange = "active", sql, now, now
	if a.xactStart.IsZero() {
		a.xactStart = now
	}
	a.mu.Unlock()
}

// activityEnd records the session idle after a statement: in a block, in
// a failed one, or outside one (its transaction over).
func (s *Session) activityEnd() {
	if s.act.depth--; s.act.depth > 0 {
		return
	}
	state := "idle"
	switch {
	case s.inBlock && s.failed:
		state = "idle in transaction (aborted)"
	case s.inBlock:
		state = "idle in transaction"
	}
	a := &s.act
	app, gen := a.appName, s.settingsGen
	if gen != a.settingsGen { // a setting changed: application_name, maybe
		app, _ = s.show("application_name")
	}
	a.mu.Lock()
	a.state, a.stateChange, a.appName, a.settingsGen = state, time.Now(), app, gen
	if !s.inBlock {
		a.xactStart = time.Time{}
	}
	a.mu.Unlock()
}

// sessionByPID is the node's session with that pid, or nil.
func (e *Engine) sessionByPID(pid int64) *Session {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	if pid < 0 || pid > int64(^uint32(0)) {
		return nil
	}
	return e.reg.byPID[uint32(pid)]
}

// SignalBackend cancels the running statement of the session with pid
// (terminate: and ends its connection, FATAL 57P01), as pg_cancel_backend
// and pg_terminate_backend do; false with PostgreSQL's WARNING for a pid
// that is none of this node's sessions.
func (s *Session) SignalBackend(pid int64, terminate bool) bool {
	target := s.e.sessionByPID(pid)
	if target == nil {
		s.notice("WARNING", "01000", "PID %d is not a PostgreSQL backend process", pid)
		return false
	}
	f := target.act.cancel
	if terminate {
		f = target.act.terminate
	}
	if f == nil {
		return false
	}
	f()
	return true
}

// activityRows are pg_stat_activity's rows (PostgreSQL 15's columns).
func (e *Engine) activityRows(dbOID func(string) uint32) []plan.Row {
	e.reg.mu.Lock()
	sessions := make([]*Session, 0, len(e.reg.byPID))
	for _, s := range e.reg.byPID {
		sessions = append(sessions, s)
	}
	e.reg.mu.Unlock()
	sort.Slice(sessions, func(i, j int) bool { return sessions[i].pid < sessions[j].pid })
	// A session's advisory state is safe to read once it is registered
	// there (advEntry): whether it waits for a lock.
	e.adv.mu.Lock()
	advisory := maps.Clone(e.adv.sessions)
	e.adv.mu.Unlock()
	ts := func(t time.Time) types.Datum {
		if t.IsZero() {
			return dNull()
		}
		return types.DMicros(t.UnixMicro() - types.PGEpochUnixMicros)
	}
	text := func(v string) types.Datum {
		if v == "" {
			return dNull()
		}
		return dStr(v)
	}
	out := make([]plan.Row, 0, len(sessions))
	for _, s := range sessions {
		a := &s.act
		a.mu.Lock()
		waitType, wait := dNull(), dNull()
		if _, ok := advisory[s]; ok {
			s.adv.mu.Lock()
			if s.adv.waiting != nil {
				waitType, wait = dStr("Lock"), dStr("advisory")
			}
			s.adv.mu.Unlock()
		}
		port := dNull()
		if a.clientAddr != "" {
			port = dInt(a.clientPort)
		}
		out = append(out, plan.Row{dOID(dbOID(s.db)), dStr(s.db), dInt(int64(s.pid)), dNull(), dOID(oidBootUser), dStr(s.user),
			dStr(a.appName), text(a.clientAddr), dNull(), port, ts(a.backendStart), ts(a.xactStart), ts(a.queryStart),
			ts(a.stateChange), waitType, wait, dStr(a.state), dNull(), dNull(), dNull(), dStr(a.query), dStr("client backend")})
		a.mu.Unlock()
	}
	return out
}
