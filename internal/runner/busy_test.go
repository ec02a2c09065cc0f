package runner_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/workload"
)

// inFlightDriver counts the calls inside it (the connections a real
// driver would hold, or wait for) and their peak; a call waits for answer
// to close (a stalled database) or for its context.
type inFlightDriver struct {
	countingDriver
	answer       chan struct{} // nil: answer at once
	inFlight     atomic.Int64
	peak         atomic.Int64
	calls, ended atomic.Int64
}

func (d *inFlightDriver) call(ctx context.Context) error {
	d.calls.Add(1)
	n := d.inFlight.Add(1)
	defer func() { d.inFlight.Add(-1); d.ended.Add(1) }()
	for {
		p := d.peak.Load()
		if n <= p || d.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if d.answer == nil {
		return nil
	}
	select {
	case <-d.answer:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (d *inFlightDriver) Read(ctx context.Context, _, _ string, _ []string) (map[string][]byte, error) {
	return nil, d.call(ctx)
}
func (d *inFlightDriver) Update(ctx context.Context, _, _ string, _ map[string][]byte) error {
	return d.call(ctx)
}

// runBusy runs cfg against d with the collector's ops for cfg.
func runBusy(t *testing.T, cfg runner.Config, wl *workload.Workload, d driver.Driver, tr runner.Tracker) (runner.Result, *measure.Totals, error) {
	t.Helper()
	if wl == nil {
		wl = testWorkload(t, 100)
	}
	start := time.Now()
	col, err := measure.NewCollector(measure.Config{Dir: t.TempDir(), Ops: runner.MeasureOps(workload.OpNames(), cfg), Window: 100 * time.Millisecond, Start: start, Workers: cfg.Threads})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { col.Run(cctx); close(done) }()
	res, runErr := (&runner.Runner{Config: cfg, Workload: wl, Driver: d, Collector: col, Tracker: tr, Start: start}).Run(context.Background())
	cancel()
	<-done
	tot, err := col.Close()
	if err != nil {
		t.Fatal(err)
	}
	return res, tot, runErr
}

// TestBusyTimedOutCallsKeepGoing: against a database that never answers,
// one thread with immediate retries (3) makes 2 operations of 4 attempts,
// each timed out. With runner.timeout.busy every timed-out call goes on
// holding its connection and each retry takes a new one: 8 calls in the
// driver at once. The negative control, the option off: a timed-out call
// ends at its deadline, never more than the one thread's call in flight.
// Either way no call outlives the run.
func TestBusyTimedOutCallsKeepGoing(t *testing.T) {
	for _, tc := range []struct {
		name          string
		busy          runner.Busy
		wantPeak      int64 // calls in the driver at once
		wantAbandoned int64
	}{
		{"busy on: every timed-out attempt keeps its call", runner.Busy{Enabled: true, Max: 10}, 8, 8},
		{"busy on, bounded: no more than threads + max calls", runner.Busy{Enabled: true, Max: 2}, 3, 3},
		{"negative control, busy off: a timed-out call ends", runner.Busy{}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &inFlightDriver{answer: make(chan struct{})} // never answers
			cfg := runner.Config{Phase: runner.Run, Threads: 1, OperationCount: 2, OpTimeout: 20 * time.Millisecond,
				Retry: runner.DefaultRetry(runner.RetryImmediate), Busy: tc.busy}
			res, tot, err := runBusy(t, cfg, nil, d, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.peak.Load(); got != tc.wantPeak {
				t.Errorf("%d calls in flight at most, want %d", got, tc.wantPeak)
			}
			if res.Abandoned != tc.wantAbandoned || res.BusyPeak != tc.wantAbandoned {
				t.Errorf("abandoned %d, busy peak %d; want %d", res.Abandoned, res.BusyPeak, tc.wantAbandoned)
			}
			if n := d.inFlight.Load(); n != 0 {
				t.Errorf("%d calls still in the driver after Run returned", n)
			}
			if tot.All.OK != 0 || (tot.All.OK+errCount(tot.All)) != 2 {
				t.Errorf("totals %+v: want 2 operations, none OK", tot.All)
			}
		})
	}
}

// TestBusyAnsweredInTime: with the option on, an attempt the database
// answers before its deadline is an ordinary operation: all OK, nothing
// abandoned, one call per operation.
func TestBusyAnsweredInTime(t *testing.T) {
	d := &inFlightDriver{}
	cfg := runner.Config{Phase: runner.Run, Threads: 4, OperationCount: 400, OpTimeout: 10 * time.Second, Busy: runner.Busy{Enabled: true}}
	res, tot, err := runBusy(t, cfg, nil, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tot.All.OK != 400 || res.Abandoned != 0 || d.calls.Load() != 400 || d.peak.Load() > 4 {
		t.Errorf("ok %d, abandoned %d, calls %d, peak %d: want 400 OK, none abandoned, 400 calls, at most 4 at once", tot.All.OK, res.Abandoned, d.calls.Load(), d.peak.Load())
	}
}

// TestBusyLateAnswer: a call given up at its deadline is answered later;
// its operation stays a timeout and the worker went on meanwhile.
func TestBusyLateAnswer(t *testing.T) {
	d := &inFlightDriver{answer: make(chan struct{})}
	cfg := runner.Config{Phase: runner.Run, Threads: 1, OperationCount: 3, OpTimeout: 20 * time.Millisecond, Busy: runner.Busy{Enabled: true}}
	go func() {
		// answer once all three are in flight (the worker went on past each)
		for end := time.Now().Add(10 * time.Second); d.calls.Load() < 3 && time.Now().Before(end); {
			time.Sleep(time.Millisecond)
		}
		close(d.answer)
	}()
	res, tot, err := runBusy(t, cfg, nil, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.peak.Load() < 2 || res.Abandoned < 2 || (tot.All.OK+errCount(tot.All)) != 3 {
		t.Errorf("peak %d, abandoned %d, operations %d: want the calls to overlap", d.peak.Load(), res.Abandoned, (tot.All.OK + errCount(tot.All)))
	}
	if d.ended.Load() != 3 {
		t.Errorf("%d calls ended, want 3", d.ended.Load())
	}
}

// TestBusyRefused: the option does not go with a tracker (its calls would
// be reported after the worker's next operation).
func TestBusyRefused(t *testing.T) {
	cfg := runner.Config{Phase: runner.Run, Threads: 1, OperationCount: 1, Busy: runner.Busy{Enabled: true}}
	_, _, err := runBusy(t, cfg, nil, &inFlightDriver{}, &recTracker{})
	if err == nil || !strings.Contains(err.Error(), "runner.timeout.busy") {
		t.Fatalf("err %v, want the refusal naming runner.timeout.busy", err)
	}
	bad := runner.Config{Phase: runner.Run, Threads: 1, OperationCount: 1, Busy: runner.Busy{Enabled: true, Max: -1}}
	if err := bad.Validate(); err == nil {
		t.Error("a negative runner.timeout.busy.max validated")
	}
}

func TestReadBusy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     map[string]string
		want    runner.Busy
		wantErr string
	}{
		{"default off", nil, runner.Busy{}, ""},
		{"on", map[string]string{"runner.timeout.busy": "true"}, runner.Busy{Enabled: true}, ""},
		{"on with a bound", map[string]string{"runner.timeout.busy": "true", "runner.timeout.busy.max": "50"}, runner.Busy{Enabled: true, Max: 50}, ""},
		{"not a bool", map[string]string{"runner.timeout.busy": "sometimes"}, runner.Busy{}, "runner.timeout.busy"},
		{"negative bound", map[string]string{"runner.timeout.busy.max": "-3"}, runner.Busy{}, "runner.timeout.busy.max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := properties.New()
			for k, v := range tc.set {
				p.Set(k, v)
			}
			b, err := runner.ReadBusy(p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || b != tc.want {
				t.Fatalf("ReadBusy = %+v, %v; want %+v", b, err, tc.want)
			}
		})
	}
}
