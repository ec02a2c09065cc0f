package runner_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/runner"
)

// BenchmarkRunnerOverhead measures faultbench's own per-operation cost —
// workload choice, scheduling, per-op deadline, recording — against a
// driver that does nothing, closed loop on one worker.
func BenchmarkRunnerOverhead(b *testing.B) {
	wl := testWorkload(b, 100000)
	d := &countingDriver{}
	cfg := runner.Config{Phase: runner.Run, Threads: 1, OperationCount: int64(b.N)}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	res, _ := runWithB(b, context.Background(), cfg, wl, d)
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(res.Ops), "ns/op-wall")
}

// BenchmarkWakeLag measures the harness's own latency: how late an
// open-loop worker starts an operation after its intended start, at
// 10,000 ops/s on one worker against a driver that does nothing, per wake
// mode. It reports the wake-up lag's p50, p99 and max in µs, and the
// client CPU per operation (user+system), the price of spinning.
func BenchmarkWakeLag(b *testing.B) {
	for _, mode := range []runner.WakeMode{runner.WakeSpin, runner.WakeSleep} {
		b.Run(string(mode), func(b *testing.B) {
			wl := testWorkload(b, 100000)
			d := &countingDriver{}
			cfg := runner.Config{Phase: runner.Run, Threads: 1, Rate: 10000, OperationCount: int64(max(b.N, 2000)), Wake: mode}
			cpu0 := cpuTime()
			b.ResetTimer()
			res, tot := runWithB(b, context.Background(), cfg, wl, d)
			b.StopTimer()
			h := tot.All.Wake
			if h == nil || h.TotalCount() == 0 {
				b.Fatal("no operation waited for its intended start")
			}
			b.ReportMetric(float64(h.ValueAtQuantile(50)), "lag-p50-us")
			b.ReportMetric(float64(h.ValueAtQuantile(99)), "lag-p99-us")
			b.ReportMetric(float64(h.Max()), "lag-max-us")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(res.Ops), "cpu-us/op")
		})
	}
}

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
