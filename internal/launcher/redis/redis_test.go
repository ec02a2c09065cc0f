package redis

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/faultbench/faultbench/internal/launcher"
)

func needRedis(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real redis-server processes (skipped with -short)")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not on PATH: run scripts/setup.sh --only redis to install it (make test does)")
	}
}

// up starts a cluster with l and registers its teardown, which also checks
// that no node process is left behind.
func up(t *testing.T, l launcher.Launcher, spec launcher.Spec) (*launcher.Env, *launcher.Cluster) {
	t.Helper()
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	c, err := l.Up(ctx, env, spec)
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("%s up with %d nodes in %v", l.Kind(), len(c.Nodes), time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pids := make([]int, 0, len(c.Nodes))
		for _, n := range c.Nodes {
			pids = append(pids, n.PID)
		}
		if err := launcher.Down(ctx, c, 5*time.Second); err != nil {
			t.Errorf("Down: %v", err)
		}
		for _, pid := range pids {
			if launcher.Alive(pid) {
				t.Errorf("pid %d still running after Down", pid)
			}
		}
		if c.TempDir {
			if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
				t.Errorf("temp dir %s left behind (%v)", c.Dir, err)
			}
		}
	})
	return env, c
}

func TestClusterFailoverAndRejoin(t *testing.T) {
	needRedis(t)
	l := ClusterLauncher{}
	env, c := up(t, l, launcher.Spec{Name: "test-redis-cluster", Nodes: 3, Replicas: 1})

	if got := c.WithRole(launcher.RolePrimary); !slices.Equal(got, []string{"n1", "n2", "n3"}) {
		t.Fatalf("primaries = %v, want n1 n2 n3", got)
	}
	if got := c.WithRole(launcher.RoleReplica); !slices.Equal(got, []string{"n4", "n5", "n6"}) {
		t.Fatalf("replicas = %v, want n4 n5 n6", got)
	}
	if !c.TempDir || !strings.Contains(filepath.Base(c.Dir), "faultbench-redis-") {
		t.Errorf("dir %s (temp %v): want a faultbench-redis-* temp dir", c.Dir, c.TempDir)
	}
	for _, n := range c.Nodes {
		if n.ID == "" || n.PID == 0 || len(n.Argv) == 0 || n.PeerAddr == "" || n.Down {
			t.Errorf("node %+v: want id, pid, argv, peer addr, up", n)
		}
		if !strings.HasPrefix(n.Addr, "127.0.0.1:") {
			t.Errorf("node %s addr %s: want 127.0.0.1", n.Name, n.Addr)
		}
		if _, err := os.Stat(n.LogFile); err != nil {
			t.Errorf("node %s log: %v", n.Name, err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	n1, _ := c.Node("n1")
	killed := time.Now()
	if err := launcher.Kill(ctx, n1.PID); err != nil {
		t.Fatal(err)
	}
	// n4 replicates n1 and must take over
	for {
		if err := l.Refresh(ctx, c); err != nil {
			t.Logf("refresh: %v", err)
		}
		n1, _ = c.Node("n1")
		n4, _ := c.Node("n4")
		if n1.Down && n4.Role == launcher.RolePrimary && !n4.Down {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("n4 did not become primary after n1 was killed: n1 %+v, n4 %+v", *n1, *n4)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("failover seen %v after the kill", time.Since(killed).Round(time.Millisecond))
	if got := c.WithRole(launcher.RolePrimary); !slices.Equal(got, []string{"n2", "n3", "n4"}) {
		t.Fatalf("primaries after failover = %v, want n2 n3 n4", got)
	}
	if err := l.WaitHealthy(ctx, c); err != nil {
		t.Fatalf("WaitHealthy with n1 down: %v", err)
	}

	if err := l.StartNode(ctx, env, c, "n2"); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("StartNode of a running node: err = %v, want 'already running'", err)
	}
	oldID := n1.ID
	if err := l.StartNode(ctx, env, c, "n1"); err != nil {
		t.Fatalf("StartNode n1: %v", err)
	}
	if err := l.WaitHealthy(ctx, c); err != nil {
		t.Fatalf("WaitHealthy after restart: %v", err)
	}
	if err := l.Refresh(ctx, c); err != nil {
		t.Fatal(err)
	}
	n1, _ = c.Node("n1")
	if n1.Down || n1.Role != launcher.RoleReplica || n1.ID != oldID {
		t.Fatalf("n1 after restart = %+v, want an up replica with id %s", *n1, oldID)
	}
	if got := c.WithRole(launcher.RoleReplica); !slices.Equal(got, []string{"n1", "n5", "n6"}) {
		t.Fatalf("replicas after rejoin = %v, want n1 n5 n6", got)
	}
}

func TestStandaloneWithReplica(t *testing.T) {
	needRedis(t)
	l := StandaloneLauncher{}
	dir := t.TempDir()
	env, c := up(t, l, launcher.Spec{Name: "test-redis", Nodes: 1, Replicas: 1, Dir: dir, Options: map[string]string{"appendonly": "yes"}})
	if c.TempDir || c.Dir != dir {
		t.Errorf("dir = %s (temp %v), want %s", c.Dir, c.TempDir, dir)
	}
	if got := c.WithRole(launcher.RolePrimary); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("primaries = %v, want n1", got)
	}
	if got := c.WithRole(launcher.RoleReplica); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("replicas = %v, want n2", got)
	}
	if c.Options[OptAppendOnly] != "yes" {
		t.Errorf("options = %v, want appendonly yes recorded", c.Options)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// a write on the primary reaches the replica
	p := goredis.NewClient(&goredis.Options{Addr: c.Nodes[0].Addr})
	defer p.Close()
	if err := p.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := p.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v", n, err)
	}
	r := goredis.NewClient(&goredis.Options{Addr: c.Nodes[1].Addr})
	defer r.Close()
	if v, err := r.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("replica GET = %q, %v", v, err)
	}

	// a paused replica is down with no role, and keeps its pid
	pid := c.Nodes[1].PID
	if err := launcher.Signal(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	err := l.Refresh(ctx, c)
	_ = launcher.Signal(pid, syscall.SIGCONT)
	if err != nil {
		t.Fatal(err)
	}
	if n := c.Nodes[1]; !n.Down || n.Role != launcher.RoleUnknown || n.PID != pid {
		t.Fatalf("paused replica after Refresh = %+v, want down, no role, pid %d", n, pid)
	}
	if err := l.Refresh(ctx, c); err != nil {
		t.Fatal(err)
	}
	if n := c.Nodes[1]; n.Down || n.Role != launcher.RoleReplica {
		t.Fatalf("resumed replica after Refresh = %+v", n)
	}

	// replica killed and started again: healthy again
	if err := launcher.Kill(ctx, c.Nodes[1].PID); err != nil {
		t.Fatal(err)
	}
	if err := l.Refresh(ctx, c); err != nil {
		t.Fatal(err)
	}
	if !c.Nodes[1].Down {
		t.Fatalf("killed replica not Down: %+v", c.Nodes[1])
	}
	restart := time.Now()
	if err := l.StartNode(ctx, env, c, "n2"); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitHealthy(ctx, c); err != nil {
		t.Fatal(err)
	}
	t.Logf("replica restarted and in sync in %v", time.Since(restart).Round(time.Millisecond))

	// with the primary down, WaitHealthy says so
	if err := launcher.Kill(ctx, c.Nodes[0].PID); err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer scancel()
	err = l.WaitHealthy(sctx, c)
	if err == nil || !strings.Contains(err.Error(), "no running node is primary") {
		t.Fatalf("WaitHealthy with primary down: %v", err)
	}
	// restarted from its append-only file, the primary keeps the data
	restart = time.Now()
	if err := l.StartNode(ctx, env, c, "n1"); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitHealthy(ctx, c); err != nil {
		t.Fatal(err)
	}
	t.Logf("primary restarted and replica in sync in %v", time.Since(restart).Round(time.Millisecond))
	if v, err := p.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET after primary restart = %q, %v", v, err)
	}
}

func TestUpRejectsBadSpecs(t *testing.T) {
	needRedis(t)
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cases := []struct {
		l    launcher.Launcher
		spec launcher.Spec
		want string
	}{
		{StandaloneLauncher{}, launcher.Spec{Nodes: 2}, "nodes must be 1"},
		{StandaloneLauncher{}, launcher.Spec{Nodes: 1, Options: map[string]string{OptNodeTimeout: "500"}}, "redis-cluster only"},
		{ClusterLauncher{}, launcher.Spec{Nodes: 0}, "nodes must be at least 1"},
		{ClusterLauncher{}, launcher.Spec{Nodes: 3, Options: map[string]string{"redis.bogus": "1"}}, `unknown option "redis.bogus"`},
		{ClusterLauncher{}, launcher.Spec{Nodes: 3, Options: map[string]string{OptAppendFsync: "sometimes"}}, "always, everysec or no"},
		{ClusterLauncher{}, launcher.Spec{Nodes: 3, Options: map[string]string{OptBinary: "/nonexistent/redis-server"}}, "redis.binary"},
	}
	for _, tc := range cases {
		_, err := tc.l.Up(ctx, env, tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s Up(%+v) = %v, want error containing %q", tc.l.Kind(), tc.spec, err, tc.want)
		}
	}
}

func TestUpReportsCrashingNode(t *testing.T) {
	needRedis(t)
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	// a "binary" that exits at once: Up must fail with the log tail and leave nothing behind
	fake := filepath.Join(t.TempDir(), "fake-redis-server")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Redis server v=7.2.4 sha=0'; exit 0; fi\necho 'fatal: cannot start' >&2\nexit 3\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = StandaloneLauncher{}.Up(ctx, env, launcher.Spec{Nodes: 1, Dir: dir, Options: map[string]string{OptBinary: fake}})
	if err == nil || !strings.Contains(err.Error(), "exited during start-up") || !strings.Contains(err.Error(), "fatal: cannot start") {
		t.Fatalf("Up with a crashing binary = %v, want the node's exit and log", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "n1", "data")); !os.IsNotExist(err) {
		t.Errorf("data dir left behind after failed Up (%v)", err)
	}

	old := filepath.Join(t.TempDir(), "old-redis-server")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho 'Redis server v=6.0.16 sha=00000000:0 malloc=jemalloc-5.2.1 bits=64'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = ClusterLauncher{}.Up(ctx, env, launcher.Spec{Nodes: 3, Options: map[string]string{OptBinary: old}})
	if err == nil || !strings.Contains(err.Error(), "needs Redis 7.0 or later") {
		t.Fatalf("Up with Redis 6 = %v, want a version error", err)
	}
}

func TestParseClusterNodes(t *testing.T) {
	out := `07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host4 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master,fail? - 0 1426238318243 3 connected 10923-16383 [16000->-e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca]
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460
6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30005@31005 slave,fail 67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 0 1426238316232 5 disconnected
garbage
`
	v := parseClusterNodes(out)
	if len(v) != 5 {
		t.Fatalf("parsed %d entries, want 5: %+v", len(v), v)
	}
	if v[0].addr != "127.0.0.1:30004" || !v[0].replica || v[0].role() != launcher.RoleReplica || v[0].masterID != "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca" {
		t.Errorf("entry 0 = %+v", v[0])
	}
	if !v[2].pfail || v[2].fail || !slices.Equal(v[2].slots, []string{"10923-16383"}) {
		t.Errorf("entry 2 = %+v", v[2])
	}
	self, ok := selfEntry(v)
	if !ok || self.id != "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca" || self.role() != launcher.RolePrimary {
		t.Errorf("self = %+v, %v", self, ok)
	}
	if !v[4].fail || v[4].linkState != "disconnected" {
		t.Errorf("entry 4 = %+v", v[4])
	}
}

func TestArgv(t *testing.T) {
	cfg := config{binary: "/usr/bin/redis-server", nodeTimeoutMS: 700, fullCoverage: true, appendFsync: "everysec"}
	p := nodePlan{name: "n2", host: "127.0.0.1", port: 7001, busPort: 17001, dataDir: "/d/n2/data"}
	got := strings.Join(p.argv(cfg), " ")
	for _, want := range []string{
		"--port 7001", "--bind 127.0.0.1", "--dir /d/n2/data", "--cluster-enabled yes",
		"--cluster-config-file /d/n2/data/nodes.conf", "--cluster-port 17001", "--cluster-node-timeout 700",
		"--cluster-replica-validity-factor 0", "--cluster-require-full-coverage yes", "--appendonly no",
		"--repl-diskless-sync yes", "--repl-diskless-sync-delay 0", "--daemonize no", "--protected-mode no",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("argv %q lacks %q", got, want)
		}
	}
	argv := p.argv(cfg)
	for i, a := range argv {
		if (a == "--save" || a == "--logfile") && (i+1 >= len(argv) || argv[i+1] != "") {
			t.Errorf("%s must be followed by an empty argument: %q", a, argv)
		}
	}
	p = nodePlan{host: "127.0.0.1", port: 7002, dataDir: "/d", replicaOf: "127.0.0.1:7001"}
	got = strings.Join(p.argv(cfg), " ")
	if !strings.Contains(got, "--replicaof 127.0.0.1 7001") || strings.Contains(got, "cluster") {
		t.Errorf("standalone replica argv %q", got)
	}
}

func TestKeySlot(t *testing.T) {
	// the test vector of the Redis Cluster specification, and known slots
	if got := crc16("123456789"); got != 0x31C3 {
		t.Fatalf("crc16 = %#x, want 0x31c3", got)
	}
	for key, slot := range map[string]int{"foo": 12182, "bar": 5061, "hello": 866} {
		if got := keySlot(key); got != slot {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, slot)
		}
	}
	k := probeKeyFor([]string{"100-200", "5000"})
	if s := keySlot(k); !(s >= 100 && s <= 200 || s == 5000) {
		t.Errorf("probeKeyFor gave %s in slot %d", k, s)
	}
	if probeKeyFor(nil) != "" {
		t.Error("probeKeyFor(nil) should be empty")
	}
}
