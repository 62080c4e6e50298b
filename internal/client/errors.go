package client

import (
	"errors"
	"fmt"
)

// Code classifies an Error.
type Code int

// Codes of Error.
const (
	// CodeInternal: an unexpected failure.
	CodeInternal Code = iota
	// CodeInvalidArgument: bad input (unknown column, missing key column,
	// wrong value type, a request the server refused as malformed);
	// retrying cannot help.
	CodeInvalidArgument
	// CodeTableNotFound: no such table, or it was dropped while in use.
	CodeTableNotFound
	// CodeTimeout: the deadline passed and the operation did not take
	// effect (a read, or a write known not to have been applied).
	CodeTimeout
	// CodeAmbiguous: the deadline passed after a write attempt whose
	// outcome is unknown; it may or may not have been applied.
	CodeAmbiguous
	// CodeTxnConflict: a transaction met a conflicting one, or a newer
	// committed version of what it writes (serialization failure,
	// SQLSTATE 40001). Retry the whole transaction.
	CodeTxnConflict
	// CodeDeadlock: the transaction was aborted to break a deadlock
	// (40P01). Retry the whole transaction.
	CodeDeadlock
	// CodeLockNotAvailable: NOWAIT met a lock (55P03).
	CodeLockNotAvailable
	// CodeTxnAborted: the transaction was aborted (its record expired, or
	// it was a deadlock victim elsewhere); retry it (40001).
	CodeTxnAborted
	// CodeReadRestart: a read found a value in the clock uncertainty
	// window after the transaction had fixed its read time; retry the
	// transaction (40001).
	CodeReadRestart
	// CodeDuplicateKey: an OpInsert met a row that exists (23505); its
	// Err is a *DuplicateKeyError naming the op (DuplicateIndex). Nothing
	// of that op's tablet batch was written.
	CodeDuplicateKey
	// CodeOutOfRange: an OpAdd's sum does not fit its column's type
	// (22003); its Err is an *OutOfRangeError naming the column. Nothing of
	// that op's tablet batch was written.
	CodeOutOfRange
	// CodeReadTooOld: the read time is older than the tablets' history
	// retention window, whose versions may be gone (a cursor left open
	// for longer than the window): PostgreSQL's "snapshot too old" (72000).
	CodeReadTooOld
	// CodeTooLarge: a row is larger than MaxRowBytes (54000); nothing of
	// the write was sent.
	CodeTooLarge
)

var codeNames = [...]string{"INTERNAL", "INVALID_ARGUMENT", "TABLE_NOT_FOUND", "TIMEOUT", "AMBIGUOUS",
	"TXN_CONFLICT", "DEADLOCK", "LOCK_NOT_AVAILABLE", "TXN_ABORTED", "READ_RESTART", "DUPLICATE_KEY", "OUT_OF_RANGE", "READ_TOO_OLD", "TOO_LARGE"}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", int(c))
}

// Error is the error of a data operation. Err, when set, is the last
// underlying failure (a server's answer or a transport error).
type Error struct {
	Code    Code
	Op      string // "put", "get", "scan", …
	Table   string // namespace.name
	Message string
	Err     error
}

func (e *Error) Error() string {
	s := "client: "
	if e.Op != "" {
		s += e.Op + " "
	}
	if e.Table != "" {
		s += e.Table + " "
	}
	s += e.Code.String()
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// CodeOf returns the Code of err's *Error, and false if it has none.
func CodeOf(err error) (Code, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Code, true
	}
	return 0, false
}

func hasCode(err error, c Code) bool {
	got, ok := CodeOf(err)
	return ok && got == c
}

// IsAmbiguous reports whether err is a write whose outcome is unknown.
func IsAmbiguous(err error) bool { return hasCode(err, CodeAmbiguous) }

// IsRetryable reports whether err asks to retry the whole transaction
// (serialization failure, deadlock, aborted, read restart).
func IsRetryable(err error) bool {
	c, ok := CodeOf(err)
	return ok && (c == CodeTxnConflict || c == CodeDeadlock || c == CodeTxnAborted || c == CodeReadRestart)
}

// SQLState is the PostgreSQL error code of a transaction error ("" for
// others).
func SQLState(err error) string {
	c, _ := CodeOf(err)
	switch c {
	case CodeTxnConflict, CodeTxnAborted, CodeReadRestart:
		return "40001"
	case CodeDeadlock:
		return "40P01"
	case CodeLockNotAvailable:
		return "55P03"
	case CodeDuplicateKey:
		return "23505"
	case CodeOutOfRange:
		return "22003"
	case CodeReadTooOld:
		return "72000"
	case CodeTooLarge:
		return "54000"
	}
	return ""
}

// IsTimeout reports whether err is a deadline that passed with the
// operation known not to have taken effect.
func IsTimeout(err error) bool { return hasCode(err, CodeTimeout) }

// IsInvalidArgument reports whether err is bad input.
func IsInvalidArgument(err error) bool { return hasCode(err, CodeInvalidArgument) }

// IsTableNotFound reports whether err names a missing (or dropped) table.
func IsTableNotFound(err error) bool { return hasCode(err, CodeTableNotFound) }

func invalidf(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf(format, args...)}
}

// OutOfRangeError is the Err of CodeOutOfRange: the column (its id) whose
// sum does not fit.
type OutOfRangeError struct {
	Column uint32
	cause  error // the server's answer
}

func (e *OutOfRangeError) Error() string {
	return fmt.Sprintf("column %d: sum out of range: %v", e.Column, e.cause)
}

func (e *OutOfRangeError) Unwrap() error { return e.cause }
