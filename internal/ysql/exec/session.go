package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/ysql/builtins"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/pgwire"
	"github.com/shaledb/shaledb/internal/ysql/plan"
)

// ServerVersion is reported as server_version: PostgreSQL 15 semantics.
const ServerVersion = "15.0-ShaleDB-0.1"

// Config configures an Engine.
type Config struct {
	Client *client.Client
	Cache  *catalog.Cache
	// Servers lists the cluster's YSQL endpoints for yb_servers().
	Servers func(ctx context.Context) ([]ServerInfo, error)
	// TempDir holds the files of sorts larger than work_mem (default the
	// system's temporary directory).
	TempDir string
	// MaxSQLMemory is the node's query memory budget: the bytes all its
	// statements may hold in memory at once (mem.go); 0: no limit.
	MaxSQLMemory int64
}

// ServerInfo is one row of yb_servers().
type ServerInfo struct {
	Host, Cloud, Region, Zone string
	Port                      int
	Connections               int
	NodeType, PublicIP, UUID  string
}

// Engine creates sessions; one per node.
type Engine struct {
	cfg      Config
	metrics  *engineMetrics
	mem      *memMonitor
	seqs     sequences
	adv      advisoryEngine
	reg      sessionRegistry // pg_stat_activity, pg_cancel_backend
	sessions atomic.Int64
	defaults sync.Once
	defErr   error

	// pins: the catalog version each session with a statement or
	// transaction block in progress started at (CatalogVersionInUse).
	pinMu sync.Mutex
	pins  map[*Session]uint64
}

// CatalogVersionInUse is the catalog version this node knows and, per
// database, an older one it may still act on there: that of a statement or
// transaction block that began before the node learnt of a newer one.
// Heartbeats report it, and schema changes that need every node to see a
// step (index states) wait until every node reports at least that step's
// version for the database.
func (e *Engine) CatalogVersionInUse() (uint64, map[string]uint64) {
	v := e.cfg.Cache.Latest()
	e.pinMu.Lock()
	defer e.pinMu.Unlock()
	var byDB map[string]uint64
	for s, p := range e.pins {
		if p >= v {
			continue
		}
		if byDB == nil {
			byDB = map[string]uint64{}
		}
		if old, ok := byDB[s.db]; !ok || p < old {
			byDB[s.db] = p
		}
	}
	return v, byDB
}

// pin records, before the session reads the catalog for a statement, the
// catalog version it will act on at least; it holds until unpin (at the
// end of the statement, or of the transaction block).
func (s *Session) pin() {
	e := s.e
	e.pinMu.Lock()
	defer e.pinMu.Unlock()
	if _, ok := e.pins[s]; ok {
		return
	}
	if e.pins == nil {
		e.pins = map[*Session]uint64{}
	}
	e.pins[s] = e.cfg.Cache.Latest()
}

func (s *Session) unpin() {
	s.e.pinMu.Lock()
	delete(s.e.pins, s)
	s.e.pinMu.Unlock()
}

// pinned reports whether the session holds a catalog version in use (a
// statement, a block or a batch's implicit transaction).
func (s *Session) pinned() bool {
	s.e.pinMu.Lock()
	defer s.e.pinMu.Unlock()
	_, ok := s.e.pins[s]
	return ok
}

// unpinStatement ends a statement's pin unless a block or the batch's
// implicit transaction holds it (Sync ends that one).
func (s *Session) unpinStatement() {
	if !s.inBlock && s.implicitTxn == nil {
		s.unpin()
	}
}

// NewEngine returns an engine over the cluster client.
func NewEngine(cfg Config) *Engine {
	if cfg.Cache == nil {
		cfg.Cache = catalog.NewCache(cfg.Client)
	}
	return &Engine{cfg: cfg, metrics: newEngineMetrics(), mem: &memMonitor{limit: cfg.MaxSQLMemory}}
}

