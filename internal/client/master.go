package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/rpc"
)

// MasterError is a failed master call; Code says what kind.
type MasterError struct {
	Code    masterpb.MasterError_Code
	Message string
}

func (e *MasterError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// IsCode reports whether err is a MasterError with that code.
func IsCode(err error, code masterpb.MasterError_Code) bool {
	var me *MasterError
	return errors.As(err, &me) && me.Code == code
}

// Masters calls the master leader: it tries the leader it last found, then
// every master address, follows NOT_LEADER hints, and retries with backoff
// until ctx ends. Only errors that retrying cannot fix are returned early.
type Masters struct {
	pool  *rpc.Pool
	addrs []string

	mu     sync.Mutex
	leader string
}

// NewMasters returns a caller for the masters at addrs.
func NewMasters(pool *rpc.Pool, addrs []string) *Masters {
	return &Masters{pool: pool, addrs: append([]string(nil), addrs...)}
}

// Leader is the master leader's address as last found.
func (m *Masters) Leader() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leader
}

// Call runs f against the master leader. f returns the MasterError of the
// response (nil on success) and the gRPC error.
func (m *Masters) Call(ctx context.Context, f func(ctx context.Context, c masterpb.MasterClient) (*masterpb.MasterError, error)) error {
	backoff := 20 * time.Millisecond
	var last error
	for {
		m.mu.Lock()
		queue := []string{}
		if m.leader != "" {
			queue = append(queue, m.leader)
		}
		queue = append(queue, m.addrs...)
		m.mu.Unlock()
		tried := map[string]bool{}
		for len(queue) > 0 {
			addr := queue[0]
			queue = queue[1:]
			if tried[addr] {
				continue
			}
			tried[addr] = true
			cc, err := m.pool.Conn(addr)
			if err != nil {
				return err
			}
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			e, err := f(cctx, masterpb.NewMasterClient(cc))
			cancel()
			if err != nil {
				last = fmt.Errorf("master %s: %w", addr, err)
				continue
			}
			switch e.GetCode() {
			case masterpb.MasterError_OK:
				m.mu.Lock()
				m.leader = addr
				m.mu.Unlock()
				return nil
			case masterpb.MasterError_NOT_LEADER, masterpb.MasterError_UNAVAILABLE:
				if l := e.GetLeaderAddr(); l != "" && !tried[l] {
					queue = append([]string{l}, queue...)
				}
				last = &MasterError{Code: e.GetCode(), Message: e.GetMessage()}
			default:
				return &MasterError{Code: e.GetCode(), Message: e.GetMessage()}
			}
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = ctx.Err()
			}
			return fmt.Errorf("client: no master leader answered: %w", last)
		case <-time.After(backoff):
		}
		if backoff < time.Second {
			backoff *= 2
		}
	}
}
