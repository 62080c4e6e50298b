package tablet

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// Scan pushdown: filters and partial aggregates evaluated next to the data
// (docdb.Pred, docdb.Aggregator). A scan with a filter returns only the
// qualifying rows, and its Limit counts those; MaxRows bounds the rows it
// examines, so a page that finds few qualifying rows still ends, with a
// resume key. An aggregate read returns one partial result per aggregate
// over the rows of the page instead of the rows; with group columns, one
// partial row per group of the page (MaxGroups bounds them, so the page's
// memory stays bounded too).

var errAggregatesInScan = fmt.Errorf("%w: aggregates in a row scan", docdb.ErrInvalidPushdown)

// docdb returns the DocDB scan of these options over span at read time at,
// feeding agg (if not nil).
func (o *ScanOptions) docdb(span storage.Span, at hlc.Timestamp, unc *docdb.Uncertainty, agg *docdb.Aggregator) docdb.ScanOptions {
	return docdb.ScanOptions{
		ReadOptions: docdb.ReadOptions{ReadTime: at, Columns: o.Columns, Uncertainty: unc},
		Span:        span, Limit: o.Limit, Reverse: o.Reverse,
		Filter: o.Filter, Aggregator: agg, KeyColumns: o.KeyColumns, MaxRows: o.MaxRows, MaxGroups: o.MaxGroups,
		MaxBytes: ScanPageBytes,
	}
}

// ScanPageBytes bounds a scan page by the size of its rows (the client
// asks for the next page): a thousand rows of 100 KB each made a page
// larger than an RPC message may be, and the scan failed on every retry.
// With rows of at most client.MaxRowBytes a page stays well within it.
const ScanPageBytes = 8 << 20

// checkScan validates the pushdown parts of a row scan.
func (o *ScanOptions) checkScan() error {
	if o.IsAggregate() {
		return errAggregatesInScan
	}
	if o.Filter != nil {
		return o.Filter.Validate()
	}
	return nil
}

// checkAggregate validates the pushdown parts of an aggregate read.
func (o *ScanOptions) checkAggregate() error {
	if !o.IsAggregate() {
		return fmt.Errorf("%w: no aggregates", docdb.ErrInvalidPushdown)
	}
	if o.Limit != 0 {
		return fmt.Errorf("%w: a limit with aggregates", docdb.ErrInvalidPushdown)
	}
	if o.Filter != nil {
		return o.Filter.Validate()
	}
	return nil
}

// IsAggregate reports whether the options ask for aggregates (or groups)
// rather than rows.
func (o *ScanOptions) IsAggregate() bool { return len(o.Aggregates) > 0 || len(o.GroupBy) > 0 }

// aggregate runs the aggregates of o over span at time at; bounded, the
// page stops at o.MaxRows rows examined or o.MaxGroups groups.
func (t *Tablet) aggregate(r pebble.Reader, o *ScanOptions, span storage.Span, at hlc.Timestamp, unc *docdb.Uncertainty, bounded bool) ([]docdb.Value, []byte, error) {
	agg, err := docdb.NewGroupAggregator(o.GroupBy, o.Aggregates)
	if err != nil {
		return nil, nil, err
	}
	so := o.docdb(span, at, unc, agg)
	if !bounded {
		so.MaxRows, so.MaxGroups = 0, 0
	}
	_, resume, err := docdb.Scan(r, so)
	if err != nil {
		return nil, nil, err
	}
	return agg.Results(), resume, nil
}

// AggregateTxn computes opts.Aggregates over the rows of opts.Span that
// opts.Filter qualifies, as ScanTxn reads them: it returns the partial
// results (docdb.Aggregator.Results: one partial row per group with
// opts.GroupBy), the resume key (nil when the span is done; see
// docdb.Scan) and the read time. opts.Limit must be 0.
//
// The read-uncertainty check compares the aggregates at the read time and
// at the uncertainty limit over the rows the page examined: a write in the
// window that changes them restarts the read (or fails with
// *ReadRestartError); one that does not leaves the page's answer valid
// either way.
func (t *Tablet) AggregateTxn(ctx context.Context, opts ScanOptions, o TxnRead) ([]docdb.Value, []byte, hlc.Timestamp, error) {
	if err := opts.checkAggregate(); err != nil {
		return nil, nil, 0, err
	}
	span := clip(opts.Span, t.desc.Span)
	var results []docdb.Value
	var resume []byte
	rt, err := t.readTxn(ctx, span, o, opts.intentWindow(), func() (func(), error) {
		return t.latches.acquireSpan(ctx, span)
	}, func(rv readView, at hlc.Timestamp, unc *docdb.Uncertainty) error {
		var err error
		results, resume, err = t.aggregate(rv.r, &opts, rv.span, at, unc, true)
		resume = rv.resume(span, resume)
		return err
	}, func(rv readView, limit hlc.Timestamp) (hlc.Timestamp, bool, error) {
		rs, _, err := t.aggregate(rv.r, &opts, examinedSpan(rv.span, resume, opts.Reverse), limit, nil, false)
		if err != nil {
			return 0, false, err
		}
		return 0, !sameValues(rs, results), nil
	})
	return results, resume, rt, err
}

// FollowerAggregate is AggregateTxn at this replica at a safe point (see
// FollowerGet).
func (t *Tablet) FollowerAggregate(ctx context.Context, opts ScanOptions, sp SafePoint) ([]docdb.Value, []byte, hlc.Timestamp, error) {
	if err := opts.checkAggregate(); err != nil {
		return nil, nil, 0, err
	}
	rt, err := t.followerReadTime(ctx, sp, opts.ReadTime)
	if err != nil {
		return nil, nil, 0, err
	}
	span := clip(opts.Span, t.desc.Span)
	if err := t.noIntentsFor(span); err != nil {
		return nil, nil, 0, err
	}
	results, resume, err := t.aggregate(t.eng, &opts, span, rt, nil, true)
	return results, resume, rt, err
}

// examinedSpan is the part of span a scan that stopped at resume (nil: at
// the end) looked at.
func examinedSpan(span storage.Span, resume []byte, reverse bool) storage.Span {
	if resume == nil {
		return span
	}
	rest := docdb.ResumeSpan(span, resume, reverse)
	if reverse {
		return storage.Span{Start: rest.End, End: span.End}
	}
	return storage.Span{Start: span.Start, End: rest.Start}
}

// sameRows reports whether two reads returned the same rows (keys, write
// times and column values), as rowSignature would tell, without building
// strings: a scan compares its pages at the read time and at the
// uncertainty limit.
func sameRows(a, b []docdb.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.WriteTime != y.WriteTime || !bytes.Equal(x.Key, y.Key) || len(x.Columns) != len(y.Columns) {
			return false
		}
		for j := range x.Columns {
			cx, cy := x.Columns[j], y.Columns[j]
			if cx.ID != cy.ID || cx.Value.Type != cy.Value.Type || !bytes.Equal(docdb.AppendValue(nil, cx.Value), docdb.AppendValue(nil, cy.Value)) {
				return false
			}
		}
	}
	return true
}

func sameValues(a, b []docdb.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || !bytes.Equal(docdb.AppendValue(nil, a[i]), docdb.AppendValue(nil, b[i])) {
			return false
		}
	}
	return true
}

// IsInvalidPushdown reports whether err is a malformed or unfitting
// filter or aggregate (the caller's mistake).
func IsInvalidPushdown(err error) bool { return errors.Is(err, docdb.ErrInvalidPushdown) }
