// Package pgerror is the error type of the YSQL layer: a PostgreSQL error
// with its SQLSTATE, message, detail, hint and cursor position, as the wire
// protocol's ErrorResponse carries it. Every layer of YSQL (parse, bind,
// plan, execute) returns these so that the client sees the code PostgreSQL
// would have sent.
package pgerror

import (
	"errors"
	"fmt"
)

// SQLSTATE codes used by YSQL (PostgreSQL's Appendix A).
const (
	CodeSuccessfulCompletion         = "00000"
	CodeWarning                      = "01000"
	CodeFeatureNotSupported          = "0A000"
	CodeInvalidTransactionState      = "25000"
	CodeActiveSQLTransaction         = "25001"
	CodeNoActiveSQLTransaction       = "25P01"
	CodeInFailedSQLTransaction       = "25P02"
	CodeReadOnlySQLTransaction       = "25006"
	CodeInvalidSavepointSpec         = "3B001"
	CodeSerializationFailure         = "40001"
	CodeDeadlockDetected             = "40P01"
	CodeLockNotAvailable             = "55P03"
	CodeSyntaxError                  = "42601"
	CodeUndefinedTable               = "42P01"
	CodeUndefinedColumn              = "42703"
	CodeUndefinedFunction            = "42883"
	CodeUndefinedObject              = "42704"
	CodeUndefinedParameter           = "42P02"
	CodeInvalidSchemaName            = "3F000"
	CodeInvalidName                  = "42602"
	CodeInvalidCatalogName           = "3D000"
	CodeDuplicateTable               = "42P07"
	CodeDuplicateColumn              = "42701"
	CodeDuplicateObject              = "42710"
	CodeDuplicateSchema              = "42P06"
	CodeDuplicateDatabase            = "42P04"
	CodeDuplicatePreparedStatement   = "42P05"
	CodeDuplicateCursor              = "42P03"
	CodeDuplicateAlias               = "42712"
	CodeAmbiguousColumn              = "42702"
	CodeAmbiguousFunction            = "42725"
	CodeGroupingError                = "42803"
	CodeDatatypeMismatch             = "42804"
	CodeInvalidForeignKey            = "42830"
	CodeWrongObjectType              = "42809"
	CodeInvalidColumnReference       = "42P10"
	CodeInvalidTableDefinition       = "42P16"
	CodeInvalidObjectDefinition      = "42P17"
	CodeIndeterminateDatatype        = "42P18"
	CodeInvalidRecursion             = "42P19"
	CodeWindowingError               = "42P20"
	CodeUndefinedPreparedStatement   = "26000"
	CodeInvalidCursorName            = "34000"
	CodeInvalidCursorState           = "24000"
	CodeSnapshotTooOld               = "72000"
	CodeInvalidParameterValue        = "22023"
	CodeInvalidTextRepresentation    = "22P02"
	CodeInvalidBinaryRepresentation  = "22P03"
	CodeInvalidDatetimeFormat        = "22007"
	CodeDatetimeFieldOverflow        = "22008"
	CodeInvalidTimeZoneDisplacement  = "22009"
	CodeStringDataRightTruncation    = "22001"
	CodeNumericValueOutOfRange       = "22003"
	CodeDivisionByZero               = "22012"
	CodeInvalidEscapeSequence        = "22025"
	CodeNullValueNotAllowed          = "22004"
	CodeInvalidPrecedingOrFollowing  = "22013"
	CodeInvalidArgumentForNtile      = "22014"
	CodeInvalidArgumentForNthValue   = "22016"
	CodeCardinalityViolation         = "21000"
	CodeCharacterNotInRepertoire     = "22021"
	CodeUntranslatableCharacter      = "22P05"
	CodeInvalidJSONText              = "22P02"
	CodeProgramLimitExceeded         = "54000"
	CodeStatementTooComplex          = "54001"
	CodeTooManyColumns               = "54011"
	CodeDataException                = "22000"
	CodeIntegrityConstraintViolation = "23000"
	CodeNotNullViolation             = "23502"
	CodeForeignKeyViolation          = "23503"
	CodeUniqueViolation              = "23505"
	CodeCheckViolation               = "23514"
	CodeQueryCanceled                = "57014"
	CodeAdminShutdown                = "57P01"
	CodeProtocolViolation            = "08P01"
	CodeConnectionFailure            = "08006"
	CodeInsufficientPrivilege        = "42501"
	CodeObjectNotInPrerequisiteState = "55000"
	CodeObjectInUse                  = "55006"
	CodeDependentObjectsStillExist   = "2BP01"
	CodeInvalidAuthorizationSpec     = "28000"
	CodeTooManyConnections           = "53300"
	CodeOutOfMemory                  = "53200"
	CodeDiskFull                     = "53100"
	CodeInternalError                = "XX000"
)

