package runner_test

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/driver"
	redisdriver "github.com/faultbench/faultbench/internal/driver/redis"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/workload"
)

// redisInFlight is the real Redis driver with the calls inside it counted
// (inFlightDriver's count, the database answering for real).
type redisInFlight struct {
	driver.Driver
	count *inFlightDriver // its counters only; answer nil
}

func (d redisInFlight) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	defer d.enter()()
	return d.Driver.Read(ctx, table, key, fields)
}
func (d redisInFlight) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	defer d.enter()()
	return d.Driver.Update(ctx, table, key, values)
}

func (d redisInFlight) enter() func() {
	c := d.count
	c.calls.Add(1)
	n := c.inFlight.Add(1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			break
		}
	}
	return func() { c.inFlight.Add(-1); c.ended.Add(1) }
}

// TestBusyPoolSaturatesRedis: a real Redis is stopped (SIGSTOP) for 1.5 s
// of an open-loop run whose 4 threads share a pool of 4 connections, the
// attempts timing out after 50 ms. With runner.timeout.busy the timed-out
// calls keep their connections until Redis answers (after SIGCONT): the
// calls in the driver grow past the pool's 4 connections (the rest wait
// for one: the pool blocks), and they are answered once Redis resumes.
// The negative control, the option off: a timed-out call closes its
// connection and returns, never more calls in the driver than threads.
func TestBusyPoolSaturatesRedis(t *testing.T) {
	c := startRedis(t)
	const threads, pool = 4, 4
	pid := c.Nodes[0].PID
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	for _, tc := range []struct {
		name string
		busy bool
	}{
		{"busy on: the pool fills with timed-out calls", true},
		{"negative control, busy off: timed-out calls give their connections up", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := properties.New()
			for k, v := range map[string]string{
				"recordcount": "200", "readproportion": "0.5", "updateproportion": "0.5", "requestdistribution": "uniform",
				"redis.addr": c.Nodes[0].Addr, "redis.poolsize": strconv.Itoa(pool), "threadcount": strconv.Itoa(threads), "seed": "1",
			} {
				p.Set(k, v)
			}
			wl, err := workload.New(p)
			if err != nil {
				t.Fatal(err)
			}
			rd, err := redisdriver.New(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			d := redisInFlight{Driver: rd, count: &inFlightDriver{}}
			stopped := make(chan struct{})
			go func() {
				defer close(stopped)
				time.Sleep(time.Second)
				_ = syscall.Kill(pid, syscall.SIGSTOP)
				time.Sleep(1500 * time.Millisecond)
				_ = syscall.Kill(pid, syscall.SIGCONT)
			}()
			cfg := runner.Config{Phase: runner.Run, Threads: threads, Rate: 200, Duration: 4 * time.Second, OpTimeout: 50 * time.Millisecond,
				Seed: 1, Wake: runner.WakeSleep, Busy: runner.Busy{Enabled: tc.busy}}
			res, tot, err := runBusy(t, cfg, wl, d, nil)
			<-stopped
			if err != nil {
				t.Fatal(err)
			}
			peak := d.count.peak.Load()
			t.Logf("calls in the driver at most %d (pool %d, threads %d), abandoned %d (at most %d at once), ok %d, errors %v",
				peak, pool, threads, res.Abandoned, res.BusyPeak, tot.All.OK, tot.All.Errors)
			if n := d.count.inFlight.Load(); n != 0 {
				t.Errorf("%d calls still in the driver after Run returned", n)
			}
			if tc.busy {
				if peak <= pool || res.Abandoned == 0 || res.BusyPeak == 0 {
					t.Errorf("busy on: %d calls in the driver at most, %d abandoned; want more calls than the pool's %d connections", peak, res.Abandoned, pool)
				}
				return
			}
			if peak > threads || res.Abandoned != 0 {
				t.Errorf("busy off: %d calls in the driver at most, %d abandoned; want at most the %d threads' own", peak, res.Abandoned, threads)
			}
			if tot.All.Errors[outcome.Timeout] == 0 {
				t.Error("busy off: no operation timed out: the stall did not happen")
			}
		})
	}
}
