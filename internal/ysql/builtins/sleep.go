package builtins

import (
	"math"
	"time"

	"github.com/shaledb/shaledb/internal/ysql/types"
)

// pg_sleep and its interval and timestamptz forms. They wait on the
// statement's context, so statement_timeout and a CancelRequest end them
// (57014, as the context's error translates); they return void.

func init() {
	addFn("pg_sleep", args(tF8), types.TVoid, func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		return sleepFor(ctx, a[0].F)
	}).Volatile = true
	// pg_sleep_for and pg_sleep_until are SQL functions over pg_sleep in
	// PostgreSQL: the seconds from now to now + interval, or to the time.
	addFn("pg_sleep_for", args(tIv), types.TVoid, func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		now := tsDatum(time.Now()).I
		end, err := tsPlusInterval(now, a[0].Iv, ctx.loc())
		if err != nil {
			return types.NullDatum, err
		}
		return sleepFor(ctx, float64(end-now)/1e6)
	}).Volatile = true
	addFn("pg_sleep_until", args(tTSTZ), types.TVoid, func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		secs := math.Inf(1)
		switch a[0].I {
		case types.TimestampNegInfinity:
			secs = math.Inf(-1)
		case types.TimestampPosInfinity:
		default:
			secs = float64(a[0].I-tsDatum(time.Now()).I) / 1e6
		}
		return sleepFor(ctx, secs)
	}).Volatile = true
}

// sleepFor waits secs seconds (none when not positive or NaN, until the
// statement ends when infinite).
func sleepFor(ctx *EvalContext, secs float64) (types.Datum, error) {
	void := types.DString("")
	if !(secs > 0) {
		return void, nil
	}
	c := ctx.context()
	var expired <-chan time.Time
	if secs < float64(math.MaxInt64/int64(time.Second)) {
		t := time.NewTimer(time.Duration(secs * float64(time.Second)))
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-expired:
		return void, nil
	case <-c.Done():
		return types.NullDatum, c.Err()
	}
}