// begin starts a distributed transaction for a session. A block of
// statements (BEGIN ... COMMIT, or a batch's implicit transaction) sets
// opts.Pipelined: each statement goes on while the last one's intents
// replicate.
func (e *Engine) begin(ctx context.Context, opts client.TxnOptions) (*client.Txn, error) {
	e.metrics.txns.Inc()
	return e.cfg.Client.Begin(ctx, opts)
}

// Cache is the engine's catalog cache (the node notes catalog versions
// from heartbeats on it).
func (e *Engine) Cache() *catalog.Cache { return e.cfg.Cache }

// Sessions is the number of open sessions.
func (e *Engine) Sessions() int64 { return e.sessions.Load() }

func (e *Engine) tempDir() string {
	if e.cfg.TempDir != "" {
		return e.cfg.TempDir
	}
	return os.TempDir()
}

func init() {
	pgerror.RegisterTranslator(func(err error) *pgerror.Error {
		if errors.Is(err, context.Canceled) {
			return pgerror.New(pgerror.CodeQueryCanceled, "canceling statement due to user request")
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return pgerror.New(pgerror.CodeQueryCanceled, "canceling statement due to statement timeout")
		}
		if code := client.SQLState(err); code != "" && code != pgerror.CodeInternalError {
			msg := err.Error()
			switch code {
			case pgerror.CodeSerializationFailure:
				msg = "could not serialize access due to concurrent update"
			case pgerror.CodeDeadlockDetected:
				msg = "deadlock detected"
			case pgerror.CodeLockNotAvailable:
				msg = "could not obtain lock on row"
			case pgerror.CodeProgramLimitExceeded:
				var ce *client.Error
				if errors.As(err, &ce) && ce.Message != "" {
					// PostgreSQL's "row is too big: ...", which says it all.
					return &pgerror.Error{Code: code, Message: ce.Message}
				}
			case pgerror.CodeSnapshotTooOld:
				msg = "snapshot too old"
				return &pgerror.Error{Code: code, Message: msg, Detail: err.Error(),
					Hint: "The snapshot is older than the history the tablets keep (15 minutes by default): a cursor or portal was read for longer than that."}
			}
			return &pgerror.Error{Code: code, Message: msg, Detail: err.Error()}
		}
		return nil
	})
}

// NewSession opens a session for a new connection.
func (e *Engine) NewSession(ctx context.Context, params map[string]string, info pgwire.ConnInfo) (pgwire.Session, error) {
	e.defaults.Do(func() { e.defErr = e.cfg.Cache.EnsureDefaults(ctx) })
	if e.defErr != nil {
		err := e.defErr
		e.defaults = sync.Once{}
		return nil, err
	}
	user := params["user"]
	if user == "" {
		user = "yugabyte"
	}
	db := params["database"]
	if db == "" {
		db = user
	}
	snap, err := e.cfg.Cache.Get(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := snap.Databases[db]; !ok {
		// Created through another node a moment ago, maybe: this node
		// hears of the new catalog version with its next heartbeat.
		if snap, err = e.cfg.Cache.Fresh(ctx); err != nil {
			return nil, err
		}
	}
	if _, ok := snap.Databases[db]; !ok {
		return nil, pgerror.New(pgerror.CodeInvalidCatalogName, "database %q does not exist", db)
	}
	s := &Session{e: e, db: db, user: user, pid: info.BackendPID, tables: map[uint32]*client.Table{},
		prepared: map[string]*Statement{}}
	s.resetSettings(user)
	if an := params["application_name"]; an != "" {
		s.setSetting("application_name", an)
	}
	for k, v := range params {
		if _, known := s.settings[strings.ToLower(k)]; known && k != "user" && k != "database" {
			if err := s.set(strings.ToLower(k), v); err != nil {
				return nil, err
			}
		}
	}
	if opts := params["options"]; opts != "" {
		if err := s.startupOptions(opts); err != nil {
			return nil, err
		}
	}
	e.register(s, info)
	e.sessions.Add(1)
	return s, nil
}

// startupOptions applies "-c name=value" startup options.
func (s *Session) startupOptions(opts string) error {
	fields := strings.Fields(opts)
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case f == "-c" && i+1 < len(fields):
			i++
			f = fields[i]
		case strings.HasPrefix(f, "-c"): // -cname=value
			f = f[2:]
		default:
			f = strings.TrimPrefix(f, "--")
		}
		name, val, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		if err := s.set(strings.ToLower(strings.ReplaceAll(name, "-", "_")), val); err != nil {
			return err
		}
	}
	return nil
}

