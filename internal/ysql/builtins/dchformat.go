package builtins

import (
	"strconv"
	"strings"
)

// The datetime template patterns of to_char, to_date and to_timestamp, as
// PostgreSQL's formatting.c reads them (DCH_keywords): one table read into
// nodes by parseDCH, which toChar writes (format.go) and toTimestamp reads
// (totimestamp.go).

type dchPat uint8

const (
	dchADDots dchPat = iota // A.D. B.C.
	dchAD                   // AD BC
	dchAMDots               // A.M. P.M.
	dchAM                   // AM PM
	dchCC
	dchDay
	dchDDD
	dchDD
	dchDy
	dchD
	dchFF // FF1-FF6 (dchKey.n)
	dchFX
	dchHH24
	dchHH12 // HH and HH12
	dchIDDD
	dchID
	dchIW
	dchIYYY
	dchIYY
	dchIY
	dchI
	dchJ
	dchMI
	dchMM
	dchMonth
	dchMon
	dchMS
	dchOF
	dchQ
	dchRM
	dchSSSS
	dchSS
	dchTZH
	dchTZM
	dchTZ
	dchUS
	dchWW
	dchW
	dchYCommaYYY
	dchYYYY
	dchYYY
	dchYY
	dchY
)

// dchKey is one pattern, named in upper case; it is also recognised in
// lower case, and in title case when title is set (Day, Month).
type dchKey struct {
	name  string
	id    dchPat
	digit bool // a number: a field after it needs no separator
	mode  byte // 'G' Gregorian, 'I' ISO week date, 0 either
	title bool
	n     int // FFn's digits
}

// dchKeys is in PostgreSQL's order: longer patterns before their prefixes.
var dchKeys = []dchKey{
	{name: "A.D.", id: dchADDots}, {name: "A.M.", id: dchAMDots}, {name: "AD", id: dchAD}, {name: "AM", id: dchAM},
	{name: "B.C.", id: dchADDots}, {name: "BC", id: dchAD},
	{name: "CC", id: dchCC, digit: true},
	{name: "DAY", id: dchDay, title: true}, {name: "DDD", id: dchDDD, digit: true, mode: 'G'},
	{name: "DD", id: dchDD, digit: true, mode: 'G'}, {name: "DY", id: dchDy, title: true},
	{name: "D", id: dchD, digit: true, mode: 'G'},
	{name: "FF1", id: dchFF, n: 1}, {name: "FF2", id: dchFF, n: 2}, {name: "FF3", id: dchFF, n: 3},
	{name: "FF4", id: dchFF, n: 4}, {name: "FF5", id: dchFF, n: 5}, {name: "FF6", id: dchFF, n: 6},
	{name: "FX", id: dchFX},
	{name: "HH24", id: dchHH24, digit: true}, {name: "HH12", id: dchHH12, digit: true}, {name: "HH", id: dchHH12, digit: true},
	{name: "IDDD", id: dchIDDD, digit: true, mode: 'I'}, {name: "ID", id: dchID, digit: true, mode: 'I'},
	{name: "IW", id: dchIW, digit: true, mode: 'I'}, {name: "IYYY", id: dchIYYY, digit: true, mode: 'I'},
	{name: "IYY", id: dchIYY, digit: true, mode: 'I'}, {name: "IY", id: dchIY, digit: true, mode: 'I'},
	{name: "I", id: dchI, digit: true, mode: 'I'},
	{name: "J", id: dchJ, digit: true},
	{name: "MI", id: dchMI, digit: true}, {name: "MM", id: dchMM, digit: true, mode: 'G'},
	{name: "MONTH", id: dchMonth, mode: 'G', title: true}, {name: "MON", id: dchMon, mode: 'G', title: true},
	{name: "MS", id: dchMS, digit: true},
	{name: "OF", id: dchOF},
	{name: "P.M.", id: dchAMDots}, {name: "PM", id: dchAM},
	{name: "Q", id: dchQ, digit: true},
	{name: "RM", id: dchRM, mode: 'G'},
	{name: "SSSSS", id: dchSSSS, digit: true}, {name: "SSSS", id: dchSSSS, digit: true}, {name: "SS", id: dchSS, digit: true},
	{name: "TZH", id: dchTZH}, {name: "TZM", id: dchTZM, digit: true}, {name: "TZ", id: dchTZ},
	{name: "US", id: dchUS, digit: true},
	{name: "WW", id: dchWW, digit: true, mode: 'G'}, {name: "W", id: dchW, digit: true, mode: 'G'},
	{name: "Y,YYY", id: dchYCommaYYY, digit: true, mode: 'G'}, {name: "YYYY", id: dchYYYY, digit: true, mode: 'G'},
	{name: "YYY", id: dchYYY, digit: true, mode: 'G'}, {name: "YY", id: dchYY, digit: true, mode: 'G'},
	{name: "Y", id: dchY, digit: true, mode: 'G'},
}

