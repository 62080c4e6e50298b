package exec

import "unicode/utf8"

// maxIdentifierLen is PostgreSQL's NAMEDATALEN - 1: the parser truncates
// longer identifiers, and generated names are made to fit.
const maxIdentifierLen = 63

// objectName is PostgreSQL's makeObjectName: "name1_name2_label" (name2
// and label may be empty), with the longer of the two names shortened
// first so that the whole fits maxIdentifierLen bytes. A table of a
// 63-character name got a primary key index "<name>_pkey" of 68, which
// no client can name (the parser truncates what it is given).
func objectName(name1, name2, label string) string {
	overhead := 0
	if name2 != "" {
		overhead++
	}
	if label != "" {
		overhead += len(label) + 1
	}
	n1, n2 := len(name1), len(name2)
	for avail := maxIdentifierLen - overhead; n1+n2 > avail; {
		if n1 > n2 {
			n1--
		} else {
			n2--
		}
	}
	out := clipUTF8(name1, n1)
	if name2 != "" {
		out += "_" + clipUTF8(name2, n2)
	}
	if label != "" {
		out += "_" + label
	}
	return out
}

// clipUTF8 is s cut to at most n bytes without splitting a character.
func clipUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
