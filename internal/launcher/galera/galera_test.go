package galera

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
)

func needGalera(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real MariaDB Galera cluster (skipped with -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("galera runs mariadbd as the mysql user, which needs root")
	}
	cfg, err := parseOptions(nil)
	if err == nil {
		err = cfg.resolve()
	}
	if err != nil {
		t.Skipf("MariaDB with Galera is not installed (scripts/setup.sh --only galera; make test does): %v", err)
	}
}

// leftovers returns the live processes whose command line mentions dir.
func leftovers(dir string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), dir) && launcher.Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// UpForTest starts a cluster and registers a teardown that checks nothing
// is left behind.
func upCluster(t *testing.T, nodes int) (*launcher.Env, *launcher.Cluster) {
	t.Helper()
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := Launcher{}.Up(ctx, env, launcher.Spec{Name: "test-galera", Nodes: nodes})
	if c != nil {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := launcher.Down(ctx, c, 15*time.Second); err != nil {
				t.Errorf("Down: %v", err)
			}
			if left := leftovers(c.Dir); len(left) > 0 {
				t.Errorf("processes of %s left after Down: %v", c.Dir, left)
				for _, pid := range left {
					_ = launcher.Kill(ctx, pid)
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
	t.Logf("galera up with %d nodes in %v (dir %s)", nodes, time.Since(start).Round(time.Millisecond), c.Dir)
	return env, c
}

func TestKillAndRejoin(t *testing.T) {
	needGalera(t)
	l := Launcher{}
	env, c := upCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := l.Refresh(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := c.WithRole(launcher.RolePrimary); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("primaries = %v, want n1", got)
	}
	if got := c.WithRole(launcher.RoleReplica); !slices.Equal(got, []string{"n2", "n3"}) {
		t.Fatalf("replicas = %v, want n2 n3", got)
	}
	n1, _ := c.Node("n1")
	if err := launcher.Kill(ctx, n1.PID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n2, _ := c.Node("n2")
	for {
		st, err := nodeStatus(ctx, socketOf(n2))
		if err == nil && st.synced() && st.size == 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("n2 never saw a 2-node primary component: %+v %v", st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("survivors form a 2-node primary component %v after the kill", time.Since(start).Round(time.Millisecond))
	if err := l.Refresh(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := c.WithRole(launcher.RolePrimary); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("primaries after the kill = %v, want n2", got)
	}
	before, _ := os.ReadFile(n1.LogFile)
	if err := l.StartNode(ctx, env, c, "n1"); err != nil {
		t.Fatalf("StartNode n1: %v", err)
	}
	if err := l.WaitHealthy(ctx, c); err != nil {
		t.Fatalf("WaitHealthy after the rejoin: %v", err)
	}
	if st, err := nodeStatus(ctx, socketOf(n1)); err != nil || st.size != 3 {
		t.Fatalf("n1 after the rejoin: %+v %v", st, err)
	}
	// the killed node rejoins from its recovered position by IST, not by
	// a full SST (which rsyncs the whole data directory and blocks the
	// donor: under load it took minutes, "not Synced in 2 min")
	after, _ := os.ReadFile(n1.LogFile)
	restart := string(after[min(len(before), len(after)):])
	// (a joiner always runs the SST script; a full transfer asks the donor
	// for everything from the undefined state: "IST uuid:0000...-0000 f: 0")
	if strings.Contains(restart, "IST uuid:00000000-0000-0000-0000-000000000000") || !strings.Contains(restart, "IST received") {
		t.Fatalf("n1 rejoined by SST, not IST (recovered position not used); its log since the restart:\n%s", launcher.LogTail(n1.LogFile, 40))
	}
}

func TestRecoveredPosition(t *testing.T) {
	for _, tc := range []struct{ name, log, want string }{
		{"recovered", "2026-11-27  6:35:20 0 [Note] WSREP: Recovered position: 97451dc1-ea2c-11f1-a205-aa17efb23757:41182\n", "97451dc1-ea2c-11f1-a205-aa17efb23757:41182"},
		{"undefined position", "[Note] WSREP: Recovered position: 00000000-0000-0000-0000-000000000000:-1\n", ""},
		{"none", "[Note] InnoDB: Starting crash recovery\n", ""},
		{"garbage", "WSREP: Recovered position: nonsense\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := recoveredPosition(tc.log); got != tc.want {
				t.Fatalf("recoveredPosition = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGrastateSeqno(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       int64
		ok         bool
	}{
		{"crashed", "# GALERA saved state\nversion: 2.1\nuuid:    97451dc1-ea2c-11f1-a205-aa17efb23757\nseqno:   -1\nsafe_to_bootstrap: 0\n", -1, true},
		{"clean shutdown", "version: 2.1\nuuid:    97451dc1-ea2c-11f1-a205-aa17efb23757\nseqno:   41182\n", 41182, true},
		{"no seqno", "version: 2.1\n", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := grastateSeqno(tc.text); got != tc.want || ok != tc.ok {
				t.Fatalf("grastateSeqno = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestQuorumLossRestore kills a majority (n2, n3): n1 drops out of the
// primary component; starting n2 first restores one (pc.bootstrap on n1).
func TestQuorumLossRestore(t *testing.T) {
	needGalera(t)
	l := Launcher{}
	env, c := upCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n1, _ := c.Node("n1")
	for _, name := range []string{"n2", "n3"} {
		n, _ := c.Node(name)
		if err := launcher.Kill(ctx, n.PID); err != nil {
			t.Fatal(err)
		}
		n.PID, n.Down = 0, true
	}
	for {
		st, err := nodeStatus(ctx, socketOf(n1))
		if err == nil && st.status != "Primary" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("n1 stayed in a primary component after a majority died: %+v %v", st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, name := range []string{"n2", "n3"} {
		if err := l.StartNode(ctx, env, c, name); err != nil {
			t.Fatalf("StartNode %s after the loss of quorum: %v", name, err)
		}
	}
	if err := l.WaitHealthy(ctx, c); err != nil {
		t.Fatalf("WaitHealthy: %v", err)
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts map[string]string
		want string
	}{
		{"defaults", nil, ""},
		{"galera timing", map[string]string{"timing": "galera"}, ""},
		{"suspect", map[string]string{"galera.suspect-timeout-ms": "800"}, ""},
		{"bad timing", map[string]string{"galera.timing": "slow"}, "galera.timing"},
		{"bad suspect", map[string]string{"galera.suspect-timeout-ms": "abc"}, "suspect-timeout-ms"},
		{"bad sst", map[string]string{"galera.sst": "xtrabackup"}, "galera.sst"},
		{"bad flush", map[string]string{"galera.innodb-flush-log-at-trx-commit": "3"}, "flush-log"},
		{"unknown", map[string]string{"galera.nodes": "3"}, `unknown option "galera.nodes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseOptions(tc.opts)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if cfg.timing.inactive <= cfg.timing.suspect {
					t.Fatalf("inactive timeout %v not above suspect timeout %v", cfg.timing.inactive, cfg.timing.suspect)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestProviderOptions(t *testing.T) {
	got := strings.Join(presetTiming(TimingGalera).providerOptions(), ";")
	for _, want := range []string{"evs.suspect_timeout=PT5S", "evs.inactive_timeout=PT15S", "evs.install_timeout=PT7.5S"} {
		if !strings.Contains(got, want) {
			t.Errorf("galera preset %q lacks %q", got, want)
		}
	}
	if got := iso(1500 * time.Millisecond); got != "PT1.5S" {
		t.Errorf("iso(1.5s) = %q", got)
	}
}
