package workload

import (
	"sync/atomic"
	"testing"
)

// BenchmarkThreadNext measures one run-phase Next (+Done) per iteration.
// The key string is the only allocation expected (1 alloc/op).
func BenchmarkThreadNext(b *testing.B) {
	for _, file := range []string{"workloada", "workloadb", "workloadd", "workloade", "workloadf", "apm-w", "thumbtack"} {
		b.Run(file, func(b *testing.B) {
			p := loadProps(b, file, "recordcount=100000")
			w, err := New(p)
			if err != nil {
				b.Fatal(err)
			}
			th := w.NewThread(0, 1)
			var op Op
			b.ReportAllocs()
			for b.Loop() {
				th.Next(&op)
				th.Done(&op, true)
			}
		})
	}
}

// BenchmarkThreadNextLoad measures one load-phase insert (10 x 100 bytes).
func BenchmarkThreadNextLoad(b *testing.B) {
	p := loadProps(b, "workloada", "recordcount=1000000000")
	w, err := New(p)
	if err != nil {
		b.Fatal(err)
	}
	th := w.NewThread(0, 1)
	var op Op
	b.ReportAllocs()
	for b.Loop() {
		if !th.NextLoad(&op) {
			b.Fatal("load sequence exhausted")
		}
	}
}

// BenchmarkThreadNextParallel runs workloadd (latest, with inserts) on GOMAXPROCS threads sharing
// one Workload.
func BenchmarkThreadNextParallel(b *testing.B) {
	p := loadProps(b, "workloadd", "recordcount=100000")
	w, err := New(p)
	if err != nil {
		b.Fatal(err)
	}
	var id atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		th := w.NewThread(int(id.Add(1)), 1)
		var op Op
		for pb.Next() {
			th.Next(&op)
			th.Done(&op, true)
		}
	})
}
