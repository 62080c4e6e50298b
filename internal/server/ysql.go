package server

import (
	"net"

	"github.com/shaledb/shaledb/internal/client"
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
	eng := exec.NewEngine(exec.Config{Client: c})
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
