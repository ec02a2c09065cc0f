package runner_test

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/driver"
	redisdriver "github.com/faultbench/faultbench/internal/driver/redis"
	"github.com/faultbench/faultbench/internal/launcher"
	redislauncher "github.com/faultbench/faultbench/internal/launcher/redis"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/workload"
)

// windows100k runs wl against d open loop at 100,000 ops/s for 2 s (or
// b.N operations' worth when longer) with 10 ms windows, and reports what
// the issue asks of the recorder at that rate: the achieved rate, the
// operations dropped (due, never started: the workers fell behind), the
// samples that reached an already closed window (late), and the windows.
// Every completed operation must be in a window: that it fails on.
func windows100k(b *testing.B, wl *workload.Workload, d driver.Driver, threads int) {
	const rate = 100_000
	dur := max(2*time.Second, time.Duration(b.N)*time.Second/rate)
	start := time.Now()
	col, err := measure.NewCollector(measure.Config{Dir: b.TempDir(), Ops: workload.OpNames(), Window: 10 * time.Millisecond, Start: start, Workers: threads})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { col.Run(ctx); close(done) }()
	cpu0 := cpuTime()
	b.ResetTimer()
	r := &runner.Runner{Config: runner.Config{Phase: runner.Run, Threads: threads, Rate: rate, Duration: dur}, Workload: wl, Driver: d, Collector: col, Start: start}
	res, err := r.Run(context.Background())
	b.StopTimer()
	cpu := cpuTime() - cpu0
	cancel()
	<-done
	if err != nil {
		b.Fatal(err)
	}
	tot, err := col.Close()
	if err != nil {
		b.Fatal(err)
	}
	recorded := tot.All.OK
	for _, n := range tot.All.Errors {
		recorded += n
	}
	windows, inWindows := 0, int64(0)
	rows, err := col.Windows()
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range rows {
		if w.Op != measure.AllOps {
			continue
		}
		windows++
		inWindows += w.OK
		for _, n := range w.Errors {
			inWindows += n
		}
	}
	// (operations in flight at the deadline are cut: in neither, counted apart)
	if want := res.Ops; recorded != want || inWindows != want {
		b.Fatalf("%d operations completed before the deadline, %d in the totals, %d in the windows: samples lost", want, recorded, inWindows)
	}
	el := res.End.Sub(res.Start).Seconds()
	b.ReportMetric(float64(res.Ops)/el, "ops/s")
	b.ReportMetric(float64(res.Dropped), "dropped")
	b.ReportMetric(float64(tot.Late), "late")
	b.ReportMetric(float64(res.Behind), "behind")
	b.ReportMetric(float64(res.CutCount()), "cut")
	b.ReportMetric(float64(windows), "windows")
	b.ReportMetric(float64(cpu.Microseconds())/float64(res.Ops), "cpu-us/op")
}

// BenchmarkWindows100k records 10 ms windows at 100,000 ops/s against a
// driver that does nothing (the harness alone):
//
//	go test -run XXX -bench Windows100k -benchtime 1x ./internal/runner/
func BenchmarkWindows100k(b *testing.B) {
	for _, threads := range []int{4, 16} {
		b.Run("noop/threads="+strconv.Itoa(threads), func(b *testing.B) {
			windows100k(b, testWorkload(b, 100000), &countingDriver{}, threads)
		})
	}
}

// BenchmarkWindows100kRedis is the same against a real redis-server
// (10,000 records, workload A's mix, uniform keys), 64 workers: on a
// machine where the server cannot serve 100,000 ops/s the workers fall
// behind, which the dropped and behind counts show; no sample may be lost
// either way.
//
//	go test -run XXX -bench Windows100kRedis -benchtime 1x ./internal/runner/
func BenchmarkWindows100kRedis(b *testing.B) {
	if testing.Short() {
		b.Skip("starts redis-server")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		b.Skip("redis-server not installed (scripts/setup.sh installs it)")
	}
	env, err := launcher.NewEnv()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := redislauncher.StandaloneLauncher{}.Up(ctx, env, launcher.Spec{Nodes: 1, Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = launcher.Down(ctx, c, 5*time.Second)
	})
	const threads, records = 64, 10000
	p := properties.New()
	for k, v := range map[string]string{
		"recordcount": strconv.Itoa(records), "readproportion": "0.5", "updateproportion": "0.5",
		"requestdistribution": "uniform", "redis.addr": c.Nodes[0].Addr, "threadcount": strconv.Itoa(threads), "seed": "1",
	} {
		p.Set(k, v)
	}
	wl, err := workload.New(p)
	if err != nil {
		b.Fatal(err)
	}
	d, err := redisdriver.New(ctx, p)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if res, _ := runWithB(b, ctx, runner.Config{Phase: runner.Load, Threads: 16}, wl, d); res.Reason != "load complete" {
		b.Fatalf("load: %+v", res)
	}
	windows100k(b, wl, d, threads)
}
