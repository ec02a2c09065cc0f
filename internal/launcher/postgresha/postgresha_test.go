package postgresha

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/procstat"
)

func needPostgresHA(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real pg_auto_failover cluster (skipped with -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("postgres-ha runs pg_autoctl as the postgres user in PID namespaces, which needs root")
	}
	cfg, err := parseOptions(nil)
	if err == nil {
		err = cfg.resolve()
	}
	if err != nil {
		t.Skipf("PostgreSQL 15 with pg_auto_failover is not installed (scripts/setup.sh --only postgres; make test does): %v", err)
	}
}

// leftovers returns the live processes whose command line mentions dir,
// so the teardown can check that nothing of the cluster is left.
func leftovers(dir string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), dir) && procstat.Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

func upCluster(t *testing.T, nodes int, opts map[string]string) (*launcher.Env, *launcher.Cluster) {
	t.Helper()
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := Launcher{}.Up(ctx, env, launcher.Spec{Name: "test-postgres-ha", Nodes: nodes, Options: opts})
	if c != nil {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := launcher.Down(ctx, c, 10*time.Second); err != nil {
				t.Errorf("Down: %v", err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for len(leftovers(c.Dir)) > 0 && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			if left := leftovers(c.Dir); len(left) > 0 {
				t.Errorf("processes of %s left after Down: %v", c.Dir, left)
				for _, pid := range left {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
				t.Errorf("temp dir %s left behind (%v)", c.Dir, err)
				_ = os.RemoveAll(c.Dir)
			}
		})
	}
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("postgres-ha up with %d data nodes in %v (dir %s)", nodes, time.Since(start).Round(time.Millisecond), c.Dir)
	return env, c
}

// refresh refreshes c and returns the primary's name.
func refresh(t *testing.T, c *launcher.Cluster) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := (Launcher{}).Refresh(ctx, c); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	return c.WithRole(launcher.RolePrimary)
}

