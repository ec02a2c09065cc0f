package etcd_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/launcher/etcd"
)

// TestMain lets the test binary stand in for the faultbench binary: the
// launcher spawns `<self> node etcd ...`, which lands here.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "node" && os.Args[2] == "etcd" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		err := etcd.RunNode(ctx, os.Args[3:])
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// isolate points TMPDIR at a fresh test directory, so that the cluster's temp
// dir and processes can be found (and must be gone) afterwards.
func isolate(t *testing.T) (env *launcher.Env, tmp string) {
	t.Helper()
	tmp = t.TempDir()
	t.Setenv("TMPDIR", tmp)
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if pids := procsWith(tmp); len(pids) > 0 {
			t.Errorf("processes left behind: %v", pids)
			for _, p := range pids {
				_ = launcher.Kill(context.Background(), p)
			}
		}
	})
	return env, tmp
}

// procsWith returns the pids whose command line contains s.
func procsWith(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) && launcher.Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

func up(t *testing.T, env *launcher.Env, spec launcher.Spec) *launcher.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real etcd processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	start := time.Now()
	c, err := etcd.Launcher{}.Up(ctx, env, spec)
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("%d-member cluster up in %v", spec.Nodes, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := launcher.Down(context.Background(), c, 5*time.Second); err != nil {
			t.Errorf("Down: %v", err)
		}
	})
	return c
}

func TestClusterLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real etcd processes")
	}
	env, tmp := isolate(t)
	l := etcd.Launcher{}
	ctx := context.Background()
	c := up(t, env, launcher.Spec{Nodes: 3})

	if !c.TempDir || !strings.HasPrefix(c.Dir, tmp) || !strings.Contains(filepath.Base(c.Dir), "faultbench-etcd-") {
		t.Errorf("cluster dir %q (temp %v), want a faultbench-etcd-* temp dir under %s", c.Dir, c.TempDir, tmp)
	}
	ids := map[string]bool{}
	for _, n := range c.Nodes {
		if n.PID <= 0 || n.Down || n.ID == "" || n.Addr == "" || n.PeerAddr == "" {
			t.Errorf("node after Up: %+v", n)
		}
		if !strings.HasPrefix(n.Addr, "127.0.0.1:") {
			t.Errorf("node %s listens on %s, want 127.0.0.1", n.Name, n.Addr)
		}
		if n.DataDir != filepath.Join(c.Dir, n.Name, "data") || n.LogFile != filepath.Join(c.Dir, n.Name, "node.log") {
			t.Errorf("node %s: data %s log %s", n.Name, n.DataDir, n.LogFile)
		}
		ids[n.ID] = true
	}
	if len(ids) != 3 {
		t.Errorf("member ids not distinct: %v", ids)
	}
	leaders := c.WithRole(launcher.RoleLeader)
	if len(leaders) != 1 || len(c.WithRole(launcher.RoleFollower)) != 2 {
		t.Fatalf("after Up: leaders %v followers %v, want exactly one leader", leaders, c.WithRole(launcher.RoleFollower))
	}
	old := leaders[0]

	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	octx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if _, err := cli.Put(octx, "k", "before-kill"); err != nil {
		t.Fatalf("put: %v", err)
	}
	cancel()

	// kill -9 the leader; the others elect a new one.
	victim, _ := c.Node(old)
	killedAt := time.Now()
	if err := launcher.Kill(ctx, victim.PID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	var newLeader string
	for newLeader == "" {
		if err := l.Refresh(ctx, c); err != nil {
			t.Fatal(err)
		}
		if ls := c.WithRole(launcher.RoleLeader); len(ls) == 1 && ls[0] != old {
			newLeader = ls[0]
		} else if time.Now().After(deadline) {
			t.Fatalf("no new leader 15 s after killing %s: %+v", old, c.Nodes)
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("killed leader %s; %s leads %v later", old, newLeader, time.Since(killedAt).Round(time.Millisecond))
	if victim, _ = c.Node(old); !victim.Down || victim.PID != 0 {
		t.Errorf("killed member after Refresh: %+v", victim)
	}

	// Start it again with its data; it rejoins.
	if err := l.StartNode(ctx, env, c, old); err != nil {
		t.Fatalf("StartNode: %v", err)
	}
	if err := l.StartNode(ctx, env, c, old); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second StartNode: %v, want already running", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	if err := l.WaitHealthy(wctx, c); err != nil {
		t.Fatalf("WaitHealthy after restart: %v", err)
	}
	cancel()
	if err := l.Refresh(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		if n.Down {
			t.Errorf("member %s down after restart", n.Name)
		}
	}
	if got := len(c.WithRole(launcher.RoleLeader)); got != 1 {
		t.Errorf("%d leaders after restart", got)
	}
	octx, cancel = context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ml, err := cli.MemberList(octx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ml.Members) != 3 {
		t.Errorf("member list has %d members after restart, want 3", len(ml.Members))
	}
	// The restarted member kept its data: a serializable read served by it alone sees the key.
	victim, _ = c.Node(old)
	one, err := clientv3.New(clientv3.Config{Endpoints: []string{victim.Addr}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	resp, err := one.Get(octx, "k", clientv3.WithSerializable())
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "before-kill" {
		t.Errorf("restarted member's copy of k: %v %v", resp, err)
	}

	// SIGTERM stops a member cleanly and quickly.
	follower := c.WithRole(launcher.RoleFollower)[0]
	fn, _ := c.Node(follower)
	termAt := time.Now()
	if err := launcher.Terminate(ctx, fn.PID, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(termAt); d > 4*time.Second {
		t.Errorf("SIGTERM took %v to stop %s", d, follower)
	}
	if b, _ := os.ReadFile(fn.LogFile); !bytes.Contains(b, []byte("stopping (signal)")) || !bytes.Contains(b, []byte("stopped after")) {
		t.Errorf("log of %s does not show a clean stop:\n%s", follower, b)
	}
	t.Logf("SIGTERM stopped %s in %v", follower, time.Since(termAt).Round(time.Millisecond))

	// Down removes processes and the temp dir.
	pids := []int{}
	for _, n := range c.Nodes {
		pids = append(pids, n.PID)
	}
	if err := launcher.Down(ctx, c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, p := range pids {
		if launcher.Alive(p) {
			t.Errorf("pid %d still alive after Down", p)
		}
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("cluster dir %s still there after Down: %v", c.Dir, err)
	}
}

// busyAddresser hands out, as the first port of every Up attempt (3 members:
// 6 ports), one that a listener already holds, the first `times` times.
type busyAddresser struct {
	launcher.LoopbackAddresser
	busy  int
	times int
	calls int
}

func (b *busyAddresser) Port(host string) (int, error) {
	i := b.calls
	b.calls++
	if i%6 == 0 && i/6 < b.times {
		return b.busy, nil
	}
	return b.LoopbackAddresser.Port(host)
}

func holdPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

func noTempDirs(t *testing.T, tmp string) {
	t.Helper()
	ents, _ := os.ReadDir(tmp)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "faultbench-etcd-") {
			t.Errorf("temp dir %s left behind", e.Name())
		}
	}
}

func TestUpFailsWhenAMemberDies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real etcd processes")
	}
	env, tmp := isolate(t)
	busy := &busyAddresser{busy: holdPort(t), times: 100}
	env.Addrs = busy
	start := time.Now()
	c, err := etcd.Launcher{}.Up(context.Background(), env, launcher.Spec{Nodes: 3})
	if err == nil {
		_ = launcher.Down(context.Background(), c, time.Second)
		t.Fatal("Up succeeded although n1's client port is taken")
	}
	t.Logf("Up failed after %v and %d attempts: %v", time.Since(start).Round(time.Millisecond), busy.calls/6, err)
	for _, want := range []string{"did not come up", "member n1", "exited", "last lines of", "address already in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Up error does not mention %q", want)
		}
	}
	// 3 attempts of 6 ports each; a real clash with another program on the
	// machine (a port taken between allocation and bind) may add a few.
	if busy.calls < 18 || busy.calls > 30 {
		t.Errorf("Up asked for %d ports, want 18 (3 attempts of 6) or a few more", busy.calls)
	}
	if c != nil {
		t.Errorf("Up returned a cluster with its error")
	}
	noTempDirs(t, tmp)
}