// Session is one connection's SQL state.
type Session struct {
	e        *Engine
	db, user string
	pid      uint32
	act      activity // pg_stat_activity
	settings map[string]string
	// settingsGen counts the changes of settings (setSetting,
	// resetSettings); derived is what statements read of them, worked out
	// again only when it moved, so a statement that changes none pays no
	// map lookups for them.
	settingsGen uint64
	derived     derivedSettings

	// Transaction state: inBlock between BEGIN and COMMIT/ROLLBACK; txn is
	// started lazily by the block's first statement; failed after an
	// error inside a block.
	inBlock  bool
	failed   bool
	txn      *client.Txn
	blockIso client.Isolation
	// blockIsoName is the block's level as SHOW says it: READ UNCOMMITTED
	// runs as READ COMMITTED (as in PostgreSQL) but keeps its name.
	blockIsoName string
	// blockReadOnly: the block is READ ONLY (readonly.go).
	blockReadOnly bool
	// blockDeferrable: the block is DEFERRABLE (only shown: a
	// serializable read-only block never waits here).
	blockDeferrable bool
	// blockSettings are the settings SET changed in the block
	// (endBlockSettings).
	blockSettings map[string]*blockSetting
	txnTime       time.Time

	// PostgreSQL's implicit transaction: outside a block, the statements of
	// a multi-statement simple Query, or of an extended-protocol batch (up
	// to Sync), share implicitTxn, which Sync commits (or rolls back after
	// an error), so the batch is atomic. A simple Query of one statement
	// (singleStmt) commits that statement on its own instead, so it can be
	// retried whole after a conflict. implicitRan counts the statements
	// implicitTxn has run.
	implicitTxn *client.Txn
	implicitRan int
	singleStmt  bool

	// work holds the rows a recursive WITH query's recursive term reads
	// (plan.WorkTable) while the statement runs (recursiveSource).
	work map[*plan.WorkTable][]plan.Row
	// busyBlock: DDL runs inside a block that has run statements (see
	// outsideBlock).
	busyBlock bool

	// reads counts the rows each scan reads while EXPLAIN ANALYZE runs
	// a statement (nil otherwise).
	reads map[*plan.Scan]*scanReads
	// ownStatement: the statement running is alone in a transaction of
	// its own (ownTxn), which commits after it.
	ownStatement bool
	// spills: what the operators that may spill report (EXPLAIN ANALYZE).
	spills map[plan.Node]func() string

	notices  []*pgwire.Notice
	prepared map[string]*Statement // SQL-level PREPARE
	cursors  map[string]*cursor    // DECLARE CURSOR
	// cursorSeq numbers the cursors declared; cursorMarks holds it at each
	// savepoint of the block.
	cursorSeq   int
	cursorMarks map[string]int
	// declaring: the statement run is a DECLARE CURSOR's query.
	declaring bool
	// streamOK: the statement being run may stream its rows (see
	// resultStream); stream is the rest of its rows when it did.
	streamOK bool
	stream   *resultStream
	tables   map[uint32]*client.Table
	closed   bool

	// Sequences: the session's currval per sequence and the sequence
	// lastval reads (0: none); the sequences of SERIAL columns of the
	// CREATE TABLE being run.
	currvals    map[uint32]int64
	lastSeq     uint32
	pendingSeqs []*catalog.Sequence
	// pendingUniques: the UNIQUE constraints of the CREATE TABLE being run.
	pendingUniques []*indexRequest
	// pendingFKs: the FOREIGN KEY constraints of the CREATE TABLE being run.
	pendingFKs []fkRequest
	// deferred: the block's foreign-key checks put off to COMMIT.
	deferred *fkDeferred
	// fkStmts: the internal statements of foreign-key actions, by catalog
	// version (fkStmtsVersion), child, constraint and kind.
	fkStmts        map[string]*Statement
	fkStmtsVersion uint64
	// adv: the session's advisory locks (advisory.go; nil until the first).
	adv *advisoryLocks
}

