package workload

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// defaultYSQLPort is the PostgreSQL port of a SqlInserts node given
// without one.
const defaultYSQLPort = 5433

// sqlStore is SqlInserts' table in YSQL: a pool per node (Config.Nodes
// are YSQL addresses there, host[:port]), the calls spread over them in
// turn.
type sqlStore struct {
	pools                         []*pgxpool.Pool
	next                          atomic.Uint64
	insertSQL, upsertSQL, readSQL string
}

// openSQLStore connects to every node's YSQL port and creates the table.
func openSQLStore(ctx context.Context, cfg Config) (*sqlStore, error) {
	table := pgx.Identifier{cfg.Table}.Sanitize()
	st := &sqlStore{
		insertSQL: "INSERT INTO " + table + " (k, v) VALUES ($1, $2)",
		upsertSQL: "INSERT INTO " + table + " (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
		readSQL:   "SELECT v FROM " + table + " WHERE k = $1",
	}
	threads := max(cfg.WriteThreads+cfg.ReadThreads, 1)
	for _, n := range cfg.Nodes {
		addr := n
		if _, _, err := net.SplitHostPort(n); err != nil {
			addr = net.JoinHostPort(n, strconv.Itoa(defaultYSQLPort))
		}
		pc, err := pgxpool.ParseConfig(fmt.Sprintf("postgres://yugabyte@%s/yugabyte?sslmode=disable", addr))
		if err != nil {
			st.close()
			return nil, err
		}
		pc.MaxConns = int32(threads/len(cfg.Nodes) + 1)
		pool, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			st.close()
			return nil, fmt.Errorf("workload: YSQL at %s: %w", addr, err)
		}
		st.pools = append(st.pools, pool)
	}
	create := "CREATE TABLE IF NOT EXISTS " + table + " (k text PRIMARY KEY, v bytea)"
	if cfg.NumTablets > 0 {
		create += fmt.Sprintf(" SPLIT INTO %d TABLETS", cfg.NumTablets)
	}
	if _, err := st.pools[0].Exec(ctx, create); err != nil {
		st.close()
		return nil, fmt.Errorf("workload: create table: %w", err)
	}
	return st, nil
}

func (s *sqlStore) pool() *pgxpool.Pool {
	return s.pools[s.next.Add(1)%uint64(len(s.pools))]
}

// put inserts key i's first version, upserts the next ones.
func (s *sqlStore) put(ctx context.Context, i int, v []byte, first bool) error {
	q := s.upsertSQL
	if first {
		q = s.insertSQL
	}
	_, err := s.pool().Exec(ctx, q, keyName(i), v)
	var pe *pgconn.PgError
	if first && errors.As(err, &pe) && pe.Code == "23505" {
		// A retried first write whose earlier attempt landed.
		_, err = s.pool().Exec(ctx, s.upsertSQL, keyName(i), v)
	}
	return err
}

func (s *sqlStore) get(ctx context.Context, i int, _ bool) ([]byte, bool, error) {
	var v []byte
	err := s.pool().QueryRow(ctx, s.readSQL, keyName(i)).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (s *sqlStore) close() {
	for _, p := range s.pools {
		p.Close()
	}
}
