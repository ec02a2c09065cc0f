package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/remote"
	"github.com/faultbench/faultbench/internal/remote/sshtest"
)

// TestExistingClusterOnHosts is issue 30's bring-your-own cluster: the test
// itself starts a Redis primary and two replicas on three SSH hosts
// (network namespaces running sshd), daemonized with pid files, outside
// faultbench. `cluster attach` records them from the inventory's cluster:
// (found by pid file); `fault kill` and `fault start` act through the pid
// and the inventory's start command, `fault pause` and `fault partition`
// are left in place (as a kill -9 of faultbench would leave them), and
// `cleanup --hosts` leaves the cluster as the test started it: every node
// running (the killed one started again), none stopped, no nftables table
// on any host, the primary and its two replicas.
func TestExistingClusterOnHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sshd in network namespaces and Redis on them")
	}
	if err := sshtest.Available(); err != nil {
		t.Skip("skipping the existing-cluster test:", err)
	}
	redisServer, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("skipping the existing-cluster test: redis-server is not installed")
	}
	_, nftErr := exec.LookPath("nft")
	c := newCLI(t)
	tmp := t.TempDir()
	start := time.Now()
	step := func(what string) { t.Logf("%5.1fs %s", time.Since(start).Seconds(), what) }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	nd := remote.RoleNode
	hosts, err := sshtest.Start(ctx, tmp, 3, [][]remote.Role{{nd}, {nd}, {nd}})
	if err != nil {
		t.Fatal(err)
	}
	invBase := mustInventory(t, hosts.Inventory)
	pidFile := func(i int) string { return filepath.Join(tmp, "byo"+strconv.Itoa(i+1), "redis.pid") }
	readPid := func(i int) int {
		b, _ := os.ReadFile(pidFile(i))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return pid
	}
	defer func() {
		_, _, _ = c.run(time.Minute, "cleanup", "--hosts", hosts.Inventory)
		// the test started the cluster: the test stops it
		for i := range 3 {
			if pid := readPid(i); pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGCONT)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		_ = hosts.Close(context.Background())
	}()
	pool := remote.NewPool(invBase, false)
	defer pool.Close()
	// the cluster, started by the test over SSH: n1 the primary, n2 and
	// n3 its replicas, each daemonized with a pid file
	argv := make([][]string, 3)
	var section strings.Builder
	section.WriteString("cluster:\n  kind: redis\n  name: byo\n  nodes:\n")
	for i, h := range invBase.Hosts {
		dir := filepath.Dir(pidFile(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		argv[i] = []string{redisServer, "--port", "6379", "--bind", h.Address, "--dir", dir, "--daemonize", "yes",
			"--pidfile", pidFile(i), "--logfile", filepath.Join(dir, "redis.log"), "--save", "", "--appendonly", "no", "--protected-mode", "no"}
		if i > 0 {
			argv[i] = append(argv[i], "--replicaof", invBase.Hosts[0].Address, "6379")
		}
		conn, err := pool.Get(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := conn.Run(ctx, argv[i], nil); err != nil {
			t.Fatalf("starting redis on %s: %v\n%s", h.Name, err, out)
		}
		quoted := make([]string, len(argv[i]))
		for k, a := range argv[i] {
			quoted[k] = strconv.Quote(a)
		}
		fmt.Fprintf(&section, "    - {name: n%d, host: %s, endpoint: \"%s:6379\", pid_file: %s, start: [%s]}\n",
			i+1, h.Name, h.Address, pidFile(i), strings.Join(quoted, ", "))
	}
	base, err := os.ReadFile(hosts.Inventory)
	if err != nil {
		t.Fatal(err)
	}
	inv := filepath.Join(tmp, "existing.yaml")
	if err := os.WriteFile(inv, append(base, section.String()...), 0o600); err != nil {
		t.Fatal(err)
	}
	roles := func() []string {
		var out []string
		for _, h := range invBase.Hosts {
			cl := goredis.NewClient(&goredis.Options{Addr: h.Address + ":6379", DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, MaxRetries: -1})
			qctx, qcancel := context.WithTimeout(ctx, 3*time.Second)
			r, err := cl.Do(qctx, "ROLE").Slice()
			qcancel()
			cl.Close()
			if err != nil || len(r) == 0 {
				out = append(out, "-")
				continue
			}
			out = append(out, fmt.Sprint(r[0]))
		}
		return out
	}
	waitRoles := func(want string) {
		t.Helper()
		var got []string
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
			if got = roles(); strings.Join(got, ",") == want {
				return
			}
		}
		t.Fatalf("roles %v, want %s", got, want)
	}
	waitRoles("master,slave,slave")
	found := []int{readPid(0), readPid(1), readPid(2)}
	step(fmt.Sprintf("the test's redis on 3 hosts: pids %v", found))

	out, errs, code := c.run(2*time.Minute, "cluster", "attach", "--hosts", inv)
	if code != 0 {
		t.Fatalf("cluster attach: exit %d\n%s\n%s", code, out, errs)
	}
	store := launcher.StateStore{Dir: c.state}
	st, err := store.Load("byo")
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range st.Nodes {
		if n.PID != found[i] || n.Found == nil || n.Found.PidFile != pidFile(i) {
			t.Fatalf("attached %s: pid %d (want %d), found by %+v", n.Name, n.PID, found[i], n.Found)
		}
	}
	step("attached")

	fault := func(args ...string) {
		t.Helper()
		if out, errs, code := c.run(2*time.Minute, append([]string{"fault"}, args...)...); code != 0 {
			t.Fatalf("fault %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errs)
		}
		step("fault " + strings.Join(args, " "))
	}
	fault("kill", "n2")
	if launcher.Alive(found[1]) {
		t.Fatalf("n2 (pid %d) runs after fault kill", found[1])
	}
	fault("start", "n2")
	if pid := readPid(1); pid == found[1] || !launcher.Alive(pid) {
		t.Fatalf("n2 after fault start: pid file names %d (killed: %d)", pid, found[1])
	}
	// left in place, as a faultbench killed with -9 leaves them
	fault("kill", "n2")
	fault("pause", "n3")
	if !launcher.Stopped(found[2]) {
		t.Fatalf("n3 (pid %d) not stopped after fault pause", found[2])
	}
	if nftErr == nil {
		fault("partition", "n1")
	}
	out, errs, code = c.run(3*time.Minute, "cleanup", "--hosts", inv)
	if code != 0 || !strings.Contains(out, "h2: started n2 again") || !strings.Contains(out, "h3: continued n3") {
		t.Fatalf("cleanup --hosts: exit %d, want n2 started again and n3 continued\n%s\n%s", code, out, errs)
	}
	if nftErr == nil && !strings.Contains(out, "removed the nftables table") {
		t.Errorf("cleanup --hosts did not remove the partition's table:\n%s", out)
	}
	t.Logf("cleanup --hosts:\n%s", out)
	step("cleanup --hosts done")
	t.Run("the cluster is as the test started it", func(t *testing.T) {
		for i := range 3 {
			pid := readPid(i)
			if !launcher.Alive(pid) || launcher.Stopped(pid) {
				t.Errorf("n%d: pid %d alive %v stopped %v", i+1, pid, launcher.Alive(pid), launcher.Stopped(pid))
			}
		}
		if readPid(0) != found[0] || readPid(2) != found[2] {
			t.Errorf("n1 and n3 are pids %d and %d, want the test's %d and %d (never restarted)", readPid(0), readPid(2), found[0], found[2])
		}
		waitRoles("master,slave,slave")
		if nftErr == nil {
			for _, h := range invBase.Hosts {
				conn, err := pool.Get(ctx, h)
				if err != nil {
					t.Fatal(err)
				}
				b, err := conn.Run(ctx, []string{"nft", "list", "tables"}, nil)
				if err != nil || strings.Contains(string(b), "faultbench") {
					t.Errorf("%s: nft list tables: %v\n%s", h.Name, err, b)
				}
			}
		}
		if _, err := store.Load("byo"); err == nil {
			t.Error("the attached cluster is still recorded after cleanup --hosts")
		}
	})
}
