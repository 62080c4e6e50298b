package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shaledb/shaledb/internal/consensus"
)

// snapCollector exports fields of a snapshot S taken once per scrape: the
// node's components keep their own counters (plain atomics, no metrics
// library) and this reads them, so nothing is counted twice.
type snapCollector[S any] struct {
	snap   func() (S, bool)
	fields []field[S]
	hists  []histField[S]
	// extra emits labelled series that do not fit a field.
	extra     func(S, chan<- prometheus.Metric)
	extraDesc []*prometheus.Desc
}

type field[S any] struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	get  func(S) float64
}

type histField[S any] struct {
	desc *prometheus.Desc
	get  func(S) consensus.HistogramSnapshot
}

func name(subsystem, n string) string {
	return prometheus.BuildFQName(Namespace, subsystem, n)
}

func counter[S any](subsystem, n, help string, get func(S) float64) field[S] {
	return field[S]{desc: prometheus.NewDesc(name(subsystem, n), help, nil, nil), typ: prometheus.CounterValue, get: get}
}

func gauge[S any](subsystem, n, help string, get func(S) float64) field[S] {
	return field[S]{desc: prometheus.NewDesc(name(subsystem, n), help, nil, nil), typ: prometheus.GaugeValue, get: get}
}

func histogram[S any](subsystem, n, help string, get func(S) consensus.HistogramSnapshot) histField[S] {
	return histField[S]{desc: prometheus.NewDesc(name(subsystem, n), help, nil, nil), get: get}
}

// Describe implements prometheus.Collector.
func (c *snapCollector[S]) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range c.fields {
		ch <- f.desc
	}
	for _, h := range c.hists {
		ch <- h.desc
	}
	for _, d := range c.extraDesc {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *snapCollector[S]) Collect(ch chan<- prometheus.Metric) {
	s, ok := c.snap()
	if !ok {
		return
	}
	for _, f := range c.fields {
		ch <- prometheus.MustNewConstMetric(f.desc, f.typ, f.get(s))
	}
	for _, h := range c.hists {
		ch <- constHistogram(h.desc, h.get(s))
	}
	if c.extra != nil {
		c.extra(s, ch)
	}
}

// constHistogram converts a consensus histogram (durations) to a
// Prometheus histogram in seconds.
func constHistogram(d *prometheus.Desc, h consensus.HistogramSnapshot) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.Bounds))
	for i, b := range h.Bounds {
		buckets[b.Seconds()] = h.Counts[i]
	}
	return prometheus.MustNewConstHistogram(d, h.Count, h.Sum.Seconds(), buckets)
}
