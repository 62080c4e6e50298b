package cli

import (
	"strings"
	"testing"
)

// TestMatchTable: a table is found by namespace.name, by a name unique
// across namespaces, and a YSQL table ("schema:name" in "ysql:db") by its
// SQL name, schema-qualified or (in public) bare; an ambiguous or unknown
// name is refused with the candidates.
func TestMatchTable(t *testing.T) {
	tables := []tableRow{
		{Namespace: "system", Name: "transactions"},
		{Namespace: "workload", Name: "kv"},
		{Namespace: "ysql:yugabyte", Name: "public:bench_select"},
		{Namespace: "ysql:yugabyte", Name: "sales:orders"},
		{Namespace: "ysql:other", Name: "public:orders"},
		{Namespace: "ysql:yugabyte", Name: "public:kv"},
		{Namespace: "ysql:yugabyte", Name: "sales:invoices"},
	}
	for _, c := range []struct{ arg, ns, name, err string }{
		{arg: "workload.kv", ns: "workload", name: "kv"},
		{arg: "ysql:yugabyte.public:bench_select", ns: "ysql:yugabyte", name: "public:bench_select"},
		{arg: "transactions", ns: "system", name: "transactions"},
		{arg: "bench_select", ns: "ysql:yugabyte", name: "public:bench_select"},
		{arg: "public.bench_select", ns: "ysql:yugabyte", name: "public:bench_select"},
		{arg: "sales.orders", ns: "ysql:yugabyte", name: "sales:orders"},
		{arg: "public.orders", ns: "ysql:other", name: "public:orders"},
		{arg: "orders", ns: "ysql:other", name: "public:orders"}, // sales.orders is not in public
		{arg: "invoices", err: "not found"},
		{arg: "kv", err: "ambiguous: workload.kv, ysql:yugabyte.public:kv"},
		{arg: "nope", err: "not found"},
		{arg: "", err: "no table"},
	} {
		ns, name, err := matchTable(tables, c.arg)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %s.%s, %v; want an error with %q", c.arg, ns, name, err, c.err)
			}
			continue
		}
		if err != nil || ns != c.ns || name != c.name {
			t.Errorf("%q: %s.%s, %v; want %s.%s", c.arg, ns, name, err, c.ns, c.name)
		}
	}
}
