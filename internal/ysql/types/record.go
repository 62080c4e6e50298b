package types

import (
	"strings"
	"sync"
	"time"
)

// OIDRecord is the pseudo-type record. An anonymous record's fields are
// registered once per shape and named by its T's Mod, as PostgreSQL
// "blesses" record typmods; its Datum.A holds the field values.
const OIDRecord uint32 = 2249

var recordShapes struct {
	sync.Mutex
	names [][]string
	types [][]T
}

// RecordType returns the record type of fields names with types ts.
func RecordType(names []string, ts []T) T {
	recordShapes.Lock()
	defer recordShapes.Unlock()
next:
	for i, sh := range recordShapes.names {
		if len(sh) != len(names) {
			continue
		}
		for j := range sh {
			if sh[j] != names[j] || recordShapes.types[i][j] != ts[j] {
				continue next
			}
		}
		return T{OID: OIDRecord, Mod: int32(i)}
	}
	recordShapes.names = append(recordShapes.names, names)
	recordShapes.types = append(recordShapes.types, ts)
	return T{OID: OIDRecord, Mod: int32(len(recordShapes.names) - 1)}
}

// RecordFields returns the field names and types of a record type (nil
// for any other type).
func RecordFields(t T) ([]string, []T) {
	recordShapes.Lock()
	defer recordShapes.Unlock()
	if t.OID != OIDRecord || t.Mod < 0 || int(t.Mod) >= len(recordShapes.names) {
		return nil, nil
	}
	return recordShapes.names[t.Mod], recordShapes.types[t.Mod]
}

// appendRecordText prints a record as record_out does: (1,x,), fields
// quoted when empty or holding quotes, backslashes, parentheses, commas
// or white space (quotes and backslashes doubled), NULL as nothing.
func appendRecordText(buf []byte, d Datum, t T, loc *time.Location) []byte {
	_, ts := RecordFields(t)
	buf = append(buf, '(')
	var scratch []byte
	for i, f := range d.A {
		if i > 0 {
			buf = append(buf, ',')
		}
		if f.Null || i >= len(ts) {
			continue
		}
		scratch = AppendText(scratch[:0], f, ts[i], loc)
		if len(scratch) > 0 && !strings.ContainsAny(string(scratch), "\"\\(), \t\n\r\v\f") {
			buf = append(buf, scratch...)
			continue
		}
		buf = append(buf, '"')
		for _, c := range scratch {
			if c == '"' || c == '\\' {
				buf = append(buf, c)
			}
			buf = append(buf, c)
		}
		buf = append(buf, '"')
	}
	return append(buf, ')')
}