// dchNode is a pattern with its prefix and suffix, or a literal character
// (key nil) of kind 'c' (text), 's' (separator: punctuation) or ' '.
type dchNode struct {
	key  *dchKey
	text string // the pattern as written, or the character
	kind byte
	fm   bool // FM: no padding
	tm   bool // TM: names as the locale has them (unpadded)
	th   byte // TH suffix: 'U' upper, 'L' lower, 0 none
}

// lower and title report how the pattern was written (names and AM/PM
// take their case from it).
func (n *dchNode) lower() bool { return n.text[0] >= 'a' && n.text[0] <= 'z' }
func (n *dchNode) title() bool { return !n.lower() && len(n.text) > 1 && n.text[1] >= 'a' }

// parseDCH reads a datetime template: FM and TM before a pattern, TH, th
// and SP after it; "quoted" text is literal (\" a quote inside it), and a
// backslash outside quotes is literal unless before a quote.
func parseDCH(f string) []dchNode {
	var out []dchNode
	for len(f) > 0 {
		fm, tm := false, false
		for _, p := range []string{"FM", "fm", "TM", "tm"} {
			if strings.HasPrefix(f, p) {
				fm, tm = p[0] == 'F' || p[0] == 'f', p[0] == 'T' || p[0] == 't'
				f = f[2:]
				break
			}
		}
		if k, text := matchDCHKey(f); k != nil {
			n := dchNode{key: k, text: text, fm: fm, tm: tm}
			f = f[len(text):]
			switch {
			case strings.HasPrefix(f, "TH"):
				n.th, f = 'U', f[2:]
			case strings.HasPrefix(f, "th"):
				n.th, f = 'L', f[2:]
			case strings.HasPrefix(f, "SP"):
				f = f[2:]
			}
			out = append(out, n)
			continue
		}
		if f == "" {
			break
		}
		if f[0] == '"' {
			out, f = appendQuoted(out, f[1:])
			continue
		}
		if f[0] == '\\' && len(f) > 1 && f[1] == '"' {
			f = f[1:]
		}
		c := firstChar(f)
		out = append(out, dchNode{text: c, kind: dchCharKind(c)})
		f = f[len(c):]
	}
	return out
}

// appendQuoted adds the characters of quoted text up to the closing quote
// and returns the rest of the template.
func appendQuoted(out []dchNode, f string) ([]dchNode, string) {
	for len(f) > 0 {
		if f[0] == '"' {
			return out, f[1:]
		}
		if f[0] == '\\' && len(f) > 1 {
			f = f[1:]
		}
		c := firstChar(f)
		out = append(out, dchNode{text: c, kind: 'c'})
		f = f[len(c):]
	}
	return out, f
}

func firstChar(s string) string {
	for i := range s {
		if i > 0 {
			return s[:i]
		}
	}
	return s
}

func dchCharKind(c string) byte {
	switch {
	case isSeparatorChar(c[0]):
		return 's'
	case strings.ContainsRune(" \t\n\r\v\f", rune(c[0])):
		return ' '
	}
	return 'c'
}

// isSeparatorChar is printable ASCII other than letters and digits.
func isSeparatorChar(c byte) bool {
	return c > 0x20 && c < 0x7f && !(c >= 'A' && c <= 'Z') && !(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9')
}

// matchDCHKey finds the pattern f starts with, in the cases PostgreSQL
// recognises; it returns the pattern as written.
func matchDCHKey(f string) (*dchKey, string) {
	for i := range dchKeys {
		k := &dchKeys[i]
		if len(f) < len(k.name) {
			continue
		}
		w := f[:len(k.name)]
		if w == k.name || w == strings.ToLower(k.name) || k.title && w == k.name[:1]+strings.ToLower(k.name[1:]) {
			return k, w
		}
	}
	return nil, ""
}

// cPad is C's "%0*d": v zero-padded to width characters, its sign included.
func cPad(v, width int) string {
	s := strconv.Itoa(abs(v))
	for len(s) < width-boolInt(v < 0) {
		s = "0" + s
	}
	if v < 0 {
		s = "-" + s
	}
	return s
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// signWidth is the width PostgreSQL gives a field that may be negative: one
// more for the sign, none under FM.
func signWidth(n *dchNode, v, width int) int {
	if n.fm {
		return 0
	}
	if v < 0 {
		return width + 1
	}
	return width
}
