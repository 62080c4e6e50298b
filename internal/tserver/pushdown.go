package tserver

import (
	"fmt"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/tablet"
	pb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// DefaultMaxScanRows bounds the rows one Scan request with a filter or
// aggregates examines when the request names no bound: a page that finds
// few qualifying rows still ends (with a resume span), so the scan's
// latches and the request's time stay bounded.
const DefaultMaxScanRows = 10000

// DefaultMaxGroups bounds the groups of one grouped aggregate page when
// the request names no bound (the page's partial rows are held in memory).
const DefaultMaxGroups = 10000

var predOps = map[pb.Predicate_Op]docdb.PredOp{
	pb.Predicate_AND: docdb.PredAnd, pb.Predicate_OR: docdb.PredOr, pb.Predicate_NOT: docdb.PredNot,
	pb.Predicate_EQ: docdb.PredEQ, pb.Predicate_NE: docdb.PredNE, pb.Predicate_LT: docdb.PredLT,
	pb.Predicate_LE: docdb.PredLE, pb.Predicate_GT: docdb.PredGT, pb.Predicate_GE: docdb.PredGE,
	pb.Predicate_IS_NULL: docdb.PredIsNull, pb.Predicate_IS_NOT_NULL: docdb.PredIsNotNull, pb.Predicate_IN: docdb.PredIn,
}

var aggKinds = map[pb.Aggregate_Kind]docdb.AggKind{
	pb.Aggregate_COUNT_STAR: docdb.AggCountStar, pb.Aggregate_COUNT: docdb.AggCount, pb.Aggregate_SUM: docdb.AggSum,
	pb.Aggregate_MIN: docdb.AggMin, pb.Aggregate_MAX: docdb.AggMax,
}

// PredFromWire converts and validates a wire predicate.
func PredFromWire(p *pb.Predicate) (*docdb.Pred, error) {
	out, err := predFromWire(p, 0)
	if err != nil {
		return nil, err
	}
	return out, out.Validate()
}

func predFromWire(p *pb.Predicate, depth int) (*docdb.Pred, error) {
	if depth > 64 {
		return nil, fmt.Errorf("%w: predicate nested too deep", docdb.ErrInvalidPushdown)
	}
	op, ok := predOps[p.GetOp()]
	if !ok {
		return nil, fmt.Errorf("%w: predicate operator %v", docdb.ErrInvalidPushdown, p.GetOp())
	}
	out := &docdb.Pred{Op: op, Col: p.GetColumnId()}
	for _, a := range p.GetArgs() {
		arg, err := predFromWire(a, depth+1)
		if err != nil {
			return nil, err
		}
		out.Args = append(out.Args, arg)
	}
	for _, raw := range p.GetValues() {
		v, err := docdb.DecodeValue(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: predicate constant: %v", docdb.ErrInvalidPushdown, err)
		}
		out.Vals = append(out.Vals, v)
	}
	return out, nil
}

// AggregatesFromWire converts wire aggregates.
func AggregatesFromWire(aggs []*pb.Aggregate) ([]docdb.AggSpec, error) {
	out := make([]docdb.AggSpec, 0, len(aggs))
	for _, a := range aggs {
		k, ok := aggKinds[a.GetKind()]
		if !ok {
			return nil, fmt.Errorf("%w: aggregate kind %v", docdb.ErrInvalidPushdown, a.GetKind())
		}
		out = append(out, docdb.AggSpec{Kind: k, Col: a.GetColumnId()})
	}
	return out, nil
}

// pushdownOf fills the pushdown parts of a scan's options from the request.
func pushdownOf(req *pb.ScanRequest, opts *tablet.ScanOptions) error {
	if req.GetFilter() != nil {
		f, err := PredFromWire(req.GetFilter())
		if err != nil {
			return err
		}
		opts.Filter = f
	}
	if len(req.GetAggregates()) > 0 {
		aggs, err := AggregatesFromWire(req.GetAggregates())
		if err != nil {
			return err
		}
		opts.Aggregates = aggs
	}
	if ids := req.GetGroupByColumnIds(); len(ids) > 0 {
		opts.GroupBy = ids
		opts.MaxGroups = int(req.GetMaxGroups())
		if opts.MaxGroups == 0 {
			opts.MaxGroups = DefaultMaxGroups
		}
	}
	if opts.Filter != nil || opts.IsAggregate() {
		opts.KeyColumns = req.GetKeyColumnIds()
		opts.MaxRows = int(req.GetMaxScanRows())
		if opts.MaxRows == 0 {
			opts.MaxRows = DefaultMaxScanRows
		}
	}
	return nil
}
