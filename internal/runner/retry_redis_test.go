package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/metastable"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/workload"
)

// stuckAfter is a test-only stuck database: the real driver until from,
// then every call waits stall first (or until its deadline).
type stuckAfter struct {
	driver.Driver
	from  time.Time
	stall time.Duration
}

func (d stuckAfter) wait(ctx context.Context) error {
	if time.Now().Before(d.from) {
		return nil
	}
	select {
	case <-time.After(d.stall):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (d stuckAfter) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	if err := d.wait(ctx); err != nil {
		return nil, err
	}
	return d.Driver.Read(ctx, table, key, fields)
}
func (d stuckAfter) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	if err := d.wait(ctx); err != nil {
		return err
	}
	return d.Driver.Update(ctx, table, key, values)
}

// runJudged runs cfg against d with the retry series and judges the
// windows after the load spike of cfg.
func runJudged(t *testing.T, wl *workload.Workload, d driver.Driver, cfg runner.Config, start time.Time) (*metastable.Verdict, runner.Result) {
	t.Helper()
	col, err := measure.NewCollector(measure.Config{Dir: t.TempDir(), Ops: runner.MeasureOps(workload.OpNames(), cfg), Window: 250 * time.Millisecond, Start: start, Workers: cfg.Threads})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { col.Run(ctx); close(done) }()
	res, err := (&runner.Runner{Config: cfg, Workload: wl, Driver: d, Collector: col, Start: start}).Run(context.Background())
	cancel()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if _, err := col.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := col.Windows()
	if err != nil {
		t.Fatal(err)
	}
	trig, ok := metastable.TriggerFrom(cfg.Warmup+cfg.Spike.At, cfg.Spike.Duration, cfg.Spike.Factor, nil)
	if !ok {
		t.Fatal("no trigger")
	}
	// thresholds wide enough for a loaded 2-core machine: the verdict
	// turns on the stuck database, not on noise
	return metastable.Judge(rows, trig, metastable.Params{LatencyTarget: 300 * time.Millisecond, Hold: time.Second}), res
}

// TestMetastabilityVerdictRedis: against a real Redis a load spike (x2 for
// 1 s at 400 ops/s) is recovered from, with backoff retries on; the
// negative control, the same run whose database gets stuck when the spike
// starts (every call stalls past the 20 ms attempt timeout) with
// immediate retries, is judged metastable, with the failed attempts in the
// retry series.
func TestMetastabilityVerdictRedis(t *testing.T) {
	c := startRedis(t)
	r := newRig(t, c, 8, 1000)
	spike := runner.Spike{At: 2 * time.Second, Duration: time.Second, Factor: 2}
	base := runner.Config{Phase: runner.Run, Threads: 8, Rate: 400, Duration: 7 * time.Second, Spike: spike, Seed: 1, Wake: runner.WakeSleep}
	t.Run("recovered", func(t *testing.T) {
		cfg := base
		cfg.Retry = runner.DefaultRetry(runner.RetryBackoff)
		v, _ := runJudged(t, r.wl, r.drv, cfg, time.Now())
		if v.Verdict != metastable.Recovered || v.TimeToRecoverMs == nil {
			t.Fatalf("verdict %s: %s", v.Verdict, v.Reason)
		}
	})
	t.Run("negative control: a stuck database under immediate retries is metastable", func(t *testing.T) {
		cfg := base
		cfg.Retry = runner.DefaultRetry(runner.RetryImmediate)
		cfg.OpTimeout = 20 * time.Millisecond
		start := time.Now()
		d := stuckAfter{Driver: r.drv, from: start.Add(spike.At), stall: 50 * time.Millisecond}
		v, res := runJudged(t, r.wl, d, cfg, start)
		if v.Verdict != metastable.Metastable {
			t.Fatalf("verdict %s: %s", v.Verdict, v.Reason)
		}
		if res.Retries == 0 || v.RetriesAfterOps <= v.RetriesBeforeOps {
			t.Errorf("retries %d, %.1f/s before, %.1f/s after: want a retry storm after the trigger", res.Retries, v.RetriesBeforeOps, v.RetriesAfterOps)
		}
	})
}
