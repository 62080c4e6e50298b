package tserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/tablet"
	pb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// errStale is answered as STALE_FOLLOWER: the reader should go to the
// leader.
var errStale = errors.New("tserver: follower cannot serve the requested staleness")

// safePoint returns a safe point of tb no older than maxStaleness: the
// cached one if fresh enough, else a new one from the leaseholder (this
// node's replica if it is the leaseholder).
func (n *Node) safePoint(ctx context.Context, tb *tablet.Tablet, maxStaleness time.Duration) (tablet.SafePoint, error) {
	id := tb.Descriptor().ID
	oldest := hlc.FromTime(time.Now().Add(-maxStaleness))
	if v, ok := n.safePoints.Load(id); ok {
		if sp := v.(tablet.SafePoint); sp.Time >= oldest {
			return sp, nil
		}
	}
	sp, err := tb.SafePoint()
	if err != nil {
		leader := tb.Group().Status().Leader
		if leader == 0 || leader == n.cfg.NodeID {
			return tablet.SafePoint{}, fmt.Errorf("%w: tablet %d has no known leader", errStale, id)
		}
		addr, err := n.resolve(leader)
		if err != nil {
			return tablet.SafePoint{}, fmt.Errorf("%w: %v", errStale, err)
		}
		cc, err := n.pool.Conn(addr)
		if err != nil {
			return tablet.SafePoint{}, err
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := pb.NewTabletServerClient(cc).SafeTime(cctx, &pb.SafeTimeRequest{TabletId: id})
		cancel()
		if err != nil {
			return tablet.SafePoint{}, fmt.Errorf("%w: leader %d: %v", errStale, leader, err)
		}
		if e := resp.GetError(); e.GetCode() != pb.TabletError_OK {
			return tablet.SafePoint{}, fmt.Errorf("%w: leader %d: %s", errStale, leader, e.GetMessage())
		}
		sp = tablet.SafePoint{Time: hlc.Timestamp(resp.GetSafeTime()), Index: resp.GetAppliedIndex()}
		if err := n.cfg.Clock.Update(sp.Time); err != nil {
			return tablet.SafePoint{}, err
		}
	}
	if sp.Time < oldest {
		return tablet.SafePoint{}, fmt.Errorf("%w: safe time %s older than %v", errStale, sp.Time, maxStaleness)
	}
	n.safePoints.Store(id, sp)
	return sp, nil
}

func (s *service) SafeTime(ctx context.Context, req *pb.SafeTimeRequest) (*pb.SafeTimeResponse, error) {
	n := s.n
	resp := &pb.SafeTimeResponse{}
	err := func() error {
		tb, err := n.lookup(req.GetTabletId())
		if err != nil {
			return err
		}
		sp, err := tb.SafePoint()
		resp.SafeTime, resp.AppliedIndex = uint64(sp.Time), sp.Index
		return err
	}()
	resp.Error = n.tabletErr(err)
	return resp, nil
}

// followerStaleness is the staleness a follower read accepts (default 10 s).
func followerStaleness(ms uint32) time.Duration {
	if ms == 0 {
		return 10 * time.Second
	}
	return time.Duration(ms) * time.Millisecond
}
