package fault

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/launcher/redis"
)

func TestCheckClock(t *testing.T) {
	bump := Schedule{{At: time.Second, Action: ActionClockBump, Node: "n1", Params: map[string]string{"delta": "10s"}}}
	on := map[string]string{launcher.OptClock: launcher.ClockFaketime}
	tests := []struct {
		name  string
		sched Schedule
		opts  map[string]string
		libc  bool
		want  string // "" for no error
	}{
		{"libc kind with the option", bump, on, true, ""},
		{"libc kind without the option", bump, nil, true, "needs the nodes started under libfaketime"},
		{"Go kind, even with the option", bump, on, false, "vDSO"},
		{"no clock fault on a Go kind", Schedule{{Action: ActionKill, Node: "n1"}}, nil, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckClock(tc.sched, tc.opts, tc.libc, launcher.ErrGoClock)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckClock: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckClock = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestClockParams(t *testing.T) {
	reg := NewRegistry()
	tests := []struct {
		name   string
		action Action
		params map[string]string
		ok     bool
	}{
		{"offset", ActionClockOffset, map[string]string{"offset": "-30s"}, true},
		{"offset to a moment", ActionClockOffset, map[string]string{"to": "2030-01-01T00:00:00Z"}, true},
		{"offset and to", ActionClockOffset, map[string]string{"offset": "1s", "to": "2030-01-01T00:00:00Z"}, false},
		{"offset without either", ActionClockOffset, nil, false},
		{"to not a time", ActionClockOffset, map[string]string{"to": "tomorrow"}, false},
		{"bump backward", ActionClockBump, map[string]string{"delta": "-10s"}, true},
		{"bump of 0", ActionClockBump, map[string]string{"delta": "0s"}, false},
		{"bump without delta", ActionClockBump, nil, false},
		{"bump beyond a year", ActionClockBump, map[string]string{"delta": "9000h"}, false},
		{"strobe", ActionClockStrobe, map[string]string{"delta": "5s", "period": "1s"}, true},
		{"strobe too fast", ActionClockStrobe, map[string]string{"delta": "5s", "period": "1ms"}, false},
		{"strobe without period", ActionClockStrobe, map[string]string{"delta": "5s"}, false},
		{"throttle", ActionCPUThrottle, map[string]string{"percent": "10"}, true},
		{"throttle of 0", ActionCPUThrottle, map[string]string{"percent": "0"}, false},
		{"memory in MiB", ActionMemoryPressure, map[string]string{"limit": "64MiB"}, true},
		{"memory too small", ActionMemoryPressure, map[string]string{"limit": "1M"}, false},
		{"memory not a size", ActionMemoryPressure, map[string]string{"limit": "lots"}, false},
		{"stall takes nothing", ActionStall, map[string]string{"percent": "10"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, perrs := reg.CheckParams(Step{Action: tc.action, Node: "n1", Params: tc.params})
			if (len(perrs) == 0) != tc.ok {
				t.Fatalf("CheckParams(%s %v) = %v, want ok %v", tc.action, tc.params, perrs, tc.ok)
			}
		})
	}
}

// redisTime asks the Redis server at addr for its clock (TIME).
func redisTime(addr string) (time.Time, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return time.Time{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nTIME\r\n")); err != nil {
		return time.Time{}, err
	}
	r := bufio.NewReader(c)
	var f []int64
	for len(f) < 2 {
		line, err := r.ReadString('\n')
		if err != nil {
			return time.Time{}, err
		}
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '*' || line[0] == '$' {
			continue
		}
		n, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("TIME: %q", line)
		}
		f = append(f, n)
	}
	return time.Unix(f[0], f[1]*1000), nil
}

// skew is how far the Redis server at addr is ahead of this process's
// clock, rounded to seconds.
func skew(t *testing.T, addr string) time.Duration {
	t.Helper()
	rt, err := redisTime(addr)
	if err != nil {
		t.Fatal(err)
	}
	return time.Until(rt).Round(time.Second)
}

// upRedis starts one real redis-server, under libfaketime when clock.
func upRedis(t *testing.T, name string, clock bool) *Cluster {
	t.Helper()
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	if clock {
		env = env.WithClock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := redis.StandaloneLauncher{}.Up(ctx, env, launcher.Spec{Name: name, Nodes: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("redis Up: %v", err)
	}
	if c.Options == nil {
		c.Options = map[string]string{}
	}
	if clock { // as the cluster manager records it
		c.Options[launcher.OptClock] = launcher.ClockFaketime
	}
	tg := &Cluster{Launcher: redis.StandaloneLauncher{}, Env: env, Cluster: c, Events: event.NewMemory(time.Now()), HealthTimeout: 30 * time.Second}
	t.Cleanup(func() {
		if err := launcher.Down(context.Background(), tg.Snapshot(), 5*time.Second); err != nil {
			t.Errorf("Down: %v", err)
		}
	})
	return tg
}

// TestClockRedis moves the clock of a real redis-server started under
// libfaketime: TIME jumps by a bump (forward and backward), a key whose
// TTL the forward bump passes expires, a strobe shows both offsets,
// clock-reset sets it right. The negative control is a redis-server
// started without the preload: writing its control file moves nothing,
// and the fault refuses it.
func TestClockRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real redis-server processes")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not on PATH")
	}
	if _, err := launcher.FaketimeLibrary(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg := NewRegistry()
	apply := func(tg *Cluster, a Action, params map[string]string) error {
		_, err := ApplyStep(ctx, tg, reg, Step{Action: a, Node: "n1", Params: params})
		return err
	}

	tg := upRedis(t, "clock-test-redis", true)
	addr := tg.Snapshot().Nodes[0].Addr
	if d := skew(t, addr); d != 0 {
		t.Fatalf("before any fault the server's clock is off by %v", d)
	}
	redisCmd(t, addr, "SET", "ttl-key", "v", "EX", "50")
	if err := apply(tg, ActionClockBump, map[string]string{"delta": "100s"}); err != nil {
		t.Fatal(err)
	}
	if d := skew(t, addr); d != 100*time.Second {
		t.Errorf("after clock-bump 100s the server's clock is off by %v", d)
	}
	if got := redisCmd(t, addr, "EXISTS", "ttl-key"); got != "0" {
		t.Errorf("a key with a 50 s TTL after a 100 s bump: EXISTS = %s, want 0 (expired)", got)
	}
	if err := apply(tg, ActionClockBump, map[string]string{"delta": "-130s"}); err != nil {
		t.Fatal(err)
	}
	if d := skew(t, addr); d != -30*time.Second {
		t.Errorf("after a further clock-bump -130s the server's clock is off by %v, want -30s", d)
	}
	if err := apply(tg, ActionClockReset, nil); err != nil {
		t.Fatal(err)
	}
	if d := skew(t, addr); d != 0 {
		t.Errorf("after clock-reset the server's clock is off by %v", d)
	}

	// a strobe: the clock is seen at both offsets while it runs
	seen := map[time.Duration]bool{}
	var mu sync.Mutex
	sctx, scancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for sctx.Err() == nil {
			if rt, err := redisTime(addr); err == nil {
				mu.Lock()
				seen[time.Until(rt).Round(10*time.Second)] = true
				mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	err := apply(tg, ActionClockStrobe, map[string]string{"delta": "60s", "period": "100ms", "duration": "2s"})
	scancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !seen[0] || !seen[60*time.Second] {
		t.Errorf("offsets seen during the strobe: %v, want 0s and 1m0s", seen)
	}
	if d := skew(t, addr); d != 0 {
		t.Errorf("after the strobe the server's clock is off by %v", d)
	}
	if err := apply(tg, ActionClockStrobe, map[string]string{"delta": "60s", "period": "100ms"}); err == nil || !strings.Contains(err.Error(), "duration") {
		t.Errorf("a strobe from the command line without duration: %v, want a refusal naming duration", err)
	}

	// negative control: the same server without the preload
	plain := upRedis(t, "clock-test-plain", false)
	paddr := plain.Snapshot().Nodes[0].Addr
	n := plain.Snapshot().Nodes[0]
	if err := launcher.WriteClockOffset(launcher.ClockFile(n.LogFile), "+100"); err != nil {
		t.Fatal(err)
	}
	if d := skew(t, paddr); d != 0 {
		t.Errorf("a server started without libfaketime moved its clock by %v", d)
	}
	plain.Cluster.Options[launcher.OptClock] = launcher.ClockFaketime // as if it had asked
	err = apply(plain, ActionClockBump, map[string]string{"delta": "10s"})
	if err == nil || !strings.Contains(err.Error(), "not started under libfaketime") {
		t.Errorf("clock-bump on a server started without libfaketime: %v, want a refusal", err)
	}
}

// redisCmd runs one command on the Redis server at addr and returns its
// reply's first line without the type byte.
func redisCmd(t *testing.T, addr string, args ...string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(line, "-") {
		t.Fatal(errors.New(strings.TrimSpace(line)))
	}
	return strings.TrimSpace(line[1:])
}
