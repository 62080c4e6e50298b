package pgwire

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// metricValue reads one series from reg: name with an optional label
// value (the first label); -1 when absent.
func metricValue(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label != "" && (len(m.GetLabel()) == 0 || m.GetLabel()[0].GetValue() != label) {
				continue
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	ts := startServer(t, newFakeEngine(), func(c *Config) { c.Registerer = reg })
	c := ts.connect(t)
	c.query("SELECT 1; FAIL 22012")
	c.query("FAIL 22001")
	c.query("BADSYNTAX")
	for _, m := range []struct {
		name, label string
		want        float64
	}{
		{"shale_ysql_connections_open", "", 1},
		{"shale_ysql_connections_total", "", 1},
		{"shale_ysql_queries_total", "", 4},
		{"shale_ysql_errors_total", "22", 2},
		{"shale_ysql_errors_total", "42", 1},
	} {
		if got := metricValue(t, reg, m.name, m.label); got != m.want {
			t.Errorf("%s{%s} = %v, want %v", m.name, m.label, got, m.want)
		}
	}
	// A second server on the same registry is refused, not double-counted.
	if _, err := NewServer(Config{Engine: ts.eng, Registerer: reg}); err == nil {
		t.Error("duplicate registration accepted")
	}
}
