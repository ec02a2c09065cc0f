package runner_test

import (
	"context"
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