// derivedSettings is what statements read of the settings, as of
// settings generation gen (0: never worked out).
type derivedSettings struct {
	gen      uint64
	reported map[string]string // the ParameterStatus answer (read-only for the caller)
	loc      *time.Location    // timezone
	timeout  time.Duration     // statement_timeout
	readOnly bool              // default_transaction_read_only
	floatEFD int               // extra_float_digits
}

// settingsNow is the derived settings of the current settings.
func (s *Session) settingsNow() *derivedSettings {
	d := &s.derived
	if d.gen != 0 && d.gen == s.settingsGen {
		return d
	}
	d.gen = s.settingsGen
	d.reported = make(map[string]string, len(reportedSettings))
	for _, k := range reportedSettings {
		d.reported[settingDisplayName(k)] = s.settings[k]
	}
	var err error
	if d.loc, err = builtins.SessionZone(s.settings["timezone"]); err != nil {
		d.loc = time.UTC
	}
	ms, _ := parseDurationMs(s.settings["statement_timeout"])
	d.timeout = time.Duration(ms) * time.Millisecond
	d.readOnly = isOn(s.settings["default_transaction_read_only"])
	d.floatEFD, _ = strconv.Atoi(s.settings["extra_float_digits"])
	return d
}

// ParameterStatus reports the parameters PostgreSQL sends to clients.
func (s *Session) ParameterStatus() map[string]string { return s.settingsNow().reported }

// SettingsVersion changes whenever a setting does (pgwire compares it
// after every statement before it asks ParameterStatus).
func (s *Session) SettingsVersion() uint64 { return s.settingsGen }

// setSetting stores a setting's value.
func (s *Session) setSetting(name, value string) {
	s.settings[name] = value
	s.settingsGen++
}

// resetSettings sets every setting to its default, session_authorization
// to user.
func (s *Session) resetSettings(user string) {
	s.settings = defaultSettings(user)
	s.settingsGen++
}

// Split splits a simple query into statements (pgwire calls it once per
// Query message, before running them).
func (s *Session) Split(query string) ([]string, error) {
	texts, err := splitQuery(query)
	s.singleStmt = err == nil && len(texts) == 1
	return texts, err
}

// TxnStatus is I, T or E.
func (s *Session) TxnStatus() byte {
	switch {
	case s.failed:
		return 'E'
	case s.inBlock:
		return 'T'
	}
	return 'I'
}

// Sync ends a simple Query or an extended-query batch: the implicit
// transaction commits, or rolls back when the batch failed.
func (s *Session) Sync(ctx context.Context, failed bool) error {
	s.singleStmt = false
	tx := s.implicitTxn
	s.implicitTxn, s.implicitRan = nil, 0
	if tx == nil {
		return nil
	}
	if failed {
		rollback(ctx, tx)
		return nil
	}
	return tx.Commit(ctx)
}

// rollback rolls tx back even when ctx has ended (the statement was
// canceled): its intents must not wait for expiry.
func rollback(ctx context.Context, tx *client.Txn) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	_ = tx.Rollback(rctx)
	cancel()
}

