package builtins

import (
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/ysql/types"
)

// pgStatAggCase is an aggregate over rows of one or two arguments with
// PostgreSQL 15's result (its text) or error message.
type pgStatAggCase struct {
	agg  string
	typs []string
	rows [][]string
	out  string
	err  string
}

// TestStatAggregatesAgainstPostgres runs each case in one state and split
// in two at every point, the second part shipped through MarshalBinary
// and merged, as the aggregates over tablets' partial states are.
func TestStatAggregatesAgainstPostgres(t *testing.T) {
	for _, c := range pgStatAggCases {
		var ts []types.T
		for _, s := range c.typs {
			typ, err := types.ParseType(s)
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, typ)
		}
		agg, err := LookupAggregate(c.agg, ts, false)
		if err != nil {
			t.Errorf("%s%v: %v", c.agg, c.typs, err)
			continue
		}
		rows := parseRows(t, c.rows, ts)
		for split := 0; split <= len(rows); split++ {
			got, err := runSplit(agg, rows, split)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Errorf("%s%v over %v (split %d): error %v, want %q", c.agg, c.typs, c.rows, split, err, c.err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s%v over %v (split %d): %v", c.agg, c.typs, c.rows, split, err)
				continue
			}
			if got != c.out && !(agg.Result.OID == types.OIDFloat8 && split > 0 && split < len(rows) && closeFloats(got, c.out)) {
				t.Errorf("%s%v over %v (split %d): got %q, want %q", c.agg, c.typs, c.rows, split, got, c.out)
			}
		}
	}
}

