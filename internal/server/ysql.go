package server

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/ysql/exec"
	"github.com/shaledb/shaledb/internal/ysql/pgwire"
)

// DefaultYSQLPort is YSQL's PostgreSQL port (YugabyteDB's).
const DefaultYSQLPort = 5433

// startYSQL serves the PostgreSQL protocol once the node has a cluster
// client; queries reach data only through that client.
func (s *Server) startYSQL(c *client.Client) {
	if s.cfg.YSQLAddr == "" {
		return
	}
	addr := withPort(s.cfg.YSQLAddr, DefaultYSQLPort)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.log.Error("ysql: listen", "addr", addr, "err", err)
		s.fail(err)
		return
	}
	// Sorts larger than work_mem spill here (their files are unlinked
	// while open; a crash leaves nothing behind but the directory).
	tmp := filepath.Join(s.cfg.DataDir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		s.log.Error("ysql: temporary directory", "dir", tmp, "err", err)
		s.fail(err)
		return
	}
	eng := exec.NewEngine(exec.Config{Client: c, Servers: ysqlServers(c.Masters()), TempDir: tmp,
		MaxSQLMemory: s.cfg.MaxSQLMemory})
	for _, m := range eng.Collectors() {
		if err := s.reg.Prometheus().Register(m); err != nil {
			_ = ln.Close()
			s.fail(err)
			return
		}
	}
	srv, err := pgwire.NewServer(pgwire.Config{Engine: eng, Logger: s.log.With("component", "ysql"), Registerer: s.reg.Prometheus()})
	if err != nil {
		_ = ln.Close()
		s.fail(err)
		return
	}
	s.ysql.Store(&ysqlState{engine: eng, server: srv, addr: ln.Addr().String()})
	s.log.Info("ysql listening", "addr", ln.Addr().String())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-s.ctx.Done()
		srv.Close()
	}()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(ln); err != nil && s.ctx.Err() == nil {
			s.log.Error("ysql: serve", "err", err)
		}
	}()
}

type ysqlState struct {
	engine *exec.Engine
	server *pgwire.Server
	addr   string
}

// YSQLAddr is the address YSQL serves on ("" until it is up).
func (s *Server) YSQLAddr() string {
	if st := s.ysql.Load(); st != nil {
		return st.addr
	}
	return ""
}

// noteCatalogVersion passes the master's catalog version to YSQL's cache.
func (s *Server) noteCatalogVersion(v uint64) {
	if st := s.ysql.Load(); st != nil {
		st.engine.Cache().NoteVersion(v)
	}
}

// ysqlAdvertised is the YSQL address the node reports to the master: its
// listen address, with the RPC address's host when it listens on every
// interface.
func (s *Server) ysqlAdvertised() string {
	addr := s.YSQLAddr()
	host, port, err := net.SplitHostPort(addr)
	if err != nil || addr == "" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() && s.hb != nil {
		if rh, _, err := net.SplitHostPort(s.hb.rpcAddr); err == nil {
			host = rh
		}
	}
	return net.JoinHostPort(host, port)
}

// ysqlServers lists the live nodes serving YSQL, from the master's view of
// the tservers, for yb_servers().
func ysqlServers(ms *client.Masters) func(ctx context.Context) ([]exec.ServerInfo, error) {
	return func(ctx context.Context) ([]exec.ServerInfo, error) {
		var resp *masterpb.ListTServersResponse
		err := ms.Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
			r, err := mc.ListTServers(ctx, &masterpb.ListTServersRequest{})
			resp = r
			return r.GetError(), err
		})
		if err != nil {
			return nil, err
		}
		var out []exec.ServerInfo
		for _, ts := range resp.GetTservers() {
			if ts.GetState() != masterpb.TServerInfo_LIVE || ts.GetYsqlAddr() == "" {
				continue
			}
			host, port, err := net.SplitHostPort(ts.GetYsqlAddr())
			if err != nil {
				continue
			}
			p, _ := strconv.Atoi(port)
			pl := ts.GetPlacement()
			out = append(out, exec.ServerInfo{Host: host, Port: p, Connections: int(ts.GetYsqlConnections()), NodeType: "primary", Cloud: pl.GetCloud(),
				Region: pl.GetRegion(), Zone: pl.GetZone(), PublicIP: host, UUID: strconv.FormatUint(ts.GetNodeId(), 10)})
		}
		return out, nil
	}
}

// ysqlConnections counts the open YSQL connections, for heartbeats.
func (s *Server) ysqlConnections() uint32 {
	if st := s.ysql.Load(); st != nil {
		return uint32(st.engine.Sessions())
	}
	return 0
}

// ysqlCatalogVersion reports, for heartbeats, whether the node serves YSQL,
// the catalog version its YSQL layer knows and, per database, older ones
// still in use.
func (s *Server) ysqlCatalogVersion() (bool, uint64, map[string]uint64) {
	if s.cfg.YSQLAddr == "" {
		return false, 0, nil
	}
	st := s.ysql.Load()
	if st == nil {
		return true, 0, nil // starting: no answer yet
	}
	v, byDB := st.engine.CatalogVersionInUse()
	return true, v, byDB
}
