package runner_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/workload"
)

// flakyDriver fails the first failFirst calls of every operation's
// attempts (counted over the whole run) after delay, then answers.
type flakyDriver struct {
	countingDriver
	calls     atomic.Int64
	failFirst int64 // < 0: always fail
	delay     time.Duration
}

func (d *flakyDriver) attempt(ctx context.Context) error {
	n := d.calls.Add(1)
	if d.delay > 0 {
		select {
		case <-time.After(d.delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if d.failFirst < 0 || n <= d.failFirst {
		return outcome.Classified(outcome.Unavailable, "read", errors.New("no leader"))
	}
	return nil
}
func (d *flakyDriver) Read(ctx context.Context, _, _ string, _ []string) (map[string][]byte, error) {
	return nil, d.attempt(ctx)
}
func (d *flakyDriver) Update(ctx context.Context, _, _ string, _ map[string][]byte) error {
	return d.attempt(ctx)
}

// runRetry runs ops operations on one thread with policy r and returns the
// result, the totals and the RETRY series' totals.
func runRetry(t *testing.T, d *flakyDriver, r runner.Retry, ops int64) (runner.Result, *measure.Totals, measure.OpTotals) {
	t.Helper()
	cfg := runner.Config{Phase: runner.Run, Threads: 1, OperationCount: ops, Retry: r, OpTimeout: time.Second}
	start := time.Now()
	names := runner.MeasureOps(workload.OpNames(), cfg)
	col, err := measure.NewCollector(measure.Config{Dir: t.TempDir(), Ops: names, Window: 100 * time.Millisecond, Start: start, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { col.Run(cctx); close(done) }()
	rn := &runner.Runner{Config: cfg, Workload: testWorkload(t, 100), Driver: d, Collector: col, Start: start}
	res, err := rn.Run(context.Background())
	cancel()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	tot, err := col.Close()
	if err != nil {
		t.Fatal(err)
	}
	var retry measure.OpTotals
	if names[len(names)-1] == measure.RetryOp {
		retry = tot.Ops[len(names)-1]
	}
	return res, tot, retry
}

func errCount(o measure.OpTotals) int64 {
	var n int64
	for _, v := range o.Errors {
		n += v
	}
	return n
}

// TestRetryPolicies: every attempt reaches the driver and every retried
// attempt is in the RETRY series, outside ALL; ALL counts operations by
// their final outcome. The budget bounds retries below immediate's.
func TestRetryPolicies(t *testing.T) {
	tests := []struct {
		name        string
		retry       runner.Retry
		failFirst   int64
		wantCalls   int64 // driver calls; -1: check bounds below
		wantRetries int64
		wantOK      int64
	}{
		{"none: one attempt each", runner.Retry{Policy: runner.RetryNone}, -1, 10, 0, 0},
		{"immediate, always failing: 1+3 attempts each", runner.DefaultRetry(runner.RetryImmediate), -1, 40, 30, 0},
		{"immediate, first two attempts fail: the first operation succeeds on its third", runner.DefaultRetry(runner.RetryImmediate), 2, 12, 2, 10},
		{"backoff, always failing", runner.Retry{Policy: runner.RetryBackoff, Max: 2, Base: time.Millisecond, Cap: 2 * time.Millisecond}, -1, 30, 20, 0},
		// tokens 10, half 5: a failed attempt takes one while more than 5 are left
		{"budget, always failing: 4 retries before the bucket is at half", runner.DefaultRetry(runner.RetryBudget), -1, 14, 4, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &flakyDriver{failFirst: tc.failFirst}
			res, tot, retry := runRetry(t, d, tc.retry, 10)
			if got := d.calls.Load(); got != tc.wantCalls {
				t.Errorf("driver calls %d, want %d", got, tc.wantCalls)
			}
			if res.Retries != tc.wantRetries || retry.OK+errCount(retry) != tc.wantRetries {
				t.Errorf("retries %d, RETRY series %d, want %d", res.Retries, retry.OK+errCount(retry), tc.wantRetries)
			}
			if retry.Errors[outcome.Unavailable] != tc.wantRetries {
				t.Errorf("RETRY series by class %v: want %d unavailable", retry.Errors, tc.wantRetries)
			}
			if tot.All.OK != tc.wantOK || tot.All.OK+errCount(tot.All) != 10 {
				t.Errorf("ALL: ok %d, errors %d; want %d operations, %d ok (retries are not operations)", tot.All.OK, errCount(tot.All), 10, tc.wantOK)
			}
		})
	}
}

// TestRetryLatencyFromFirstStart: an operation that succeeds on its third
// attempt has the latency of all three (no coordinated omission).
func TestRetryLatencyFromFirstStart(t *testing.T) {
	const delay = 20 * time.Millisecond
	d := &flakyDriver{failFirst: 2, delay: delay}
	_, tot, _ := runRetry(t, d, runner.DefaultRetry(runner.RetryImmediate), 1)
	var h = tot.All.Intended
	if h == nil || h.TotalCount() != 1 {
		t.Fatalf("want one successful operation, got %v", h)
	}
	lat := time.Duration(h.Max()) * time.Microsecond
	if lat < 3*delay {
		t.Errorf("latency %v, want at least the three attempts' %v", lat, 3*delay)
	}
	// The service time is the last attempt's alone: the two failed attempts
	// before it took at least delay each, whatever the machine's load, so it
	// is at most the latency less 2*delay (1 ms for the histograms' rounding).
	// Timed from the first attempt it would be the latency itself.
	if svc := time.Duration(tot.All.Service.Max()) * time.Microsecond; svc > lat-2*delay+time.Millisecond {
		t.Errorf("service time %v with latency %v: want the last attempt's only (at most the latency less the two failed attempts' %v)", svc, lat, 2*delay)
	}
}

// TestSpike: during the spike the open-loop schedule is factor times as
// dense; the operations due over the run are counted exactly (done,
// dropped or cut), whatever the machine's speed.
func TestSpike(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spike runner.Spike
		want  int64 // 100 ops/s for 2 s, plus 300 ops/s more for 0.5 s
	}{
		{"no spike", runner.Spike{}, 200},
		{"x4 for 0.5 s", runner.Spike{At: 500 * time.Millisecond, Duration: 500 * time.Millisecond, Factor: 4}, 350},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := runner.Config{Phase: runner.Run, Threads: 2, Rate: 100, Duration: 2 * time.Second, Spike: tc.spike, Wake: runner.WakeSleep}
			res, _ := runWith(t, context.Background(), cfg, testWorkload(t, 100), &countingDriver{}, nil)
			got := res.Ops + res.Dropped + res.CutCount()
			if got < tc.want-4 || got > tc.want+4 {
				t.Errorf("operations due %d (done %d, dropped %d), want %d", got, res.Ops, res.Dropped, tc.want)
			}
		})
	}
}

func TestReadClient(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     map[string]string
		want    string // Retry.String(); "" when an error is wanted
		wantErr string
	}{
		{"default none", nil, "none", ""},
		{"backoff", map[string]string{"runner.retry": "backoff", "runner.retry.base": "5ms", "runner.retry.cap": "200ms", "runner.retry.max": "5"}, "backoff (max 5, base 5ms, cap 200ms, full jitter)", ""},
		{"budget", map[string]string{"runner.retry": "budget"}, "budget (max 3, tokens 10, ratio 0.1)", ""},
		{"unknown policy", map[string]string{"runner.retry": "forever"}, "", "runner.retry"},
		{"too many retries", map[string]string{"runner.retry": "immediate", "runner.retry.max": "1000"}, "", "runner.retry.max"},
		{"cap below base", map[string]string{"runner.retry": "backoff", "runner.retry.base": "1s", "runner.retry.cap": "10ms"}, "", "runner.retry.base"},
		{"bad ratio", map[string]string{"runner.retry": "budget", "runner.retry.budget.ratio": "2"}, "", "runner.retry.budget.ratio"},
		{"spike factor", map[string]string{"runner.spike.duration": "5s", "runner.spike.factor": "0"}, "", "runner.spike.factor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := properties.New()
			for k, v := range tc.set {
				p.Set(k, v)
			}
			r, _, err := runner.ReadClient(p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || r.String() != tc.want {
				t.Fatalf("ReadClient = %q, %v; want %q", r.String(), err, tc.want)
			}
		})
	}
}
