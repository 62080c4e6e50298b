// Package builtins holds YSQL's operators, functions and aggregates with
// PostgreSQL's signatures, result types and errors, and resolves a call
// against them as PostgreSQL's func_select_candidate does (simplified).
//
// Operators and functions are strict unless said otherwise: the caller
// returns NULL without calling Eval when an argument is NULL. Before
// calling Eval the caller converts each argument to the declared type of
// the resolved candidate (types.Coerce with CastImplicit; an unknown-typed
// literal through the type's input function).
package builtins

import (
	"context"
	"math/rand"
	"sync"
	"time"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// EvalContext carries what evaluation needs from the session and the
// transaction.
type EvalContext struct {
	// TxnTime is now(), current_timestamp, current_date and
	// transaction_timestamp(): the start of the transaction.
	TxnTime time.Time
	// StmtTime is statement_timestamp().
	StmtTime time.Time
	// Clock is clock_timestamp(); time.Now when nil.
	Clock func() time.Time
	// Loc is the session's TimeZone; UTC when nil.
	Loc *time.Location
	// Rand is random()'s source; a shared locked source when nil.
	Rand *rand.Rand
	// Ctx is the statement's context (ends at statement_timeout or a
	// cancel); nil: context.Background.
	Ctx func() context.Context
	// Advisory takes the advisory locks of pg_advisory_lock and its
	// family (the session; nil where statements do not run).
	Advisory Advisory
	// Backends signals the node's sessions (pg_cancel_backend,
	// pg_terminate_backend; nil where statements do not run).
	Backends Backends
}

// Backends cancels a session's running statement, or ends the session
// (terminate), by its pid: false when no session of the node has it.
type Backends interface {
	SignalBackend(pid int64, terminate bool) bool
}

func init() {
	signal := func(name string, terminate bool) func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		return func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
			if ctx == nil || ctx.Backends == nil {
				return types.NullDatum, pgerror.New(pgerror.CodeFeatureNotSupported, "%s cannot be called here", name)
			}
			return types.DBool(ctx.Backends.SignalBackend(a[0].I, terminate)), nil
		}
	}
	addFn("pg_cancel_backend", args(tI4), types.TBool, signal("pg_cancel_backend", false)).Volatile = true
	addFn("pg_terminate_backend", args(tI4), types.TBool, signal("pg_terminate_backend", true)).Volatile = true
	// The timeout (PostgreSQL 14) is not waited for: the connection ends
	// once its statement stops.
	addFn("pg_terminate_backend", args(tI4, tI8), types.TBool, signal("pg_terminate_backend", true)).Volatile = true
}

func (c *EvalContext) context() context.Context {
	if c == nil || c.Ctx == nil {
		return context.Background()
	}
	return c.Ctx()
}

func (c *EvalContext) loc() *time.Location {
	if c == nil || c.Loc == nil {
		return time.UTC
	}
	return c.Loc
}

var (
	globalRandMu sync.Mutex
	globalRand   = rand.New(rand.NewSource(time.Now().UnixNano()))
)

func (c *EvalContext) random() float64 {
	if c != nil && c.Rand != nil {
		return c.Rand.Float64()
	}
	globalRandMu.Lock()
	defer globalRandMu.Unlock()
	return globalRand.Float64()
}

// EvalFunc evaluates an operator or function on non-NULL arguments of the
// declared types (for non-strict functions, arguments may be NULL).
type EvalFunc func(ctx *EvalContext, args []types.Datum) (types.Datum, error)

// Op is an operator. Left is types.T{} (OID 0) for a prefix operator.
type Op struct {
	Name        string
	Left, Right types.T
	Result      types.T
	Eval        EvalFunc
}

// Func is a function. Variadic functions (concat) take any number of
// arguments of any type after the fixed ones: their Args hold the fixed
// part and VariadicAny is set; such arguments are passed with their own
// types in ArgTypes at call time (see EvalVariadic).
type Func struct {
	Name        string
	Args        []types.T
	Result      types.T
	VariadicAny bool
	// Strict is false for functions that see NULL arguments (concat).
	Strict bool
	// Volatile functions (random, clock_timestamp, gen_random_uuid) must
	// not be folded at plan time.
	Volatile bool
	// Stable functions (now, current_date: they read the transaction's
	// time) are not folded at plan time either, but are the same for
	// every row of a statement.
	Stable bool
	Eval   EvalFunc
	// EvalVariadic is Eval for VariadicAny functions: it also gets the
	// arguments' types.
	EvalVariadic func(ctx *EvalContext, args []types.Datum, argTypes []types.T) (types.Datum, error)
	// Check, when set, vets a VariadicAny call's argument types at
	// resolution (a polymorphic function that takes only some types).
	Check func(argTypes []types.T) error
}

var (
	t16    = types.TBool
	tI2    = types.TInt2
	tI4    = types.TInt4
	tI8    = types.TInt8
	tF4    = types.TFloat4
	tF8    = types.TFloat8
	tNum   = types.TNumeric
	tText  = types.TText
	tBP    = types.TBPChar
	tName  = types.TName
	tChar  = types.TChar
	tBytea = types.TBytea
	tDate  = types.TDate
	tTime  = types.TTime
	tTS    = types.TTimestamp
	tTSTZ  = types.TTimestampTZ
	tIv    = types.TInterval
	tUUID  = types.TUUID
	tJSON  = types.TJSON
	tJSONB = types.TJSONB
	tOID   = types.TOID
)