// Severity of an error or notice, as PostgreSQL spells it.
const (
	SeverityError  = "ERROR"
	SeverityFatal  = "FATAL"
	SeverityNotice = "NOTICE"
)

// Error is a PostgreSQL error.
type Error struct {
	Severity string // ERROR when empty
	Code     string
	Message  string
	Detail   string
	Hint     string
	// Position is the 1-based character offset in the query text the error
	// points at; 0 when none.
	Position int32
	// Constraint, Table and Column name the object of an integrity error.
	Constraint string
	Table      string
	Column     string
	cause      error
}

func (e *Error) Error() string {
	if e.Detail != "" {
		return e.Message + " (" + e.Detail + ")"
	}
	return e.Message
}

// Unwrap returns the error this one was made from, if any.
func (e *Error) Unwrap() error { return e.cause }

// New returns an error with the given code and message.
func New(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithDetail sets the detail and returns e.
func (e *Error) WithDetail(format string, args ...any) *Error {
	e.Detail = fmt.Sprintf(format, args...)
	return e
}

// WithHint sets the hint and returns e.
func (e *Error) WithHint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
}

// WithPosition sets the 1-based cursor position and returns e.
func (e *Error) WithPosition(pos int32) *Error {
	e.Position = pos
	return e
}

// Wrap returns an error with the given code whose message is err's, keeping
// err as the cause.
func Wrap(code string, err error) *Error {
	return &Error{Code: code, Message: err.Error(), cause: err}
}

// Unsupported returns a 0A000 error naming the feature.
func Unsupported(feature string) *Error {
	return New(CodeFeatureNotSupported, "%s is not supported", feature)
}

// Translator maps an error from a lower layer (the client, transactions) to
// a PostgreSQL error; registered by the packages that know those errors so
// this package depends on none of them.
var translators []func(error) *Error

// RegisterTranslator adds a translator consulted by From, in order.
func RegisterTranslator(f func(error) *Error) { translators = append(translators, f) }

// From returns err as a PostgreSQL error: err itself when it is one (or
// wraps one), a translated error when a registered translator knows it, and
// XX000 otherwise.
func From(err error) *Error {
	if err == nil {
		return nil
	}
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	for _, t := range translators {
		if pe := t(err); pe != nil {
			return pe
		}
	}
	return Wrap(CodeInternalError, err)
}

// Code returns the SQLSTATE of err (XX000 for errors that are not
// PostgreSQL errors, "" for nil).
func Code(err error) string {
	if err == nil {
		return ""
	}
	return From(err).Code
}

// More SQLSTATE codes.
const (
	CodeCannotCoerce                  = "42846"
	CodeGeneratedAlways               = "428C9"
	CodeInvalidRowCountInLimit        = "2201W"
	CodeInvalidRowCountInResultOffset = "2201X"
	CodeCantChangeRuntimeParam        = "55P02"
)

// CodeBadCopyFileFormat is a malformed COPY input line.
const CodeBadCopyFileFormat = "22P04"

// CodeSequenceGeneratorLimitExceeded is nextval past the sequence's bound.
const CodeSequenceGeneratorLimitExceeded = "2200H"