func TestUpRetriesWhenAPortIsTaken(t *testing.T) {
	env, tmp := isolate(t)
	env.Addrs = &busyAddresser{busy: holdPort(t), times: 1}
	c := up(t, env, launcher.Spec{Nodes: 3})
	if len(c.WithRole(launcher.RoleLeader)) != 1 {
		t.Errorf("nodes after a retried Up: %+v", c.Nodes)
	}
	ents, _ := os.ReadDir(tmp)
	if len(ents) != 1 {
		t.Errorf("temp dirs after a retried Up: %d, want the cluster's only", len(ents))
	}
}

func TestUpTimeoutCleansUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real etcd processes")
	}
	env, tmp := isolate(t)
	c, err := etcd.Launcher{}.Up(context.Background(), env, launcher.Spec{
		Nodes:   3,
		Options: map[string]string{etcd.OptStartTimeout: "1ms"},
	})
	if err == nil {
		_ = launcher.Down(context.Background(), c, time.Second)
		t.Fatal("Up succeeded with a 1ms start timeout")
	}
	t.Logf("Up error: %v", err)
	for _, want := range []string{"did not come up within 1ms", "gave up", "node.log"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Up error does not mention %q", want)
		}
	}
	noTempDirs(t, tmp)
}

func TestUpRejectsBadSpecs(t *testing.T) {
	env, _ := isolate(t)
	for _, tc := range []struct {
		spec launcher.Spec
		want string
	}{
		{launcher.Spec{Nodes: 0}, "nodes must be at least 1"},
		{launcher.Spec{Nodes: 3, Replicas: 1}, "replicas must be 0"},
		{launcher.Spec{Nodes: 1, Options: map[string]string{"etcd.nope": "1"}}, `unknown etcd option "etcd.nope"`},
		{launcher.Spec{Nodes: 1, Options: map[string]string{etcd.OptElectionTimeout: "200ms"}}, "at least 5 times"},
	} {
		c, err := etcd.Launcher{}.Up(context.Background(), env, tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Up(%+v) = %v, want error containing %q", tc.spec, err, tc.want)
		}
		if c != nil {
			_ = launcher.Down(context.Background(), c, time.Second)
		}
	}
}

func TestUpRefusesExistingData(t *testing.T) {
	env, _ := isolate(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "n1", "data", "member"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := etcd.Launcher{}.Up(context.Background(), env, launcher.Spec{Nodes: 1, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "already holds data") {
		t.Fatalf("Up over existing data: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "n1", "data", "member")); err != nil {
		t.Errorf("Up removed data it did not create: %v", err)
	}
}
