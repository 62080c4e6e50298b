package builtins

import (
	"context"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// PostgreSQL's advisory lock functions. Their signatures live here, so
// that calls resolve (and their arguments convert) as any function's; the
// locking is the session's (EvalContext.Advisory).

// AdvisoryKey is PostgreSQL's lock tag of an advisory lock (as pg_locks
// shows it): a bigint key is its high and low 32 bits with ObjSubID 1, two
// int keys are themselves with ObjSubID 2, so lock(1) and lock(0, 1) are
// two locks.
type AdvisoryKey struct {
	ClassID, ObjID uint32
	ObjSubID       int16
}

// AdvisoryRequest is one advisory lock call.
type AdvisoryRequest struct {
	Key       AdvisoryKey
	Shared    bool
	Xact      bool // transaction level (else session level)
	Try       bool // answer false at once rather than wait
	Unlock    bool
	UnlockAll bool // pg_advisory_unlock_all (Key unused)
}

// Advisory takes and releases advisory locks: true when taken (released),
// false when a Try found the lock taken (an unlock found it not held).
type Advisory interface {
	AdvisoryLock(ctx context.Context, r AdvisoryRequest) (bool, error)
}

func init() {
	void := types.DString("")
	for _, f := range []struct {
		name string
		req  AdvisoryRequest
		res  types.T
	}{
		{"pg_advisory_lock", AdvisoryRequest{}, types.TVoid},
		{"pg_advisory_lock_shared", AdvisoryRequest{Shared: true}, types.TVoid},
		{"pg_try_advisory_lock", AdvisoryRequest{Try: true}, types.TBool},
		{"pg_try_advisory_lock_shared", AdvisoryRequest{Try: true, Shared: true}, types.TBool},
		{"pg_advisory_unlock", AdvisoryRequest{Unlock: true}, types.TBool},
		{"pg_advisory_unlock_shared", AdvisoryRequest{Unlock: true, Shared: true}, types.TBool},
		{"pg_advisory_xact_lock", AdvisoryRequest{Xact: true}, types.TVoid},
		{"pg_advisory_xact_lock_shared", AdvisoryRequest{Xact: true, Shared: true}, types.TVoid},
		{"pg_try_advisory_xact_lock", AdvisoryRequest{Xact: true, Try: true}, types.TBool},
		{"pg_try_advisory_xact_lock_shared", AdvisoryRequest{Xact: true, Try: true, Shared: true}, types.TBool},
	} {
		call := func(ctx *EvalContext, req AdvisoryRequest) (types.Datum, error) {
			if ctx == nil || ctx.Advisory == nil {
				return types.NullDatum, pgerror.New(pgerror.CodeFeatureNotSupported, "%s cannot be called here", f.name)
			}
			ok, err := ctx.Advisory.AdvisoryLock(ctx.context(), req)
			if err != nil || f.res == types.TVoid {
				return void, err
			}
			return types.DBool(ok), nil
		}
		addFn(f.name, args(tI8), f.res, func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
			req := f.req
			req.Key = AdvisoryKey{ClassID: uint32(uint64(a[0].I) >> 32), ObjID: uint32(a[0].I), ObjSubID: 1}
			return call(ctx, req)
		}).Volatile = true
		addFn(f.name, args(tI4, tI4), f.res, func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
			req := f.req
			req.Key = AdvisoryKey{ClassID: uint32(a[0].I), ObjID: uint32(a[1].I), ObjSubID: 2}
			return call(ctx, req)
		}).Volatile = true
	}
	addFn("pg_advisory_unlock_all", nil, types.TVoid, func(ctx *EvalContext, _ []types.Datum) (types.Datum, error) {
		if ctx == nil || ctx.Advisory == nil {
			return types.NullDatum, pgerror.New(pgerror.CodeFeatureNotSupported, "pg_advisory_unlock_all cannot be called here")
		}
		_, err := ctx.Advisory.AdvisoryLock(ctx.context(), AdvisoryRequest{UnlockAll: true})
		return types.DString(""), err
	}).Volatile = true
}