// closeFloats: floating-point sums merged from partial states may differ
// from PostgreSQL's serial ones in the last places.
func closeFloats(a, b string) bool {
	x, err1 := types.ParseFloat(a, 64)
	y, err2 := types.ParseFloat(b, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	d := x - y
	return d < 1e-9*max(1, y, -y) && -d < 1e-9*max(1, y, -y)
}

func parseRows(t *testing.T, in [][]string, ts []types.T) [][]types.Datum {
	var rows [][]types.Datum
	for _, r := range in {
		var row []types.Datum
		for i, v := range r {
			d := types.NullDatum
			if v != "NULL" {
				var err error
				if d, err = types.ParseText(v, ts[i], time.UTC); err != nil {
					t.Fatal(err)
				}
			}
			row = append(row, d)
		}
		rows = append(rows, row)
	}
	return rows
}

// runSplit aggregates rows[:split] and rows[split:] apart and merges the
// second state, marshalled, into the first; it returns the result's text.
func runSplit(agg *Aggregate, rows [][]types.Datum, split int) (string, error) {
	s1, s2 := agg.New(), agg.New()
	for i, r := range rows {
		s := s1
		if i >= split {
			s = s2
		}
		if err := s.Add(nil, r); err != nil {
			return "", err
		}
	}
	b, err := s2.MarshalBinary()
	if err != nil {
		return "", err
	}
	s2b, err := agg.Unmarshal(b)
	if err != nil {
		return "", err
	}
	if err := s1.Merge(s2b); err != nil {
		return "", err
	}
	d, err := s1.Result()
	if err != nil || d.Null {
		return "<NULL>", err
	}
	s, err := types.Coerce(d, agg.Result, types.TText, types.CastExplicit)
	return s.S, err
}

// Expected values from PostgreSQL 15 (select agg(...)::text from (values ...)).

var pgStatAggCases = []pgStatAggCase{
	{"variance", []string{"integer"}, [][]string{{"1"}, {"2"}, {"4"}}, "2.3333333333333333", ""},
	{"var_samp", []string{"integer"}, [][]string{{"1"}, {"2"}, {"4"}}, "2.3333333333333333", ""},
	{"var_pop", []string{"integer"}, [][]string{{"1"}, {"2"}, {"4"}}, "1.5555555555555556", ""},
	{"stddev", []string{"integer"}, [][]string{{"1"}, {"2"}, {"4"}}, "1.5275252316519467", ""},
	{"stddev_samp", []string{"integer"}, [][]string{{"1"}, {"2"}, {"4"}}, "1.5275252316519467", ""},
	{"stddev_pop", []string{"integer"}, [][]string{{"1"}, {"2"}, {"4"}}, "1.2472191289246471", ""},
	{"variance", []string{"smallint"}, [][]string{{"NULL"}, {"7"}}, "<NULL>", ""},
	{"var_samp", []string{"smallint"}, [][]string{{"NULL"}, {"7"}}, "<NULL>", ""},
	{"var_pop", []string{"smallint"}, [][]string{{"NULL"}, {"7"}}, "0", ""},
	{"stddev", []string{"smallint"}, [][]string{{"NULL"}, {"7"}}, "<NULL>", ""},
	{"stddev_samp", []string{"smallint"}, [][]string{{"NULL"}, {"7"}}, "<NULL>", ""},
	{"stddev_pop", []string{"smallint"}, [][]string{{"NULL"}, {"7"}}, "0", ""},
	{"variance", []string{"bigint"}, [][]string{{"9223372036854775807"}, {"-9223372036854775808"}, {"5"}}, "85070591730234615856620279821087277066", ""},
	{"var_samp", []string{"bigint"}, [][]string{{"9223372036854775807"}, {"-9223372036854775808"}, {"5"}}, "85070591730234615856620279821087277066", ""},
	{"var_pop", []string{"bigint"}, [][]string{{"9223372036854775807"}, {"-9223372036854775808"}, {"5"}}, "56713727820156410571080186547391518044", ""},
	{"stddev", []string{"bigint"}, [][]string{{"9223372036854775807"}, {"-9223372036854775808"}, {"5"}}, "9223372036854775808", ""},
	{"stddev_samp", []string{"bigint"}, [][]string{{"9223372036854775807"}, {"-9223372036854775808"}, {"5"}}, "9223372036854775808", ""},
	{"stddev_pop", []string{"bigint"}, [][]string{{"9223372036854775807"}, {"-9223372036854775808"}, {"5"}}, "7530851732716320752", ""},
	{"variance", []string{"numeric"}, [][]string{{"1.25"}, {"2.5"}, {"4.125"}}, "2.0781250000000000", ""},
	{"var_samp", []string{"numeric"}, [][]string{{"1.25"}, {"2.5"}, {"4.125"}}, "2.0781250000000000", ""},
	{"var_pop", []string{"numeric"}, [][]string{{"1.25"}, {"2.5"}, {"4.125"}}, "1.3854166666666667", ""},
	{"stddev", []string{"numeric"}, [][]string{{"1.25"}, {"2.5"}, {"4.125"}}, "1.4415703243338495", ""},
	{"stddev_samp", []string{"numeric"}, [][]string{{"1.25"}, {"2.5"}, {"4.125"}}, "1.4415703243338495", ""},
	{"stddev_pop", []string{"numeric"}, [][]string{{"1.25"}, {"2.5"}, {"4.125"}}, "1.1770372409854612", ""},
	{"variance", []string{"numeric"}, [][]string{{"1.5"}, {"1.5"}}, "0", ""},
	{"var_samp", []string{"numeric"}, [][]string{{"1.5"}, {"1.5"}}, "0", ""},
	{"var_pop", []string{"numeric"}, [][]string{{"1.5"}, {"1.5"}}, "0", ""},
	{"stddev", []string{"numeric"}, [][]string{{"1.5"}, {"1.5"}}, "0", ""},
	{"stddev_samp", []string{"numeric"}, [][]string{{"1.5"}, {"1.5"}}, "0", ""},
	{"stddev_pop", []string{"numeric"}, [][]string{{"1.5"}, {"1.5"}}, "0", ""},
	{"variance", []string{"numeric"}, [][]string{{"NaN"}, {"1"}}, "NaN", ""},
	{"var_samp", []string{"numeric"}, [][]string{{"NaN"}, {"1"}}, "NaN", ""},
	{"var_pop", []string{"numeric"}, [][]string{{"NaN"}, {"1"}}, "NaN", ""},
	{"stddev", []string{"numeric"}, [][]string{{"NaN"}, {"1"}}, "NaN", ""},
	{"stddev_samp", []string{"numeric"}, [][]string{{"NaN"}, {"1"}}, "NaN", ""},
	{"stddev_pop", []string{"numeric"}, [][]string{{"NaN"}, {"1"}}, "NaN", ""},
	{"variance", []string{"numeric"}, [][]string{{"NaN"}}, "<NULL>", ""},
	{"var_samp", []string{"numeric"}, [][]string{{"NaN"}}, "<NULL>", ""},
	{"var_pop", []string{"numeric"}, [][]string{{"NaN"}}, "NaN", ""},
	{"stddev", []string{"numeric"}, [][]string{{"NaN"}}, "<NULL>", ""},
	{"stddev_samp", []string{"numeric"}, [][]string{{"NaN"}}, "<NULL>", ""},
	{"stddev_pop", []string{"numeric"}, [][]string{{"NaN"}}, "NaN", ""},
	{"variance", []string{"numeric"}, [][]string{{"Infinity"}, {"1"}}, "NaN", ""},
	{"var_samp", []string{"numeric"}, [][]string{{"Infinity"}, {"1"}}, "NaN", ""},
	{"var_pop", []string{"numeric"}, [][]string{{"Infinity"}, {"1"}}, "NaN", ""},
	{"stddev", []string{"numeric"}, [][]string{{"Infinity"}, {"1"}}, "NaN", ""},
	{"stddev_samp", []string{"numeric"}, [][]string{{"Infinity"}, {"1"}}, "NaN", ""},
	{"stddev_pop", []string{"numeric"}, [][]string{{"Infinity"}, {"1"}}, "NaN", ""},
	{"variance", []string{"numeric"}, [][]string{{"0.001"}, {"1000000"}}, "499999999000.00000050", ""},
	{"var_samp", []string{"numeric"}, [][]string{{"0.001"}, {"1000000"}}, "499999999000.00000050", ""},
	{"var_pop", []string{"numeric"}, [][]string{{"0.001"}, {"1000000"}}, "249999999500.00000025", ""},
	{"stddev", []string{"numeric"}, [][]string{{"0.001"}, {"1000000"}}, "707106.78047944", ""},
	{"stddev_samp", []string{"numeric"}, [][]string{{"0.001"}, {"1000000"}}, "707106.78047944", ""},
	{"stddev_pop", []string{"numeric"}, [][]string{{"0.001"}, {"1000000"}}, "499999.99950000", ""},
	{"variance", []string{"numeric"}, [][]string{{"123456789.123456789"}, {"-0.5"}, {"3"}}, "5080526157343905.485660216083396840", ""},
	{"var_samp", []string{"numeric"}, [][]string{{"123456789.123456789"}, {"-0.5"}, {"3"}}, "5080526157343905.485660216083396840", ""},
	{"var_pop", []string{"numeric"}, [][]string{{"123456789.123456789"}, {"-0.5"}, {"3"}}, "3387017438229270.323773477388931227", ""},
	{"stddev", []string{"numeric"}, [][]string{{"123456789.123456789"}, {"-0.5"}, {"3"}}, "71277809.712026824356217357", ""},
	{"stddev_samp", []string{"numeric"}, [][]string{{"123456789.123456789"}, {"-0.5"}, {"3"}}, "71277809.712026824356217357", ""},
	{"stddev_pop", []string{"numeric"}, [][]string{{"123456789.123456789"}, {"-0.5"}, {"3"}}, "58198087.925886966581107748", ""},
	{"variance", []string{"numeric"}, [][]string{{"1e-20"}, {"3e-20"}, {"7e-20"}}, "0.00000000000000000000000000000000000000093333333333333333", ""},
	{"var_samp", []string{"numeric"}, [][]string{{"1e-20"}, {"3e-20"}, {"7e-20"}}, "0.00000000000000000000000000000000000000093333333333333333", ""},
	{"var_pop", []string{"numeric"}, [][]string{{"1e-20"}, {"3e-20"}, {"7e-20"}}, "0.00000000000000000000000000000000000000062222222222222222", ""},
	{"stddev", []string{"numeric"}, [][]string{{"1e-20"}, {"3e-20"}, {"7e-20"}}, "0.00000000000000000003055050463303893332269917539918862789", ""},
	{"stddev_samp", []string{"numeric"}, [][]string{{"1e-20"}, {"3e-20"}, {"7e-20"}}, "0.00000000000000000003055050463303893332269917539918862789", ""},
	{"stddev_pop", []string{"numeric"}, [][]string{{"1e-20"}, {"3e-20"}, {"7e-20"}}, "0.00000000000000000002494438257849294252601478456337293119", ""},
	{"variance", []string{"numeric"}, [][]string{}, "<NULL>", ""},
	{"var_samp", []string{"numeric"}, [][]string{}, "<NULL>", ""},
	{"var_pop", []string{"numeric"}, [][]string{}, "<NULL>", ""},
	{"stddev", []string{"numeric"}, [][]string{}, "<NULL>", ""},
	{"stddev_samp", []string{"numeric"}, [][]string{}, "<NULL>", ""},
	{"stddev_pop", []string{"numeric"}, [][]string{}, "<NULL>", ""},
	{"variance", []string{"double precision"}, [][]string{{"1"}, {"2"}, {"4"}}, "2.3333333333333335", ""},
	{"var_samp", []string{"double precision"}, [][]string{{"1"}, {"2"}, {"4"}}, "2.3333333333333335", ""},
	{"var_pop", []string{"double precision"}, [][]string{{"1"}, {"2"}, {"4"}}, "1.5555555555555556", ""},
	{"stddev", []string{"double precision"}, [][]string{{"1"}, {"2"}, {"4"}}, "1.5275252316519468", ""},
	{"stddev_samp", []string{"double precision"}, [][]string{{"1"}, {"2"}, {"4"}}, "1.5275252316519468", ""},
	{"stddev_pop", []string{"double precision"}, [][]string{{"1"}, {"2"}, {"4"}}, "1.247219128924647", ""},
	{"variance", []string{"double precision"}, [][]string{{"0.1"}, {"0.2"}, {"0.3"}, {"0.7"}}, "0.06916666666666665", ""},
	{"var_samp", []string{"double precision"}, [][]string{{"0.1"}, {"0.2"}, {"0.3"}, {"0.7"}}, "0.06916666666666665", ""},
	{"var_pop", []string{"double precision"}, [][]string{{"0.1"}, {"0.2"}, {"0.3"}, {"0.7"}}, "0.05187499999999999", ""},
	{"stddev", []string{"double precision"}, [][]string{{"0.1"}, {"0.2"}, {"0.3"}, {"0.7"}}, "0.26299556396765833", ""},
	{"stddev_samp", []string{"double precision"}, [][]string{{"0.1"}, {"0.2"}, {"0.3"}, {"0.7"}}, "0.26299556396765833", ""},
	{"stddev_pop", []string{"double precision"}, [][]string{{"0.1"}, {"0.2"}, {"0.3"}, {"0.7"}}, "0.22776083947860745", ""},
	{"variance", []string{"double precision"}, [][]string{{"1e20"}, {"1"}}, "5e+39", ""},
	{"var_samp", []string{"double precision"}, [][]string{{"1e20"}, {"1"}}, "5e+39", ""},
	{"var_pop", []string{"double precision"}, [][]string{{"1e20"}, {"1"}}, "2.5e+39", ""},
	{"stddev", []string{"double precision"}, [][]string{{"1e20"}, {"1"}}, "7.0710678118654755e+19", ""},
	{"stddev_samp", []string{"double precision"}, [][]string{{"1e20"}, {"1"}}, "7.0710678118654755e+19", ""},
	{"stddev_pop", []string{"double precision"}, [][]string{{"1e20"}, {"1"}}, "5e+19", ""},
	{"variance", []string{"double precision"}, [][]string{{"Infinity"}, {"1"}}, "NaN", ""},
	{"var_samp", []string{"double precision"}, [][]string{{"Infinity"}, {"1"}}, "NaN", ""},
	{"var_pop", []string{"double precision"}, [][]string{{"Infinity"}, {"1"}}, "NaN", ""},
	{"stddev", []string{"double precision"}, [][]string{{"Infinity"}, {"1"}}, "NaN", ""},
	{"stddev_samp", []string{"double precision"}, [][]string{{"Infinity"}, {"1"}}, "NaN", ""},
	{"stddev_pop", []string{"double precision"}, [][]string{{"Infinity"}, {"1"}}, "NaN", ""},
	{"variance", []string{"double precision"}, [][]string{{"NaN"}}, "<NULL>", ""},
	{"var_samp", []string{"double precision"}, [][]string{{"NaN"}}, "<NULL>", ""},
	{"var_pop", []string{"double precision"}, [][]string{{"NaN"}}, "NaN", ""},
	{"stddev", []string{"double precision"}, [][]string{{"NaN"}}, "<NULL>", ""},
	{"stddev_samp", []string{"double precision"}, [][]string{{"NaN"}}, "<NULL>", ""},
	{"stddev_pop", []string{"double precision"}, [][]string{{"NaN"}}, "NaN", ""},
	{"variance", []string{"double precision"}, [][]string{{"1e308"}, {"-1e308"}}, "", "value out of range: overflow"},
	{"var_samp", []string{"double precision"}, [][]string{{"1e308"}, {"-1e308"}}, "", "value out of range: overflow"},
	{"var_pop", []string{"double precision"}, [][]string{{"1e308"}, {"-1e308"}}, "", "value out of range: overflow"},
	{"stddev", []string{"double precision"}, [][]string{{"1e308"}, {"-1e308"}}, "", "value out of range: overflow"},
	{"stddev_samp", []string{"double precision"}, [][]string{{"1e308"}, {"-1e308"}}, "", "value out of range: overflow"},
	{"stddev_pop", []string{"double precision"}, [][]string{{"1e308"}, {"-1e308"}}, "", "value out of range: overflow"},
	{"variance", []string{"real"}, [][]string{{"1.5"}, {"2.25"}, {"NULL"}}, "0.28125", ""},
	{"var_samp", []string{"real"}, [][]string{{"1.5"}, {"2.25"}, {"NULL"}}, "0.28125", ""},
	{"var_pop", []string{"real"}, [][]string{{"1.5"}, {"2.25"}, {"NULL"}}, "0.140625", ""},
	{"stddev", []string{"real"}, [][]string{{"1.5"}, {"2.25"}, {"NULL"}}, "0.5303300858899106", ""},
	{"stddev_samp", []string{"real"}, [][]string{{"1.5"}, {"2.25"}, {"NULL"}}, "0.5303300858899106", ""},
	{"stddev_pop", []string{"real"}, [][]string{{"1.5"}, {"2.25"}, {"NULL"}}, "0.375", ""},
	{"corr", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"2", "4.5"}, {"3", "5.9"}}, "0.9869991784743986", ""},
	{"covar_pop", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"2", "4.5"}, {"3", "5.9"}}, "1.3000000000000005", ""},
	{"covar_samp", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"2", "4.5"}, {"3", "5.9"}}, "1.9500000000000006", ""},
	{"regr_slope", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"2", "4.5"}, {"3", "5.9"}}, "0.49957301451750635", ""},
	{"regr_intercept", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"2", "4.5"}, {"3", "5.9"}}, "-0.06490179333902606", ""},
	{"regr_count", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"2", "4.5"}, {"3", "5.9"}}, "3", ""},
	{"regr_r2", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"2", "4.5"}, {"3", "5.9"}}, "0.9741673783091377", ""},
	{"regr_avgx", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"2", "4.5"}, {"3", "5.9"}}, "4.133333333333334", ""},
	{"regr_avgy", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"2", "4.5"}, {"3", "5.9"}}, "2", ""},
	{"regr_sxx", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"2", "4.5"}, {"3", "5.9"}}, "7.80666666666667", ""},
	{"regr_syy", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"2", "4.5"}, {"3", "5.9"}}, "2", ""},
	{"regr_sxy", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"2", "4.5"}, {"3", "5.9"}}, "3.9000000000000012", ""},
	{"corr", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"1", "4.5"}}, "<NULL>", ""},
	{"covar_pop", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"1", "4.5"}}, "0", ""},
	{"covar_samp", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"1", "4.5"}}, "0", ""},
	{"regr_slope", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"1", "4.5"}}, "0", ""},
	{"regr_intercept", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"1", "4.5"}}, "1", ""},
	{"regr_count", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"1", "4.5"}}, "2", ""},
	{"regr_r2", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"1", "4.5"}}, "1", ""},
	{"regr_avgx", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"1", "4.5"}}, "3.25", ""},
	{"regr_avgy", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"1", "4.5"}}, "1", ""},
	{"regr_sxx", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"1", "4.5"}}, "3.125", ""},
	{"regr_syy", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"1", "4.5"}}, "0", ""},
	{"regr_sxy", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"1", "4.5"}}, "0", ""},
	{"corr", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"3", "2"}}, "<NULL>", ""},
	{"covar_pop", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"3", "2"}}, "0", ""},
	{"covar_samp", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"3", "2"}}, "0", ""},
	{"regr_slope", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"3", "2"}}, "<NULL>", ""},
	{"regr_intercept", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"3", "2"}}, "<NULL>", ""},
	{"regr_count", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"3", "2"}}, "2", ""},
	{"regr_r2", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"3", "2"}}, "<NULL>", ""},
	{"regr_avgx", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"3", "2"}}, "2", ""},
	{"regr_avgy", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"3", "2"}}, "2", ""},
	{"regr_sxx", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"3", "2"}}, "0", ""},
	{"regr_syy", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"3", "2"}}, "2", ""},
	{"regr_sxy", []string{"double precision", "double precision"}, [][]string{{"1", "2"}, {"3", "2"}}, "0", ""},
	{"corr", []string{"double precision", "double precision"}, [][]string{{"1", "2"}}, "<NULL>", ""},
	{"covar_pop", []string{"double precision", "double precision"}, [][]string{{"1", "2"}}, "0", ""},
	{"covar_samp", []string{"double precision", "double precision"}, [][]string{{"1", "2"}}, "<NULL>", ""},
	{"regr_slope", []string{"double precision", "double precision"}, [][]string{{"1", "2"}}, "<NULL>", ""},
	{"regr_intercept", []string{"double precision", "double precision"}, [][]string{{"1", "2"}}, "<NULL>", ""},
	{"regr_count", []string{"double precision", "double precision"}, [][]string{{"1", "2"}}, "1", ""},
	{"regr_r2", []string{"double precision", "double precision"}, [][]string{{"1", "2"}}, "<NULL>", ""},
	{"regr_avgx", []string{"double precision", "double precision"}, [][]string{{"1", "2"}}, "2", ""},
	{"regr_avgy", []string{"double precision", "double precision"}, [][]string{{"1", "2"}}, "1", ""},
	{"regr_sxx", []string{"double precision", "double precision"}, [][]string{{"1", "2"}}, "0", ""},
	{"regr_syy", []string{"double precision", "double precision"}, [][]string{{"1", "2"}}, "0", ""},
	{"regr_sxy", []string{"double precision", "double precision"}, [][]string{{"1", "2"}}, "0", ""},
	{"corr", []string{"double precision", "double precision"}, [][]string{{"NULL", "2"}, {"5", "NULL"}, {"1", "1"}, {"2", "3"}, {"4", "4"}, {"8", "5.5"}}, "0.9341665671518852", ""},
	{"covar_pop", []string{"double precision", "double precision"}, [][]string{{"NULL", "2"}, {"5", "NULL"}, {"1", "1"}, {"2", "3"}, {"4", "4"}, {"8", "5.5"}}, "4.09375", ""},
	{"covar_samp", []string{"double precision", "double precision"}, [][]string{{"NULL", "2"}, {"5", "NULL"}, {"1", "1"}, {"2", "3"}, {"4", "4"}, {"8", "5.5"}}, "5.458333333333333", ""},
	{"regr_slope", []string{"double precision", "double precision"}, [][]string{{"NULL", "2"}, {"5", "NULL"}, {"1", "1"}, {"2", "3"}, {"4", "4"}, {"8", "5.5"}}, "1.5321637426900585", ""},
	{"regr_intercept", []string{"double precision", "double precision"}, [][]string{{"NULL", "2"}, {"5", "NULL"}, {"1", "1"}, {"2", "3"}, {"4", "4"}, {"8", "5.5"}}, "-1.4210526315789478", ""},
	{"regr_count", []string{"double precision", "double precision"}, [][]string{{"NULL", "2"}, {"5", "NULL"}, {"1", "1"}, {"2", "3"}, {"4", "4"}, {"8", "5.5"}}, "4", ""},
	{"regr_r2", []string{"double precision", "double precision"}, [][]string{{"NULL", "2"}, {"5", "NULL"}, {"1", "1"}, {"2", "3"}, {"4", "4"}, {"8", "5.5"}}, "0.8726671751843377", ""},
	{"regr_avgx", []string{"double precision", "double precision"}, [][]string{{"NULL", "2"}, {"5", "NULL"}, {"1", "1"}, {"2", "3"}, {"4", "4"}, {"8", "5.5"}}, "3.375", ""},
	{"regr_avgy", []string{"double precision", "double precision"}, [][]string{{"NULL", "2"}, {"5", "NULL"}, {"1", "1"}, {"2", "3"}, {"4", "4"}, {"8", "5.5"}}, "3.75", ""},
	{"regr_sxx", []string{"double precision", "double precision"}, [][]string{{"NULL", "2"}, {"5", "NULL"}, {"1", "1"}, {"2", "3"}, {"4", "4"}, {"8", "5.5"}}, "10.6875", ""},
	{"regr_syy", []string{"double precision", "double precision"}, [][]string{{"NULL", "2"}, {"5", "NULL"}, {"1", "1"}, {"2", "3"}, {"4", "4"}, {"8", "5.5"}}, "28.75", ""},
	{"regr_sxy", []string{"double precision", "double precision"}, [][]string{{"NULL", "2"}, {"5", "NULL"}, {"1", "1"}, {"2", "3"}, {"4", "4"}, {"8", "5.5"}}, "16.375", ""},
	{"corr", []string{"double precision", "double precision"}, [][]string{{"1e300", "1"}, {"-1e300", "2"}}, "", "value out of range: overflow"},
	{"covar_pop", []string{"double precision", "double precision"}, [][]string{{"1e300", "1"}, {"-1e300", "2"}}, "", "value out of range: overflow"},
	{"covar_samp", []string{"double precision", "double precision"}, [][]string{{"1e300", "1"}, {"-1e300", "2"}}, "", "value out of range: overflow"},
	{"regr_slope", []string{"double precision", "double precision"}, [][]string{{"1e300", "1"}, {"-1e300", "2"}}, "", "value out of range: overflow"},
	{"regr_intercept", []string{"double precision", "double precision"}, [][]string{{"1e300", "1"}, {"-1e300", "2"}}, "", "value out of range: overflow"},
	{"regr_count", []string{"double precision", "double precision"}, [][]string{{"1e300", "1"}, {"-1e300", "2"}}, "2", ""},
	{"regr_r2", []string{"double precision", "double precision"}, [][]string{{"1e300", "1"}, {"-1e300", "2"}}, "", "value out of range: overflow"},
	{"regr_avgx", []string{"double precision", "double precision"}, [][]string{{"1e300", "1"}, {"-1e300", "2"}}, "", "value out of range: overflow"},
	{"regr_avgy", []string{"double precision", "double precision"}, [][]string{{"1e300", "1"}, {"-1e300", "2"}}, "", "value out of range: overflow"},
	{"regr_sxx", []string{"double precision", "double precision"}, [][]string{{"1e300", "1"}, {"-1e300", "2"}}, "", "value out of range: overflow"},
	{"regr_syy", []string{"double precision", "double precision"}, [][]string{{"1e300", "1"}, {"-1e300", "2"}}, "", "value out of range: overflow"},
	{"regr_sxy", []string{"double precision", "double precision"}, [][]string{{"1e300", "1"}, {"-1e300", "2"}}, "", "value out of range: overflow"},
	{"corr", []string{"double precision", "double precision"}, [][]string{{"Infinity", "1"}, {"1", "2"}, {"2", "2"}}, "NaN", ""},
	{"covar_pop", []string{"double precision", "double precision"}, [][]string{{"Infinity", "1"}, {"1", "2"}, {"2", "2"}}, "NaN", ""},
	{"covar_samp", []string{"double precision", "double precision"}, [][]string{{"Infinity", "1"}, {"1", "2"}, {"2", "2"}}, "NaN", ""},
	{"regr_slope", []string{"double precision", "double precision"}, [][]string{{"Infinity", "1"}, {"1", "2"}, {"2", "2"}}, "NaN", ""},
	{"regr_intercept", []string{"double precision", "double precision"}, [][]string{{"Infinity", "1"}, {"1", "2"}, {"2", "2"}}, "NaN", ""},
	{"regr_count", []string{"double precision", "double precision"}, [][]string{{"Infinity", "1"}, {"1", "2"}, {"2", "2"}}, "3", ""},
	{"regr_r2", []string{"double precision", "double precision"}, [][]string{{"Infinity", "1"}, {"1", "2"}, {"2", "2"}}, "NaN", ""},
	{"regr_avgx", []string{"double precision", "double precision"}, [][]string{{"Infinity", "1"}, {"1", "2"}, {"2", "2"}}, "1.6666666666666667", ""},
	{"regr_avgy", []string{"double precision", "double precision"}, [][]string{{"Infinity", "1"}, {"1", "2"}, {"2", "2"}}, "Infinity", ""},
	{"regr_sxx", []string{"double precision", "double precision"}, [][]string{{"Infinity", "1"}, {"1", "2"}, {"2", "2"}}, "0.6666666666666666", ""},
	{"regr_syy", []string{"double precision", "double precision"}, [][]string{{"Infinity", "1"}, {"1", "2"}, {"2", "2"}}, "NaN", ""},
	{"regr_sxy", []string{"double precision", "double precision"}, [][]string{{"Infinity", "1"}, {"1", "2"}, {"2", "2"}}, "NaN", ""},
	{"corr", []string{"double precision", "double precision"}, [][]string{{"0.1", "0.2"}, {"0.3", "0.5"}, {"0.7", "0.11"}, {"0.13", "0.17"}}, "-0.22368580945114094", ""},
	{"covar_pop", []string{"double precision", "double precision"}, [][]string{{"0.1", "0.2"}, {"0.3", "0.5"}, {"0.7", "0.11"}, {"0.13", "0.17"}}, "-0.008062499999999988", ""},
	{"covar_samp", []string{"double precision", "double precision"}, [][]string{{"0.1", "0.2"}, {"0.3", "0.5"}, {"0.7", "0.11"}, {"0.13", "0.17"}}, "-0.010749999999999984", ""},
	{"regr_slope", []string{"double precision", "double precision"}, [][]string{{"0.1", "0.2"}, {"0.3", "0.5"}, {"0.7", "0.11"}, {"0.13", "0.17"}}, "-0.3547854785478543", ""},
	{"regr_intercept", []string{"double precision", "double precision"}, [][]string{{"0.1", "0.2"}, {"0.3", "0.5"}, {"0.7", "0.11"}, {"0.13", "0.17"}}, "0.3944224422442243", ""},
	{"regr_count", []string{"double precision", "double precision"}, [][]string{{"0.1", "0.2"}, {"0.3", "0.5"}, {"0.7", "0.11"}, {"0.13", "0.17"}}, "4", ""},
	{"regr_r2", []string{"double precision", "double precision"}, [][]string{{"0.1", "0.2"}, {"0.3", "0.5"}, {"0.7", "0.11"}, {"0.13", "0.17"}}, "0.050035341349812135", ""},
	{"regr_avgx", []string{"double precision", "double precision"}, [][]string{{"0.1", "0.2"}, {"0.3", "0.5"}, {"0.7", "0.11"}, {"0.13", "0.17"}}, "0.245", ""},
	{"regr_avgy", []string{"double precision", "double precision"}, [][]string{{"0.1", "0.2"}, {"0.3", "0.5"}, {"0.7", "0.11"}, {"0.13", "0.17"}}, "0.3075", ""},
	{"regr_sxx", []string{"double precision", "double precision"}, [][]string{{"0.1", "0.2"}, {"0.3", "0.5"}, {"0.7", "0.11"}, {"0.13", "0.17"}}, "0.0909", ""},
	{"regr_syy", []string{"double precision", "double precision"}, [][]string{{"0.1", "0.2"}, {"0.3", "0.5"}, {"0.7", "0.11"}, {"0.13", "0.17"}}, "0.22867499999999985", ""},
	{"regr_sxy", []string{"double precision", "double precision"}, [][]string{{"0.1", "0.2"}, {"0.3", "0.5"}, {"0.7", "0.11"}, {"0.13", "0.17"}}, "-0.03224999999999995", ""},
	{"corr", []string{"double precision", "double precision"}, [][]string{}, "<NULL>", ""},
	{"covar_pop", []string{"double precision", "double precision"}, [][]string{}, "<NULL>", ""},
	{"covar_samp", []string{"double precision", "double precision"}, [][]string{}, "<NULL>", ""},
	{"regr_slope", []string{"double precision", "double precision"}, [][]string{}, "<NULL>", ""},
	{"regr_intercept", []string{"double precision", "double precision"}, [][]string{}, "<NULL>", ""},
	{"regr_count", []string{"double precision", "double precision"}, [][]string{}, "0", ""},
	{"regr_r2", []string{"double precision", "double precision"}, [][]string{}, "<NULL>", ""},
	{"regr_avgx", []string{"double precision", "double precision"}, [][]string{}, "<NULL>", ""},
	{"regr_avgy", []string{"double precision", "double precision"}, [][]string{}, "<NULL>", ""},
	{"regr_sxx", []string{"double precision", "double precision"}, [][]string{}, "<NULL>", ""},
	{"regr_syy", []string{"double precision", "double precision"}, [][]string{}, "<NULL>", ""},
	{"regr_sxy", []string{"double precision", "double precision"}, [][]string{}, "<NULL>", ""},
	{"bit_and", []string{"smallint"}, [][]string{{"12"}, {"10"}, {"NULL"}, {"7"}}, "0", ""},
	{"bit_or", []string{"smallint"}, [][]string{{"12"}, {"10"}, {"NULL"}, {"7"}}, "15", ""},
	{"bit_xor", []string{"smallint"}, [][]string{{"12"}, {"10"}, {"NULL"}, {"7"}}, "1", ""},
	{"bit_and", []string{"integer"}, [][]string{{"12"}, {"10"}, {"NULL"}, {"7"}}, "0", ""},
	{"bit_or", []string{"integer"}, [][]string{{"12"}, {"10"}, {"NULL"}, {"7"}}, "15", ""},
	{"bit_xor", []string{"integer"}, [][]string{{"12"}, {"10"}, {"NULL"}, {"7"}}, "1", ""},
	{"bit_and", []string{"bigint"}, [][]string{{"12"}, {"10"}, {"NULL"}, {"7"}}, "0", ""},
	{"bit_or", []string{"bigint"}, [][]string{{"12"}, {"10"}, {"NULL"}, {"7"}}, "15", ""},
	{"bit_xor", []string{"bigint"}, [][]string{{"12"}, {"10"}, {"NULL"}, {"7"}}, "1", ""},
}
