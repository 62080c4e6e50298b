package exec

import (
	"strings"
	"time"

	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// decodeParam decodes a Bind parameter in its wire format.
func decodeParam(b []byte, format int16, t types.T, loc *time.Location) (types.Datum, error) {
	if format == 1 {
		d, err := types.DecodeBinary(b, t)
		if err != nil {
			return d, pgerror.New(pgerror.CodeInvalidBinaryRepresentation, "incorrect binary data format in bind parameter").WithDetail("%v", err)
		}
		return d, nil
	}
	return types.ParseText(string(b), t, loc)
}

// encodeResult encodes a result value in the requested format.
func encodeResult(d types.Datum, t types.T, format int16, loc *time.Location, s *Session) ([]byte, error) {
	if format == 1 {
		return types.EncodeBinary(d, t)
	}
	if types.IsReg(t.OID) && s != nil && !d.Null {
		return []byte(s.RegOut(t, uint32(d.I))), nil
	}
	if t.Family() == types.FamFloat && s != nil && !d.Null {
		// extra_float_digits 0 and below print fewer digits (they were
		// ignored: a client asking for 15 digits got 17).
		if efd := s.settingsNow().floatEFD; efd <= 0 {
			bits := 64
			if t.OID == types.OIDFloat4 {
				bits = 32
			}
			return types.AppendFloatDigits(nil, d.F, bits, efd), nil
		}
	}
	return types.AppendText(nil, d, t, loc), nil
}

// castDatum converts a value for an EXECUTE parameter.
func castDatum(d types.Datum, from, to types.T, loc *time.Location) (types.Datum, error) {
	return plan.Coerce(d, from, to, loc)
}

func (s *Session) formatDatum(d types.Datum, t types.T) string {
	if d.Null {
		return "null"
	}
	return types.FormatText(d, t, s.location())
}

// formatRow renders a row for error details: "(1, abc, null)".
func (s *Session) formatRow(t *catalog.Table, row plan.Row) string {
	var parts []string
	for i, c := range t.Columns {
		if c.Hidden {
			continue
		}
		parts = append(parts, s.formatDatum(row[i], c.Type))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