func TestFailoverAfterWholeNodeKill(t *testing.T) {
	needPostgresHA(t)
	l := Launcher{}
	env, c := upCluster(t, 2, nil)

	if got := refresh(t, c); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("primaries = %v, want n1", got)
	}
	if got := c.WithRole(launcher.RoleReplica); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("replicas = %v, want n2", got)
	}
	if got := c.WithRole(RoleMonitor); !slices.Equal(got, []string{MonitorName}) {
		t.Fatalf("monitor = %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// every data node allows the largest pool a run sizes (primary and
	// the standby made from its base backup alike)
	for _, addr := range Endpoints(c) {
		conn, err := connect(ctx, addr, Database)
		if err != nil {
			t.Fatal(err)
		}
		var mc string
		err = conn.QueryRow(ctx, "SHOW max_connections").Scan(&mc)
		conn.Close(ctx)
		if err != nil || mc != strconv.Itoa(MaxConnections) {
			t.Errorf("%s: max_connections %q (%v), want %d", addr, mc, err, MaxConnections)
		}
	}

	// postgres alone: the keeper restarts it with a new pid (with the fast
	// timings the monitor may fail over to n2 meanwhile)
	n1, _ := c.Node("n1")
	old := n1.PID
	if err := launcher.Kill(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := l.StartNode(ctx, env, c, "n1"); err != nil {
		t.Fatalf("StartNode n1 after a postgres kill: %v", err)
	}
	if n1.PID == old || !procstat.Alive(n1.PID) {
		t.Fatalf("n1 pid after restart = %d (was %d)", n1.PID, old)
	}
	if err := l.WaitHealthy(ctx, c); err != nil {
		t.Fatalf("WaitHealthy after a postgres kill: %v", err)
	}

	// the whole primary node: keeper and postgres die together, the
	// other node takes over
	primaries := refresh(t, c)
	if len(primaries) != 1 {
		t.Fatalf("primaries = %v after the postgres kill", primaries)
	}
	victim, other := primaries[0], map[string]string{"n1": "n2", "n2": "n1"}[primaries[0]]
	vn, _ := c.Node(victim)
	k, _ := c.Node(victim + KeeperSuffix)
	on, _ := c.Node(other)
	pg := vn.PID
	if r, err := isInRecovery(ctx, on.Addr); err != nil || !r {
		t.Fatalf("%s before the kill: in recovery %v, %v", other, r, err)
	}
	start := time.Now()
	if err := launcher.Kill(ctx, k.PID); err != nil {
		t.Fatal(err)
	}
	for procstat.Alive(pg) && time.Since(start) < 5*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if procstat.Alive(pg) {
		t.Fatalf("postgres (pid %d) survived the kill of its keeper", pg)
	}
	if err := waitPrimary(ctx, on.Addr); err != nil {
		t.Fatalf("%s did not take over: %v", other, err)
	}
	t.Logf("%s takes writes %v after the whole-node kill of %s", other, time.Since(start).Round(time.Millisecond), victim)
	for got := refresh(t, c); !slices.Equal(got, []string{other}); got = refresh(t, c) {
		if ctx.Err() != nil {
			t.Fatalf("primaries after failover = %v, want %s", got, other)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !vn.Down || vn.PID != 0 {
		t.Fatalf("%s after the whole-node kill: down=%v pid=%d", victim, vn.Down, vn.PID)
	}
	// the order of faultbench's restore after a run: the postgres node
	// first (which starts its keeper and waits until it runs as a
	// standby for good, after its rewind or base backup), then the
	// keeper, recorded by the caller without the pid the first start
	// set: the second start must find the running keeper, not start
	// another one
	if err := l.StartNode(ctx, env, c, victim); err != nil {
		t.Fatalf("StartNode %s: %v", victim, err)
	}
	if !procstat.Alive(vn.PID) || vn.Down {
		t.Fatalf("%s after StartNode: pid %d down %v", victim, vn.PID, vn.Down)
	}
	keeper := k.PID
	k.PID, k.Down = 0, true
	if err := l.StartNode(ctx, env, c, victim+KeeperSuffix); err != nil {
		t.Fatalf("StartNode %s after %s: %v", victim+KeeperSuffix, victim, err)
	}
	if k.PID != keeper || !procstat.Alive(k.PID) {
		t.Fatalf("%s pid after the second start = %d, want the running keeper %d", victim+KeeperSuffix, k.PID, keeper)
	}
	if err := l.WaitHealthy(ctx, c); err != nil {
		t.Fatalf("WaitHealthy after the rejoin: %v", err)
	}
	if !procstat.Alive(vn.PID) {
		t.Fatalf("%s's postmaster (pid %d) StartNode returned exited before the cluster was healthy", victim, vn.PID)
	}
	refresh(t, c)
	if got := c.WithRole(launcher.RoleReplica); !slices.Equal(got, []string{victim}) {
		t.Fatalf("replicas after the rejoin = %v, want %s", got, victim)
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts map[string]string
		want string // "" for valid
	}{
		{"defaults", nil, ""},
		{"pgaf timing", map[string]string{"timing": "pgaf"}, ""},
		{"prefixed key", map[string]string{"postgres.unhealthy-timeout-ms": "5000"}, ""},
		{"bad timing", map[string]string{"postgres.timing": "slow"}, "postgres.timing"},
		{"bad ms", map[string]string{"postgres.health-check-period-ms": "10"}, "health-check-period-ms"},
		{"root", map[string]string{"postgres.os-user": "root"}, "os-user"},
		{"unknown", map[string]string{"postgres.nodes": "3"}, `unknown option "postgres.nodes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseOptions(tc.opts)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if cfg.timing.healthCheckPeriod <= 0 || cfg.timing.unhealthyTimeout <= 0 {
					t.Fatalf("timing not filled in: %+v", cfg.timing)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestTimingPresets(t *testing.T) {
	fast, pgaf := presetTiming(TimingFast), presetTiming(TimingPGAF)
	if pgaf.unhealthyTimeout != 20000 || pgaf.healthCheckPeriod != 5000 {
		t.Fatalf("pgaf preset %+v is not pg_auto_failover's defaults", pgaf)
	}
	if fast.unhealthyTimeout >= pgaf.unhealthyTimeout || fast.healthCheckPeriod >= pgaf.healthCheckPeriod {
		t.Fatalf("fast preset %+v is not faster than %+v", fast, pgaf)
	}
	cfg, err := parseOptions(map[string]string{"timing": "pgaf", "unhealthy-timeout-ms": "7000"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.timing.unhealthyTimeout != 7000 || cfg.timing.healthCheckPeriod != 5000 {
		t.Fatalf("override on a preset: %+v", cfg.timing)
	}
}
