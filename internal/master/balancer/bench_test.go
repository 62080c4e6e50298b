package balancer

import "testing"

// BenchmarkPlanBalanced plans for a settled cluster of 12 tservers and
// 4,000 RF3 tablets: the master's common case.
func BenchmarkPlanBalanced(b *testing.B) {
	c := &cluster{}
	var on []uint64
	for id := uint64(1); id <= 12; id++ {
		c.s.TServers = append(c.s.TServers, TServer{ID: id, Live: true})
		on = append(on, id)
	}
	for table := uint64(1); table <= 40; table++ {
		for i := 0; i < 100; i++ {
			t := Tablet{ID: table*1000 + uint64(i), TableID: table, RF: 3}
			for j := 0; j < 3; j++ {
				t.Replicas = append(t.Replicas, Replica{TServer: on[(int(table)+i*3+j)%len(on)]})
			}
			t.Leader = t.Replicas[i%3].TServer
			c.s.Tablets = append(c.s.Tablets, t)
		}
	}
	for len(Plan(c.s, c.opts)) > 0 {
		c.round()
	}
	b.ResetTimer()
	for b.Loop() {
		Plan(c.s, c.opts)
	}
}
