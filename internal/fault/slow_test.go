package fault

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/cgroup"
	"github.com/faultbench/faultbench/internal/launcher"
)

// pingLoad runs PINGs against addr from conns connections for d and
// returns how many were answered.
func pingLoad(t *testing.T, addr string, conns int, d time.Duration) int64 {
	t.Helper()
	var n atomic.Int64
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			r := bufio.NewReader(c)
			const batch = 1 // one at a time: a system call each way per PING, as much for the server as for the client
			req := []byte(strings.Repeat("*1\r\n$4\r\nPING\r\n", batch))
			for time.Now().Before(end) {
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				if _, err := c.Write(req); err != nil {
					t.Error(err)
					return
				}
				for range batch {
					if _, err := r.ReadString('\n'); err != nil {
						t.Error(err)
						return
					}
				}
				n.Add(batch)
			}
		}()
	}
	wg.Wait()
	return n.Load()
}

// TestCPUThrottleRedis throttles a real redis-server to 10 % of a core
// under a PING load: the kernel throttles its cgroup and its throughput
// drops; restore removes the cgroup. The negative control is a throttle
// that does not bind (1000 %: ten cores): never throttled.
func TestCPUThrottleRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real redis-server")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not on PATH")
	}
	if _, err := openCgroups(cgroup.CPU); err != nil {
		t.Skip(err)
	}
	tests := []struct {
		name    string
		percent string
		binds   bool
	}{
		{"10 percent of a core", "10", true},
		{"1000 percent: the throttle does not bind", "1000", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			tg := upRedis(t, "throttle-test-redis", false)
			n := tg.Snapshot().Nodes[0]
			const window = 3 * time.Second
			before := pingLoad(t, n.Addr, 4, window)
			reg := NewRegistry()
			if _, err := ApplyStep(ctx, tg, reg, Step{Action: ActionCPUThrottle, Node: "n1", Params: map[string]string{"percent": tc.percent}}); err != nil {
				t.Fatal(err)
			}
			sys, err := cgroup.Open()
			if err != nil {
				t.Fatal(err)
			}
			g, err := sys.Find(cgroup.CPU, groupName(tg.Snapshot().Name, "n1"))
			if err != nil || g == nil {
				t.Fatalf("the node's cgroup: %v, %v", g, err)
			}
			st0, _ := g.Throttled()
			t0, c0 := time.Now(), procCPU(t, n.PID)
			during := pingLoad(t, n.Addr, 4, window)
			cpu := (procCPU(t, n.PID) - c0).Seconds() / time.Since(t0).Seconds() * 100
			st1, _ := g.Throttled()
			if _, err := ApplyStep(ctx, tg, reg, Step{Action: ActionRestore, Node: "n1"}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(g.Dir); !os.IsNotExist(err) {
				t.Errorf("cgroup %s still there after restore", g.Dir)
			}
			ratio := float64(during) / float64(max(before, 1))
			t.Logf("PINGs in %v: %d before, %d throttled to %s %% (ratio %.2f, the server's CPU %.1f %% of a core); throttled in %d of %d periods",
				window, before, during, tc.percent, ratio, cpu, st1.Throttled-st0.Throttled, st1.Periods-st0.Periods)
			throttled := st1.Throttled > st0.Throttled
			if throttled != tc.binds {
				t.Errorf("throttled: %v, want %v", throttled, tc.binds)
			}
			// the machine is shared: only the throttled server's own CPU
			// has a bound the kernel keeps; its throughput must drop too
			if tc.binds && (ratio >= 1 || cpu > 15) {
				t.Errorf("throttled to %s %% of a core: throughput %.2f of before, CPU %.1f %%; want a drop and at most 15 %%", tc.percent, ratio, cpu)
			}
		})
	}
}

// procCPU is pid's user and system CPU time.
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond // USER_HZ 100
}

// TestStallRedis freezes a real redis-server: its connection stays open
// (the kernel accepts the request) but no reply comes until restore; the
// process is not in the stopped state a pause leaves.
func TestStallRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real redis-server")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not on PATH")
	}
	if _, err := openCgroups(cgroup.Freezer); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tg := upRedis(t, "stall-test-redis", false)
	n := tg.Snapshot().Nodes[0]
	c, err := net.DialTimeout("tcp", n.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg := NewRegistry()
	if _, err := ApplyStep(ctx, tg, reg, Step{Action: ActionStall, Node: "n1"}); err != nil {
		t.Fatal(err)
	}
	if launcher.Stopped(n.PID) {
		t.Errorf("a stalled node is in the stopped state of a paused one")
	}
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		t.Fatalf("writing to a stalled node's open connection: %v", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	r := bufio.NewReader(c)
	if line, err := r.ReadString('\n'); err == nil {
		t.Fatalf("a stalled node answered %q", line)
	}
	if _, err := ApplyStep(ctx, tg, reg, Step{Action: ActionRestore, Node: "n1"}); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || strings.TrimSpace(line) != "+PONG" {
		t.Fatalf("after restore: %q, %v; want the held PING answered", line, err)
	}
}

// TestCheckSlow: without root a schedule with a slow-node fault is
// refused before the run, naming the step; as root on a machine with the
// cgroups it passes. Which case runs depends on the user running it.
func TestCheckSlow(t *testing.T) {
	sched := Schedule{{At: time.Second, Action: ActionCPUThrottle, Node: "n1"}, {At: 2 * time.Second, Action: ActionKill, Node: "n1"}}
	err := CheckSlow(sched)
	if os.Geteuid() != 0 {
		if err == nil || !strings.Contains(err.Error(), "schedule step 1") || !strings.Contains(err.Error(), "root") {
			t.Fatalf("CheckSlow as uid %d = %v, want step 1 refused for want of root", os.Geteuid(), err)
		}
		return
	}
	if _, cerr := openCgroups(cgroup.CPU); cerr != nil {
		if err == nil {
			t.Fatalf("CheckSlow passed on a machine without the cpu cgroup: %v", cerr)
		}
		return
	}
	if err != nil {
		t.Fatalf("CheckSlow as root: %v", err)
	}
	if err := CheckSlow(Schedule{{Action: ActionKill, Node: "n1"}}); err != nil {
		t.Fatalf("CheckSlow without slow faults: %v", err)
	}
}
