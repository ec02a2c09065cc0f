package runner_test

import (
	"context"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/faultbench/faultbench/internal/driver"
	redisdriver "github.com/faultbench/faultbench/internal/driver/redis"
	"github.com/faultbench/faultbench/internal/launcher"
	redislauncher "github.com/faultbench/faultbench/internal/launcher/redis"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/workload"
)

// startRedis starts one real redis-server through the standalone launcher.
func startRedis(t *testing.T) *launcher.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed (make test installs it via scripts/setup.sh)")
	}
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := redislauncher.StandaloneLauncher{}.Up(ctx, env, launcher.Spec{Nodes: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := launcher.Down(ctx, c, 5*time.Second); err != nil {
			t.Error(err)
		}
	})
	return c
}

type rig struct {
	wl  *workload.Workload
	drv driver.Driver
}

func newRig(t *testing.T, c *launcher.Cluster, threads int, records int) *rig {
	t.Helper()
	p := properties.New()
	for k, v := range map[string]string{
		"recordcount": strconv.Itoa(records), "readproportion": "0.5", "updateproportion": "0.5",
		"requestdistribution": "uniform", "redis.addr": c.Nodes[0].Addr, "threadcount": strconv.Itoa(threads), "seed": "1",
	} {
		p.Set(k, v)
	}
	wl, err := workload.New(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := redisdriver.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	r := &rig{wl: wl, drv: d}
	// load the records
	res, tot := r.run(t, runner.Config{Phase: runner.Load, Threads: threads}, time.Second)
	if res.Reason != "load complete" || tot.Ops[workload.Insert].OK != int64(records) {
		t.Fatalf("load: %+v, %d inserts", res, tot.Ops[workload.Insert].OK)
	}
	return r
}

func (r *rig) run(t *testing.T, cfg runner.Config, window time.Duration) (runner.Result, *measure.Totals) {
	t.Helper()
	start := time.Now()
	col, err := measure.NewCollector(measure.Config{Dir: t.TempDir(), Ops: workload.OpNames(), Window: window, Start: start, Warmup: cfg.Warmup, Workers: cfg.Threads})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { col.Run(ctx); close(done) }()
	ru := &runner.Runner{Config: cfg, Workload: r.wl, Driver: r.drv, Collector: col, Start: start}
	res, err := ru.Run(context.Background())
	cancel()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	tot, err := col.Close()
	if err != nil {
		t.Fatal(err)
	}
	return res, tot
}

// countAbove returns how many recorded values exceed v (µs).
func countAbove(h *hdrhistogram.Histogram, v int64) int64 {
	var n int64
	for _, b := range h.Distribution() {
		if b.From > v {
			n += b.Count
		}
	}
	return n
}

// TestOpenLoopAccuracy: at -target 2000 against a real Redis, the achieved
// throughput is within 1 % of the target over 30 s.
func TestOpenLoopAccuracy(t *testing.T) {
	c := startRedis(t)
	r := newRig(t, c, 16, 1000)
	const rate, secs = 2000.0, 30
	res, tot := r.run(t, runner.Config{Phase: runner.Run, Threads: 16, Rate: rate, Duration: secs * time.Second}, time.Second)
	if res.Reason != "duration" {
		t.Fatalf("run ended by %s", res.Reason)
	}
	got := float64(tot.All.OK) / (secs)
	if got < rate*0.99 || got > rate*1.01 {
		t.Errorf("achieved %.1f ops/s over %d s, want %.0f ± 1 %% (ok %d, errors %v, dropped %d)", got, secs, rate, tot.All.OK, tot.All.Errors, res.Dropped)
	}
	t.Logf("achieved %.2f ops/s (target %.0f), p99 %d µs, behind %d", got, rate, tot.All.Intended.ValueAtQuantile(99), tot.All.Behind)
}

// TestNoCoordinatedOmission: the server is paused by SIGSTOP for 2 s during
// an open-loop run. Every operation due during the pause must show the
// stall in its latency: the max is at least 2 s, about rate x 1 s
// operations (those due in the pause's first second) waited more than 1 s,
// and about rate x 1.5 s waited more than 0.5 s. A tool with coordinated
// omission would show one slow operation per thread.
func TestNoCoordinatedOmission(t *testing.T) {
	c := startRedis(t)
	r := newRig(t, c, 16, 1000)
	const rate = 1000.0
	pid := c.Nodes[0].PID
	go func() {
		time.Sleep(3 * time.Second)
		_ = syscall.Kill(pid, syscall.SIGSTOP)
		time.Sleep(2 * time.Second)
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}()
	res, tot := r.run(t, runner.Config{Phase: runner.Run, Threads: 16, Rate: rate, Duration: 9 * time.Second}, 100*time.Millisecond)
	h := tot.All.Intended
	maxUs := h.Max()
	over1s := countAbove(h, 1_000_000)
	over500ms := countAbove(h, 500_000)
	t.Logf("max %d µs, >1s: %d, >500ms: %d, behind %d, ok %d, dropped %d", maxUs, over1s, over500ms, tot.All.Behind, tot.All.OK, res.Dropped)
	if maxUs < 2_000_000 {
		t.Errorf("max latency %d µs, want ≥ 2 s", maxUs)
	}
	if lo, hi := int64(rate*1*0.7), int64(rate*1*1.5); over1s < lo || over1s > hi {
		t.Errorf("%d operations above 1 s, want about %.0f (%d..%d)", over1s, rate, lo, hi)
	}
	// those due in the first 1.5 s of the pause waited more than 0.5 s
	if lo, hi := int64(rate*1.5*0.7), int64(rate*1.5*1.4); over500ms < lo || over500ms > hi {
		t.Errorf("%d operations above 500 ms, want about %.0f (%d..%d)", over500ms, rate*1.5, lo, hi)
	}
	if tot.All.Service.Max() < 1_000_000 {
		// the operations in flight when the server stopped took the whole pause as service time
		t.Errorf("service-time max %d µs: the in-flight operations should have waited out the pause", tot.All.Service.Max())
	}
}
