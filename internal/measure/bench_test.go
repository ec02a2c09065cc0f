package measure

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/outcome"
)

// benchSamples returns n samples ending in the first 100 ms after t0: two
// ops, latencies spread from 100 µs to about 10 ms, one in 50 failed.
func benchSamples(n int) []Sample {
	out := make([]Sample, n)
	for i := range out {
		lat := 0.1 + float64((i*7919)%1000)*0.01
		s := ok(i%2, float64(i%997)*0.1, lat, lat*0.8)
		if i%50 == 49 {
			s.Class = outcome.Timeout
		}
		s.Behind = i%100 == 0
		out[i] = s
	}
	return out
}

func benchCollector(b *testing.B, workers int) *Collector {
	c := newCollector(b, func(cfg *Config) { cfg.Workers = workers; cfg.Window = time.Hour })
	b.Cleanup(func() {
		if _, err := c.finish(at(float64(time.Hour / time.Millisecond))); err != nil {
			b.Error(err)
		}
	})
	return c
}

// BenchmarkRecord is the per-operation cost of Record on one worker.
func BenchmarkRecord(b *testing.B) {
	samples := benchSamples(1024)
	r := benchCollector(b, 1).Recorder(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r.Record(samples[i&1023])
	}
}

// BenchmarkRecordParallel records from GOMAXPROCS goroutines, each with its
// own recorder, as the runner's workers do.
func BenchmarkRecordParallel(b *testing.B) {
	samples := benchSamples(1024)
	c := benchCollector(b, runtime.GOMAXPROCS(0))
	var next atomic.Int32
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := c.Recorder(int(next.Add(1) - 1))
		i := 0
		for pb.Next() {
			r.Record(samples[i&1023])
			i++
		}
	})
}

// BenchmarkCloseWindow is the flusher's cost per window with 32 workers and
// 2 ops (64 samples per window), files included.
func BenchmarkCloseWindow(b *testing.B) {
	const workers = 32
	c := newCollector(b, func(cfg *Config) { cfg.Workers = workers })
	b.ReportAllocs()
	b.ResetTimer()
	for w := range b.N {
		base := float64(w * 100)
		for worker := range workers {
			r := c.Recorder(worker)
			r.Record(ok(0, base+float64(worker), 0.3+float64(worker)*0.01, 0.2))
			r.Record(ok(1, base+50, 1+float64(w%7), 0.8))
		}
		c.flushUntil(at(base + 100))
	}
	b.StopTimer()
	if _, err := c.finish(at(float64(b.N * 100))); err != nil {
		b.Error(err)
	}
}

// BenchmarkRecordWindows is Record in the steady state of a run: 100 ms
// windows of 1000 samples each, closed by the flusher between windows (the
// flush itself is not timed). Recycled slots must not allocate.
func BenchmarkRecordWindows(b *testing.B) {
	const perWindow = 1000
	samples := benchSamples(perWindow)
	c := newCollector(b, func(cfg *Config) { cfg.Workers = 1 })
	r := c.Recorder(0)
	b.ReportAllocs()
	b.ResetTimer()
	w := 0
	for i := range b.N {
		j := i % perWindow
		if j == 0 && i > 0 {
			b.StopTimer()
			c.flushUntil(at(float64(w*100 + 100)))
			w++
			b.StartTimer()
		}
		s := samples[j]
		shift := time.Duration(w) * 100 * time.Millisecond
		s.Intended, s.Started, s.Ended = s.Intended.Add(shift), s.Started.Add(shift), s.Ended.Add(shift)
		r.Record(s)
	}
	b.StopTimer()
	if _, err := c.finish(at(float64(w*100 + 100))); err != nil {
		b.Error(err)
	}
}