// Notices drains the pending notices. Those below client_min_messages are
// dropped, as PostgreSQL does (INFO always goes to the client).
func (s *Session) Notices() []*pgwire.Notice {
	n := s.notices
	if len(n) == 0 {
		return nil
	}
	s.notices = nil
	min := noticeLevel(s.settings["client_min_messages"])
	out := n[:0]
	for _, x := range n {
		if sev := strings.ToLower(x.Severity); sev == "info" || noticeLevel(sev) >= min {
			out = append(out, x)
		}
	}
	return out
}

// noticeLevel orders PostgreSQL's message levels (client_min_messages
// values and notice severities); unknown ones rank as notice.
func noticeLevel(level string) int {
	switch level {
	case "debug5", "debug4", "debug3", "debug2", "debug1", "debug":
		return 0
	case "log":
		return 1
	case "info":
		return 2
	case "warning":
		return 4
	case "error":
		return 5
	}
	return 3 // notice
}

func (s *Session) notice(severity, code, format string, args ...any) {
	s.noticeDetail(severity, code, "", format, args...)
}

// noticeDetail is notice with a DETAIL.
func (s *Session) noticeDetail(severity, code, detail, format string, args ...any) {
	s.notices = append(s.notices, &pgwire.Notice{Severity: severity, Code: code, Message: fmt.Sprintf(format, args...), Detail: detail})
}

// Close rolls back an open transaction.
func (s *Session) Close() {
	if s.closed {
		return
	}
	s.closed = true
	s.unpin()
	for _, tx := range []*client.Txn{s.txn, s.implicitTxn} {
		if tx != nil {
			rollback(context.Background(), tx)
		}
	}
	s.txn, s.implicitTxn = nil, nil
	s.advisoryClose()
	s.e.unregister(s)
	s.e.sessions.Add(-1)
}

// snapshot returns the current catalog.
func (s *Session) snapshot(ctx context.Context) (*catalog.Snapshot, error) {
	return s.e.cfg.Cache.Get(ctx)
}

// openTable opens the storage table of t, cached per schema version.
func (s *Session) openTable(ctx context.Context, t *catalog.Table) (*client.Table, error) {
	if tbl, ok := s.tables[t.MasterID]; ok && tbl.Schema().Version == t.Version {
		return tbl, nil
	}
	tbl, err := s.e.cfg.Cache.Open(ctx, t)
	if err != nil {
		var ce *client.Error
		if errors.As(err, &ce) && ce.Code == client.CodeTableNotFound || client.IsCode(err, masterpb.MasterError_NOT_FOUND) {
			s.e.cfg.Cache.Refresh()
			return nil, tableGone(err, "relation %q does not exist", t.Name)
		}
		return nil, err
	}
	s.tables[t.MasterID] = tbl
	return tbl, nil
}

// tableGone is 42P01 for a storage table the master no longer has, keeping
// the client's error as its cause: a statement run on a stale catalog
// snapshot runs again on a fresh one (Session.run).
func tableGone(err error, format string, args ...any) error {
	e := pgerror.Wrap(pgerror.CodeUndefinedTable, err)
	e.Message = fmt.Sprintf(format, args...)
	return e
}

// isolation maps a PostgreSQL level name to the client's.
func isolation(level string) (client.Isolation, error) {
	switch strings.ToLower(strings.TrimSpace(level)) {
	case "serializable":
		return client.Serializable, nil
	case "repeatable read", "snapshot":
		return client.Snapshot, nil
	case "read committed", "read uncommitted":
		return client.ReadCommitted, nil
	}
	return 0, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid value for parameter \"transaction_isolation\": %q", level)
}

// levelName is the name of the level given as level, run as i.
func levelName(level string, i client.Isolation) string {
	if strings.ToLower(strings.TrimSpace(level)) == "read uncommitted" {
		return "read uncommitted"
	}
	return isolationName(i)
}

func isolationName(i client.Isolation) string {
	switch i {
	case client.Serializable:
		return "serializable"
	case client.Snapshot:
		return "repeatable read"
	}
	return "read committed"
}

// location is the session time zone.
func (s *Session) location() *time.Location { return s.settingsNow().loc }
