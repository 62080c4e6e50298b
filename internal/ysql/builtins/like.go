package builtins

import (
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// LIKE, ILIKE and the POSIX regular expression operators.
//
// LIKE patterns use % and _ with backslash as the escape character;
// "x LIKE p ESCAPE e" is x ~~ like_escape(p, e), as PostgreSQL's parser
// rewrites it. Case folding for ILIKE is ASCII-only, as under the "C"
// locale.
//
// The regular expression operators (~, ~*, !~, !~*) use Go's regexp (RE2)
// in place of PostgreSQL's ARE engine. Differences: no back-references
// (\1), no lookahead/lookbehind, no \m \M \y \Y word-boundary escapes (use
// \b), no embedded options other than (?i) (?s) (?m) (?U), and "." matches
// newlines as in PostgreSQL's default (the s flag is set) — patterns that
// use these features are refused with 2201B "invalid regular expression".

func addLikeOps(t types.T) {
	like := func(neg, fold bool) func(*EvalContext, types.Datum, types.Datum) (types.Datum, error) {
		return func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
			s := a.S
			if t.OID == types.OIDBPChar {
				s = types.TrimBPChar(s)
			}
			ok, err := Like(s, b.S, fold)
			if err != nil {
				return types.NullDatum, err
			}
			return types.DBool(ok != neg), nil
		}
	}
	addOp("~~", t, tText, t16, like(false, false))
	addOp("!~~", t, tText, t16, like(true, false))
	addOp("~~*", t, tText, t16, like(false, true))
	addOp("!~~*", t, tText, t16, like(true, true))
	re := func(neg, fold bool) func(*EvalContext, types.Datum, types.Datum) (types.Datum, error) {
		return func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
			s := a.S
			if t.OID == types.OIDBPChar {
				s = types.TrimBPChar(s)
			}
			r, err := compileRegex(b.S, fold)
			if err != nil {
				return types.NullDatum, err
			}
			return types.DBool(r.MatchString(s) != neg), nil
		}
	}
	addOp("~", t, tText, t16, re(false, false))
	addOp("!~", t, tText, t16, re(true, false))
	addOp("~*", t, tText, t16, re(false, true))
	addOp("!~*", t, tText, t16, re(true, true))
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func asciiUpper(s string) string {
	b := []byte(s)
	for j := range b {
		if b[j] >= 'a' && b[j] <= 'z' {
			b[j] -= 'a' - 'A'
		}
	}
	return string(b)
}

// Like reports whether s matches the LIKE pattern p (backslash escapes;
// fold for ILIKE).
func Like(s, p string, fold bool) (bool, error) {
	if fold {
		s, p = asciiLower(s), asciiLower(p)
	}
	return likeMatch(s, p)
}

func likeMatch(s, p string) (bool, error) {
	for len(p) > 0 {
		c := p[0]
		switch c {
		case '%':
			for len(p) > 0 && (p[0] == '%' || p[0] == '_') {
				if p[0] == '_' {
					if len(s) == 0 {
						return false, nil
					}
					_, n := utf8.DecodeRuneInString(s)
					s = s[n:]
				}
				p = p[1:]
			}
			if len(p) == 0 {
				return true, nil
			}
			for {
				ok, err := likeMatch(s, p)
				if err != nil || ok {
					return ok, err
				}
				if len(s) == 0 {
					return false, nil
				}
				_, n := utf8.DecodeRuneInString(s)
				s = s[n:]
			}
		case '_':
			if len(s) == 0 {
				return false, nil
			}
			_, n := utf8.DecodeRuneInString(s)
			s, p = s[n:], p[1:]
		case '\\':
			if len(p) < 2 {
				return false, pgerror.New(pgerror.CodeInvalidEscapeSequence, "LIKE pattern must not end with escape character")
			}
			_, n := utf8.DecodeRuneInString(p[1:])
			if !strings.HasPrefix(s, p[1:1+n]) {
				return false, nil
			}
			s, p = s[n:], p[1+n:]
		default:
			_, n := utf8.DecodeRuneInString(p)
			if !strings.HasPrefix(s, p[:n]) {
				return false, nil
			}
			s, p = s[n:], p[n:]
		}
	}
	return len(s) == 0, nil
}

// LikeEscape rewrites pattern p with escape character esc into the
// backslash-escaped form (like_escape(p, esc)); an empty esc disables
// escaping.
func LikeEscape(p, esc string) (string, error) {
	if esc == `\` {
		return p, nil
	}
	if utf8.RuneCountInString(esc) > 1 {
		return "", pgerror.New(pgerror.CodeInvalidEscapeSequence, "invalid escape string").WithHint("Escape string must be empty or one character.")
	}
	var sb strings.Builder
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRuneInString(p[i:])
		switch {
		case esc != "" && p[i:i+n] == esc:
			if i+n >= len(p) {
				return "", pgerror.New(pgerror.CodeInvalidEscapeSequence, "LIKE pattern must not end with escape character")
			}
			_, m := utf8.DecodeRuneInString(p[i+n:])
			next := p[i+n : i+n+m]
			if next == "%" || next == "_" || next == `\` {
				sb.WriteByte('\\')
			}
			sb.WriteString(next)
			i += n + m
			continue
		case r == '\\':
			sb.WriteString(`\\`)
		default:
			sb.WriteString(p[i : i+n])
		}
		i += n
	}
	return sb.String(), nil
}

var regexCache sync.Map // pattern+flag -> *regexp.Regexp

func compileRegex(p string, fold bool) (*regexp.Regexp, error) {
	key := p
	if fold {
		key = "i\x00" + p
	} else {
		key = "c\x00" + p
	}
	if r, ok := regexCache.Load(key); ok {
		return r.(*regexp.Regexp), nil
	}
	flags := "(?s)"
	if fold {
		flags = "(?si)"
	}
	r, err := regexp.Compile(flags + p)
	if err != nil {
		return nil, pgerror.New("2201B", "invalid regular expression: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	regexCache.Store(key, r)
	return r, nil
}
