package builtins

import (
	"math"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// to_char of numbers with PostgreSQL's numeric template patterns (9 0 . ,
// D G S PR MI PL SG FM EEEE TH V L RN), in the C locale: D is ".", G ",",
// L a blank. The template is read into a numDesc, the number rendered as
// digits, then the template walked writing digits, signs and literals.

type numNode struct {
	key string // a pattern, upper-cased; "" for a literal
	lit string
	low bool // the pattern was written in lower case (th, rn)
}

type numDesc struct {
	pre, post, multi      int
	zeroStart, zeroEnd    int
	decimal, zero, fill   bool
	lsign                 int // 0 none, 1 before the digits, 2 after
	preLsignNum           int
	minus, plus, bracket  bool
	minusPost, plusPost   bool
	eeee, roman, multiply bool
	hasLSign              bool
	nodes                 []numNode
}

// numKeys are the template patterns, longer before their prefixes; B, C
// and SP are accepted and write nothing.
var numKeys = []string{"EEEE", "FM", "MI", "PL", "PR", "RN", "SG", "SP", "TH", ",", ".", "0", "9", "B", "C", "D", "G", "L", "S", "V"}

func numFormatErr(msg string) error {
	return pgerror.New(pgerror.CodeSyntaxError, "%s", msg)
}

// parseNumFormat reads a numeric template.
func parseNumFormat(f string) (*numDesc, error) {
	d := &numDesc{}
	for i := 0; i < len(f); {
		rest := f[i:]
		up := strings.ToUpper(rest)
		key := ""
		for _, k := range numKeys {
			if strings.HasPrefix(up, k) {
				key = k
				break
			}
		}
		switch {
		case key != "":
			d.nodes = append(d.nodes, numNode{key: key, low: rest[0] >= 'a' && rest[0] <= 'z'})
			if err := d.add(key); err != nil {
				return nil, err
			}
			i += len(key)
		case rest[0] == '"':
			// One node a character, as each passes one input character
			// in to_number (parseDCH reads quoted text the same way).
			var q []dchNode
			q, rest = appendQuoted(nil, rest[1:])
			for _, c := range q {
				d.nodes = append(d.nodes, numNode{lit: c.text})
			}
			i = len(f) - len(rest)
		default:
			if rest[0] == '\\' && len(rest) > 1 && rest[1] == '"' {
				rest, i = rest[1:], i+1
			}
			c := firstChar(rest)
			d.nodes = append(d.nodes, numNode{lit: c})
			i += len(c)
		}
	}
	return d, nil
}

// add records a pattern in the description, refusing the combinations
// PostgreSQL refuses.
func (d *numDesc) add(key string) error {
	if d.eeee {
		return numFormatErr("\"EEEE\" must be the last pattern used")
	}
	switch key {
	case "9", "0":
		if d.bracket {
			return numFormatErr("\"" + key + "\" must be ahead of \"PR\"")
		}
		if key == "9" && d.multiply {
			d.multi++
			return nil
		}
		if key == "0" && !d.zero && !d.decimal {
			d.zero, d.zeroStart = true, d.pre+1
		}
		if d.decimal {
			d.post++
		} else {
			d.pre++
		}
		if key == "0" {
			d.zeroEnd = d.pre + d.post
		}
	case ".", "D":
		if d.decimal {
			return numFormatErr("multiple decimal points")
		}
		if d.multiply {
			return numFormatErr("cannot use \"V\" and decimal point together")
		}
		d.decimal = true
	case "FM":
		d.fill = true
	case "S":
		if d.hasLSign {
			return numFormatErr("cannot use \"S\" twice")
		}
		if d.plus || d.minus || d.bracket {
			return numFormatErr("cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together")
		}
		if !d.decimal {
			d.lsign, d.preLsignNum = 1, d.pre
		} else if d.lsign == 0 {
			d.lsign = 2
		}
		d.hasLSign = true
	case "MI", "PL", "SG":
		if d.hasLSign {
			return numFormatErr("cannot use \"S\" and \"" + key + "\" together")
		}
		if key != "PL" {
			d.minus, d.minusPost = true, d.decimal
		}
		if key != "MI" {
			d.plus, d.plusPost = true, d.decimal
		}
	case "PR":
		if d.hasLSign || d.plus || d.minus {
			return numFormatErr("cannot use \"PR\" and \"S\"/\"PL\"/\"MI\"/\"SG\" together")
		}
		d.bracket = true
	case "RN":
		d.roman = true
	case "V":
		if d.decimal {
			return numFormatErr("cannot use \"V\" and decimal point together")
		}
		d.multiply = true
	case "EEEE":
		if d.eeee {
			return numFormatErr("cannot use \"EEEE\" twice")
		}
		if d.fill || d.hasLSign || d.bracket || d.minus || d.plus || d.roman || d.multiply {
			return eeeeErr()
		}
		d.eeee = true
	}
	return nil
}

func eeeeErr() error {
	return pgerror.New(pgerror.CodeSyntaxError, "\"EEEE\" is incompatible with other formats").
		WithHint("\"EEEE\" may only be used together with digit and decimal point patterns.")
}

// toRoman is int_to_roman: 1 to 3999, else fifteen '#'.
func toRoman(n int64) string {
	if n < 1 || n > 3999 {
		return strings.Repeat("#", 15)
	}
	var sb strings.Builder
	for _, p := range []struct {
		v int64
		s string
	}{{1000, "M"}, {900, "CM"}, {500, "D"}, {400, "CD"}, {100, "C"}, {90, "XC"}, {50, "L"}, {40, "XL"}, {10, "X"}, {9, "IX"}, {5, "V"}, {4, "IV"}, {1, "I"}} {
		for ; n >= p.v; n -= p.v {
			sb.WriteString(p.s)
		}
	}
	return sb.String()
}

// sciNumeric renders |x| (sign aside) as d.ddde+NN with post fraction digits.
func sciNumeric(x *apd.Decimal, post int) string {
	if x.IsZero() {
		return "0" + map[bool]string{true: "." + strings.Repeat("0", post), false: ""}[post > 0] + "e+00"
	}
	a := new(apd.Decimal).Abs(x)
	exp := int(a.NumDigits()) + int(a.Exponent) - 1
	m := new(apd.Decimal).Set(a)
	m.Exponent -= int32(exp)
	m = types.RoundNumeric(m, post) // 9.999 is 10.00e+00, as in PostgreSQL
	es := strconv.Itoa(abs(exp))
	if len(es) < 2 {
		es = "0" + es
	}
	return m.Text('f') + "e" + map[bool]string{true: "-", false: "+"}[exp < 0] + es
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// numToChar is to_char(numeric, format); floatDigits is DBL_DIG or
// FLT_DIG for the float variants (0 for exact types).
func numToChar(x *apd.Decimal, f float64, floatDigits int, format string) (types.Datum, error) {
	d, err := parseNumFormat(format)
	if err != nil {
		return types.NullDatum, err
	}
	isFloat := floatDigits > 0
	nan := (!isFloat && (isNaN(x) || isInf(x))) || (isFloat && (math.IsNaN(f) || math.IsInf(f, 0)))
	var num string
	sign := byte('+')
	prePad := 0
	switch {
	case d.roman:
		var n int64
		if isFloat {
			n = int64(math.RoundToEven(f))
		} else if !nan {
			n, _ = types.RoundNumeric(x, 0).Int64()
		}
		num = toRoman(n)
	case d.eeee:
		if nan {
			b := []byte(strings.Repeat("#", d.pre+d.post+6))
			b[0], b[d.pre+1] = ' ', '.'
			return types.DString(string(b)), nil
		}
		var s string
		if isFloat {
			s = strconv.FormatFloat(f, 'e', d.post, 64)
			if i := strings.IndexByte(s, 'e'); len(s)-i == 3 {
				s = s[:i+2] + "0" + s[i+2:]
			}
		} else {
			s = sciNumeric(x, d.post)
			if x.Negative {
				s = "-" + s
			}
		}
		if s[0] != '-' {
			s = " " + s
		}
		return types.DString(s), nil
	default:
		if nan && !isFloat {
			num = x.String()
			if num == "Infinity" || num == "-Infinity" {
				num = strings.Repeat("#", d.pre) + "." + strings.Repeat("#", d.post)
			}
			num = strings.TrimPrefix(num, "-")
		} else {
			num, sign = plainDigits(d, x, f, floatDigits)
			if isFloat && math.IsInf(f, 0) {
				num = strings.Repeat("#", d.pre+1) // overflows below
			}
		}
		pre := strings.IndexByte(num, '.')
		if pre < 0 {
			pre = len(num)
		}
		if pre < d.pre {
			prePad = d.pre - pre
		} else if pre > d.pre {
			b := []byte(strings.Repeat("#", d.pre+d.post+1))
			b[d.pre] = '.'
			num = string(b)
		}
	}
	return types.DString(numProcess(d, num, sign, prePad)), nil
}

// plainDigits rounds the value to the template's fraction digits (after V
// scaling) and returns its digits without sign, and the sign.
func plainDigits(d *numDesc, x *apd.Decimal, f float64, floatDigits int) (string, byte) {
	if floatDigits > 0 {
		v := f
		if d.multiply {
			v *= math.Pow(10, float64(d.multi))
			d.pre += d.multi
		}
		intLen := len(strconv.FormatFloat(math.Abs(v), 'f', 0, 64))
		post := d.post
		if intLen >= floatDigits {
			post = 0
		} else if intLen+post > floatDigits {
			post = floatDigits - intLen
		}
		s := strconv.FormatFloat(v, 'f', post, 64)
		if s[0] == '-' {
			return s[1:], '-'
		}
		return s, '+'
	}
	v := x
	if d.multiply {
		v = new(apd.Decimal).Set(x)
		v.Exponent += int32(d.multi)
		d.pre += d.multi
	}
	s := types.RoundNumeric(v, d.post).Text('f')
	if s[0] == '-' {
		return s[1:], '-'
	}
	return s, '+'
}

// numProcess walks the template over the digits num (with '.'), writing
// the output as PostgreSQL's NUM_processor does for to_char.
func numProcess(d *numDesc, num string, sign byte, prePad int) string {
	p := &numProc{d: d, num: num, sign: sign, prePad: prePad}
	return p.run()
}

type numProc struct {
	d            *numDesc
	num          string
	pos          int // next character of num
	sign         byte
	prePad       int
	signWrote    bool
	numIn        bool
	cur, count   int
	lastRelevant int // index in num of the last significant fraction digit, -1 when none
	out          strings.Builder
}

func (p *numProc) run() string {
	d := p.d
	if d.plus || d.minus {
		p.signWrote = !(d.plus && !d.minus)
	} else {
		if p.sign != '-' && d.fill {
			d.bracket = false
		}
		p.signWrote = p.sign == '+' && d.fill && d.lsign == 0
		if d.lsign == 1 && d.pre == d.preLsignNum {
			d.lsign = 2
		}
	}
	if d.zeroStart > 0 { // from here 0-based, as num positions
		d.zeroStart--
	}
	p.count = d.post + d.pre - 1
	p.lastRelevant = -1
	if d.fill && d.decimal {
		p.lastRelevant = lastRelevantDigit(p.num)
		if p.lastRelevant >= 0 && d.zeroEnd > p.prePad {
			lastZero := min(len(p.num)-1, d.zeroEnd-p.prePad)
			if p.lastRelevant < lastZero {
				p.lastRelevant = lastZero
			}
		}
	}
	if !p.signWrote && p.prePad == 0 {
		p.count++
	}
	for _, n := range d.nodes {
		if n.key == "" {
			p.out.WriteString(n.lit)
			continue
		}
		p.node(n)
	}
	return p.out.String()
}

func lastRelevantDigit(num string) int {
	i := strings.IndexByte(num, '.')
	if i < 0 {
		return -1
	}
	r := i
	for j := i + 1; j < len(num); j++ {
		if num[j] != '0' {
			r = j
		}
	}
	return r
}

func (p *numProc) node(n numNode) {
	d := p.d
	switch n.key {
	case "9", "0", ".", "D":
		p.digit(n.key)
	case ",", "G":
		switch {
		case p.numIn:
			p.out.WriteByte(',')
		case !d.fill:
			p.out.WriteByte(' ')
		}
	case "L":
		p.out.WriteByte(' ') // the C locale's currency symbol
	case "RN":
		r := p.num
		if n.low {
			r = strings.ToLower(r)
		}
		if !d.fill {
			r = strings.Repeat(" ", max(15-len(r), 0)) + r
		}
		p.out.WriteString(r)
	case "TH":
		if d.roman || strings.HasPrefix(p.num, "#") || p.sign == '-' || d.decimal {
			return
		}
		p.out.WriteString(ordinalSuffix(p.num, n.low))
	case "MI":
		switch {
		case p.sign == '-':
			p.out.WriteByte('-')
		case !d.fill:
			p.out.WriteByte(' ')
		}
	case "PL":
		switch {
		case p.sign == '+':
			p.out.WriteByte('+')
		case !d.fill:
			p.out.WriteByte(' ')
		}
	case "SG":
		p.out.WriteByte(p.sign)
	}
}

// ordinalSuffix is st, nd, rd or th for the number's last digits.
func ordinalSuffix(num string, low bool) string {
	last := num[len(num)-1]
	if len(num) > 1 && num[len(num)-2] == '1' {
		last = 0
	}
	s := map[byte]string{'1': "ST", '2': "ND", '3': "RD"}[last]
	if s == "" {
		s = "TH"
	}
	if low {
		s = strings.ToLower(s)
	}
	return s
}

// predecSpace: the integer part is a lone 0 before the point, which a 9
// template shows as a blank ("0.1" with 9.9 is " .1").
func (p *numProc) predecSpace() bool {
	return !p.d.zero && p.pos == 0 && strings.HasPrefix(p.num, "0") && p.d.post != 0
}

func (p *numProc) writeSign() {
	d := p.d
	relevantDot := p.lastRelevant >= 0 && p.num[p.lastRelevant] == '.'
	if p.signWrote || !(p.cur >= p.prePad || d.zero && d.zeroStart == p.cur) || (p.predecSpace() && !relevantDot) {
		return
	}
	switch {
	case d.lsign != 0:
		if d.lsign == 1 {
			p.out.WriteByte(p.sign)
			p.signWrote = true
		}
	case d.bracket:
		p.out.WriteByte(map[bool]byte{true: ' ', false: '<'}[p.sign == '+'])
		p.signWrote = true
	case p.sign == '+':
		if !d.fill {
			p.out.WriteByte(' ')
		}
		p.signWrote = true
	default:
		p.out.WriteByte('-')
		p.signWrote = true
	}
}

func (p *numProc) digit(key string) {
	d := p.d
	if d.roman {
		return
	}
	p.numIn = false
	p.writeSign()
	relevantDot := p.lastRelevant >= 0 && p.num[p.lastRelevant] == '.'
	switch {
	case p.cur < p.prePad && (d.zeroStart > p.cur || !d.zero):
		if !d.fill {
			p.out.WriteByte(' ')
		}
	case d.zero && p.cur < p.prePad && d.zeroStart <= p.cur:
		p.out.WriteByte('0')
		p.numIn = true
	default:
		c := byte(0)
		if p.pos < len(p.num) {
			c = p.num[p.pos]
		}
		switch {
		case c == '.':
			if !relevantDot || d.fill {
				p.out.WriteByte('.')
			}
		case p.lastRelevant >= 0 && p.pos > p.lastRelevant && key != "0":
		case p.predecSpace():
			if !d.fill {
				p.out.WriteByte(' ')
			} else if relevantDot {
				p.out.WriteByte('0')
			}
		case c != 0:
			p.out.WriteByte(c)
			p.numIn = true
		}
		if p.pos < len(p.num) {
			p.pos++
		}
	}
	end := p.count
	if p.prePad > 0 {
		end++
	}
	if d.decimal {
		end++
	}
	if p.lastRelevant >= 0 && p.lastRelevant == p.pos {
		end = p.cur
	}
	if p.cur+1 == end {
		switch {
		case p.signWrote && d.bracket:
			p.out.WriteByte(map[bool]byte{true: ' ', false: '>'}[p.sign == '+'])
		case d.lsign == 2:
			p.out.WriteByte(p.sign)
		}
	}
	p.cur++
}

// toNumber is to_number: the input read by the template as PostgreSQL's
// NUM_processor reads it, the digits read then a numeric of the template's
// precision and of the scale read.
func toNumber(in, format string) (types.Datum, error) {
	if format == "" {
		return types.NullDatum, nil
	}
	d, err := parseNumFormat(format)
	if err != nil {
		return types.NullDatum, err
	}
	if d.eeee {
		return types.NullDatum, pgerror.New(pgerror.CodeFeatureNotSupported, "\"EEEE\" not supported for input")
	}
	if d.roman {
		return types.NullDatum, pgerror.New(pgerror.CodeFeatureNotSupported, "\"RN\" not supported for input")
	}
	r := &numReader{d: d, in: in, sign: ' '}
	r.run()
	num := string(r.sign) + strings.TrimSuffix(string(r.digits), ".")
	x, err := types.ParseNumeric(num)
	if err != nil {
		return types.NullDatum, err
	}
	prec := d.pre + d.multi + r.readPost
	x, err = types.ApplyNumericTypmod(x, types.T{OID: types.OIDNumeric, Mod: int32(prec<<16|r.readPost) + 4})
	if err != nil || !d.multiply {
		return types.DNumeric(x), err
	}
	scale, err := numPow(apd.New(10, 0), apd.New(-int64(d.multi), 0))
	if err != nil {
		return types.NullDatum, err
	}
	x, err = numMul(x, scale)
	return types.DNumeric(x), err
}

// numReader reads to_number's input: sign is ' ' until one is read.
type numReader struct {
	d                 *numDesc
	in                string
	pos               int
	sign              byte
	digits            []byte
	readPre, readPost int
	readDec           bool
}

func (r *numReader) eof() bool { return r.pos >= len(r.in) }

func (r *numReader) run() {
	for _, n := range r.d.nodes {
		if r.eof() {
			return
		}
		if n.key == "" { // a literal passes one input character
			r.pos += len(firstChar(r.in[r.pos:]))
			continue
		}
		if r.pattern(n) {
			r.pos++
		}
	}
}

// pattern reads at a pattern; it reports whether the pattern took the
// character at pos.
func (r *numReader) pattern(n numNode) bool {
	d, c := r.d, r.in[r.pos]
	switch n.key {
	case "9", "0", ".", "D":
		r.numPart(n.key)
		return true
	case ",", "G": // a group separator only where there is one, never under FM
		return !d.fill && c == ','
	case "L":
		r.eatNonData(1)
	case "TH":
		if !d.decimal {
			r.eatNonData(2)
		}
	case "MI", "PL", "SG":
		if c == '-' && n.key != "PL" || c == '+' && n.key != "MI" {
			r.sign = c
			return true
		}
		r.eatNonData(1)
	}
	return false
}

// eatNonData passes up to n characters that are not digits, points,
// commas or signs.
func (r *numReader) eatNonData(n int) {
	for ; n > 0 && !r.eof(); n-- {
		if strings.IndexByte("0123456789.,+-", r.in[r.pos]) >= 0 {
			return
		}
		r.pos += len(firstChar(r.in[r.pos:]))
	}
}

// numPart is NUM_numpart_from_char: a sign before the first digit, a
// digit or the decimal point, a sign after the last digit.
func (r *numReader) numPart(key string) {
	d := r.d
	if !r.eof() && r.in[r.pos] == ' ' {
		r.pos++
	}
	if r.eof() {
		return
	}
	if r.sign == ' ' && (key == "0" || key == "9") && r.readPre+r.readPost == 0 {
		// S before the digits takes a sign; otherwise also PR's '<'.
		switch c := r.in[r.pos]; {
		case c == '-' || c == '+':
			r.sign = c
			r.pos++
		case c == '<' && d.bracket && !(d.hasLSign && d.lsign == 1):
			r.sign = '-'
			r.pos++
		}
	}
	if r.eof() {
		return
	}
	read := false
	switch c := r.in[r.pos]; {
	case c >= '0' && c <= '9':
		if r.readDec && r.readPost == d.post {
			return
		}
		r.digits = append(r.digits, c)
		if r.readDec {
			r.readPost++
		} else {
			r.readPre++
		}
		read = true
	case d.decimal && !r.readDec && c == '.':
		r.digits = append(r.digits, '.')
		r.readDec, read = true, true
	}
	if r.eof() || r.sign != ' ' || r.readPre+r.readPost == 0 {
		return
	}
	switch {
	case d.hasLSign && read && r.pos+1 < len(r.in) && !isDigitByte(r.in[r.pos+1]):
		if c := r.in[r.pos+1]; c == '-' || c == '+' {
			r.sign = c
			r.pos++
		}
	case !read && !d.hasLSign && (d.plus || d.minus):
		if c := r.in[r.pos]; c == '-' || c == '+' {
			r.sign = c
		}
	}
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }

func init() {
	addFn("to_number", args(tText, tText), tNum, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return toNumber(a[0].S, a[1].S)
	})
	for _, t := range []types.T{tI2, tI4, tI8} {
		addFn("to_char", args(t, tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			return numToChar(apd.New(a[0].I, 0), 0, 0, a[1].S)
		})
	}
	addFn("to_char", args(tNum, tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return numToChar(a[0].D, 0, 0, a[1].S)
	})
	addFn("to_char", args(tF8, tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return numToChar(nil, a[0].F, 15, a[1].S)
	})
	addFn("to_char", args(tF4, tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return numToChar(nil, a[0].F, 6, a[1].S)
	})
}
