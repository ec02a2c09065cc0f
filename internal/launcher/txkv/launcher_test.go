package txkv_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	txkvl "github.com/faultbench/faultbench/internal/launcher/txkv"
	"github.com/faultbench/faultbench/internal/txkv/client"
	"github.com/faultbench/faultbench/internal/txkv/txkvtest"
)

// TestMain lets the test binary stand in for the faultbench binary: the
// launcher spawns `<self> node txkv-coordinator|txkv-server ...`, which
// lands here; `<self> crashclient COORD N` is a client process that
// commits N transactions without flushing them and waits to be killed.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "node" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		var err error
		switch os.Args[2] {
		case "txkv-coordinator":
			err = txkvl.RunCoordinator(ctx, os.Args[3:])
		case "txkv-server":
			err = txkvl.RunServer(ctx, os.Args[3:])
		default:
			err = fmt.Errorf("unknown node kind %s", os.Args[2])
		}
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) > 3 && os.Args[1] == "crashclient" {
		crashClient(os.Args[2], os.Args[3])
		return
	}
	os.Exit(m.Run())
}

// crashClient commits n one-write transactions (key cc<i> = value v<i>)
// with flushing switched off, prints "committed", and waits to be killed.
func crashClient(coord, ns string) {
	n, _ := strconv.Atoi(ns)
	ctx := context.Background()
	cl, err := client.Open(ctx, client.Config{Coordinator: coord, Name: "crashclient", SkipFlush: true})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	for i := 0; i < n; i++ {
		tx, err := cl.Begin(ctx)
		if err == nil {
			tx.Write("usertable", fmt.Sprintf("user%02dcc%d", 10+i%80, i), map[string][]byte{"f": []byte(fmt.Sprintf("v%d", i))})
			_, err = tx.Commit(ctx)
		}
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	}
	fmt.Println("committed")
	select {}
}

func isolate(t *testing.T) (*launcher.Env, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real txkv processes")
	}
	tmp := t.TempDir()
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

func procsWith(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) && launcher.Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

func up(t *testing.T, env *launcher.Env, servers int, opts map[string]string) *launcher.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	c, err := txkvl.Launcher{}.Up(ctx, env, launcher.Spec{Nodes: servers, Options: opts})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("coordinator + %d servers up in %v", servers, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := launcher.Down(context.Background(), c, 10*time.Second); err != nil {
			t.Errorf("Down: %v", err)
		}
	})
	return c
}

func coordAddr(t *testing.T, c *launcher.Cluster) string {
	n, err := c.Node(txkvl.CoordinatorNode)
	if err != nil {
		t.Fatal(err)
	}
	return n.Addr
}

func open(t *testing.T, addr string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := client.Open(ctx, client.Config{Coordinator: addr, Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// workload is the paper's transaction on a small table: 10 random row
// operations, half reads, half single-field updates.
type workload struct {
	cl      *client.Client
	keys    []string
	h       *txkvtest.History // every outcome, for the lost-commit check
	commits atomic.Int64
	aborts  atomic.Int64
	errs    atomic.Int64
}

func newWorkload(cl *client.Client) *workload {
	w := &workload{cl: cl, h: txkvtest.NewHistory("usertable", "f")}
	for i := 0; i < 2000; i++ {
		w.keys = append(w.keys, fmt.Sprintf("user%d", 1000000+i*37813))
	}
	return w
}

func (w *workload) preload(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// an open transaction keeps version garbage collection below every
	// version the lost-commit check reads
	pin, err := w.cl.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pin.Abort)
	for i := 0; i < len(w.keys); i += 50 {
		tx, err := w.cl.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		kv := map[string]string{}
		for _, k := range w.keys[i:min(i+50, len(w.keys))] {
			kv[k] = "init"
			tx.Write("usertable", k, map[string][]byte{"f": []byte("init")})
		}
		ts, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w.h.Acked(ts, kv)
	}
}

// run drives workers until stop closes; it returns completion times.
func (w *workload) run(workers int, start time.Time, stop <-chan struct{}) []int64 {
	var wg sync.WaitGroup
	times := make([][]int64, workers)
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				tx, err := w.cl.Begin(ctx)
				if err != nil {
					cancel()
					w.errs.Add(1)
					time.Sleep(10 * time.Millisecond)
					continue
				}
				writes := map[string]string{}
				for op := 0; op < 10 && err == nil; op++ {
					k := w.keys[rng.IntN(len(w.keys))]
					if op%2 == 0 {
						_, _, err = tx.Read(ctx, "usertable", k, nil)
					} else {
						v := fmt.Sprintf("g%d-%d-%d", g, i, op)
						writes[k] = v
						err = tx.Write("usertable", k, map[string][]byte{"f": []byte(v)})
					}
				}
				var ts uint64
				if err == nil {
					ts, err = tx.Commit(ctx)
				}
				cancel()
				switch {
				case err == nil:
					w.commits.Add(1)
					times[g] = append(times[g], int64(time.Since(start)))
					w.h.Acked(ts, writes)
				case errors.Is(err, client.ErrAborted):
					w.aborts.Add(1)
					w.h.Aborted()
				default:
					w.errs.Add(1)
					w.h.Unknown()
				}
			}
		}()
	}
	wg.Wait()
	var all []int64
	for _, ts := range times {
		all = append(all, ts...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return all
}

// verify is the lost-commit check: every acknowledged commit is read
// back at its commit timestamp.
func (w *workload) verify(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	res, err := w.h.Verify(ctx, w.cl, 30*time.Second, 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v (%d errors)", res, w.errs.Load())
	if !res.OK() {
		t.Errorf("acknowledged commits lost: %v", res)
	}
	if res.Commits == 0 {
		t.Error("no acknowledged commit to check")
	}
}

// throughput buckets completion times into 100 ms windows.
func throughput(times []int64, until time.Duration) []float64 {
	const win = 100 * time.Millisecond
	out := make([]float64, int(until/win)+1)
	for _, ts := range times {
		if i := int(time.Duration(ts) / win); i < len(out) {
			out[i] += 10 // per second
		}
	}
	return out
}

// recoveryTime is the time from the fault until the 1 s moving average of
// throughput first gets back to 90 % of its mean before the fault.
func recoveryTime(tp []float64, fault time.Duration) (base float64, rec time.Duration, dip float64) {
	fi := int(fault / (100 * time.Millisecond))
	for _, v := range tp[max(0, fi-20):fi] {
		base += v
	}
	base /= float64(min(20, fi))
	dip = base
	for i := fi; i+10 <= len(tp); i++ {
		avg := 0.0
		for _, v := range tp[i : i+10] {
			avg += v
		}
		avg /= 10
		dip = min(dip, avg)
		if avg >= 0.9*base && i > fi {
			return base, time.Duration(i+10-fi) * 100 * time.Millisecond, dip
		}
	}
	return base, -1, dip
}

func TestServerKillUnderLoad(t *testing.T) {
	env, _ := isolate(t)
	c := up(t, env, 2, map[string]string{"txkv.heartbeat": "250ms", "txkv.session-timeout": "1s"})
	l := txkvl.Launcher{}
	ctx := context.Background()
	if err := l.Refresh(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		if n.Down || !strings.HasPrefix(n.Addr, "127.0.0.1:") {
			t.Errorf("node after Up: %+v", n)
		}
	}
	if n, _ := c.Node("s1"); n.Role != txkvl.RoleRegionServer {
		t.Errorf("s1 role %q", n.Role)
	}
	cl := open(t, coordAddr(t, c))
	defer cl.Close(ctx)
	w := newWorkload(cl)
	w.preload(t)

	start := time.Now()
	stop := make(chan struct{})
	done := make(chan []int64)
	go func() { done <- w.run(16, start, stop) }()
	time.Sleep(4 * time.Second)
	victim, _ := c.Node("s1")
	faultAt := time.Since(start)
	if err := launcher.Kill(ctx, victim.PID); err != nil {
		t.Fatal(err)
	}
	victim.PID, victim.Down = 0, true
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := l.WaitHealthy(wctx, c)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	healthyAt := time.Since(start)
	time.Sleep(5 * time.Second)
	close(stop)
	times := <-done
	end := time.Since(start)
	w.verify(t)

	tp := throughput(times, end)
	base, rec, dip := recoveryTime(tp, faultAt)
	t.Logf("server kill -9: throughput before %.0f txn/s, lowest 1 s average after %.0f txn/s; regions online again %.2fs after the kill; throughput back to 90%% after %.2fs",
		base, dip, (healthyAt - faultAt).Seconds(), rec.Seconds())
	if rec < 0 {
		t.Errorf("throughput did not come back to 90%% of %.0f txn/s", base)
	}
	st, err := txkvl.Status(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, r := range st.Recoveries {
		if r.Kind == "server" && r.Name == "s1" {
			found = true
			t.Logf("recovery of s1: %d regions, %d write-sets replayed after T_P %d, %v from detection to done",
				r.Regions, r.Replayed, r.From, r.Done.Sub(r.Detected).Round(time.Millisecond))
		}
	}
	if !found {
		t.Error("no recovery of s1 recorded")
	}
	// the same record as the fault watcher gets it (failure-detected and
	// recovered events)
	recs, err := l.Recoveries(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Kind != "server" || recs[0].Name != "s1" || !recs[0].Done.After(recs[0].Detected) ||
		!strings.Contains(recs[0].Detail, "write-sets replayed") {
		t.Errorf("Recoveries = %+v, want one server recovery of s1", recs)
	}
	// the region comes back: s1 restarts and the cluster is healthy with it
	if err := l.StartNode(ctx, env, c, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitHealthy(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := l.Refresh(ctx, c); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Node("s1"); n.Down {
		t.Error("s1 down after restart")
	}
}

func TestClientKillAfterCommitBeforeFlush(t *testing.T) {
	env, _ := isolate(t)
	c := up(t, env, 2, map[string]string{"txkv.heartbeat": "250ms", "txkv.session-timeout": "1s"})
	ctx := context.Background()
	addr := coordAddr(t, c)
	const n = 50
	cmd := exec.Command(os.Args[0], "crashclient", addr, strconv.Itoa(n))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "committed" {
		cmd.Process.Kill()
		t.Fatalf("crash client: %q", line)
	}
	cl := open(t, addr)
	defer cl.Close(ctx)
	// committed but never flushed: not visible yet
	tx, _ := cl.Begin(ctx)
	if _, ok, _ := tx.Read(ctx, "usertable", "user10cc0", nil); ok {
		t.Fatal("unflushed write visible before the crash")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for i := 0; i < n; i++ {
		k, want := fmt.Sprintf("user%02dcc%d", 10+i%80, i), fmt.Sprintf("v%d", i)
		for {
			tx, err := cl.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			m, _, err := tx.Read(ctx, "usertable", k, nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(m["f"]) == want {
				break
			}
			if time.Since(killed) > 20*time.Second {
				t.Fatalf("key %s: %q after 20 s, want %q (replayed)", k, m["f"], want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	visible := time.Since(killed)
	st, err := txkvl.Status(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Recoveries {
		if r.Kind == "client" && r.Name == "crashclient" {
			t.Logf("client kill -9 after commit, before flush: %d write-sets replayed after T_F %d; replay took %v after detection; all %d writes visible %.2fs after the kill",
				r.Replayed, r.From, r.Done.Sub(r.Detected).Round(time.Millisecond), n, visible.Seconds())
			if r.Replayed != n {
				t.Errorf("replayed %d, want %d", r.Replayed, n)
			}
		}
	}
}

// TestCoordinatorKillUnderLoad: kill -9 of the coordinator under load,
// started again 2 s later on its address and data directory. Servers keep
// their registrations, the client registers again, the coordinator
// replays its log before it serves transactions; no acknowledged commit
// is lost and the load comes back.
func TestCoordinatorKillUnderLoad(t *testing.T) {
	env, _ := isolate(t)
	c := up(t, env, 2, map[string]string{"txkv.heartbeat": "250ms", "txkv.session-timeout": "1s"})
	l := txkvl.Launcher{}
	ctx := context.Background()
	cl := open(t, coordAddr(t, c))
	defer cl.Close(ctx)
	w := newWorkload(cl)
	w.preload(t)
	before, err := txkvl.Status(ctx, c)
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	stop := make(chan struct{})
	done := make(chan []int64)
	go func() { done <- w.run(16, start, stop) }()
	time.Sleep(4 * time.Second)
	victim, _ := c.Node(txkvl.CoordinatorNode)
	faultAt := time.Since(start)
	if err := launcher.Kill(ctx, victim.PID); err != nil {
		t.Fatal(err)
	}
	victim.PID, victim.Down = 0, true
	time.Sleep(2 * time.Second)
	startAt := time.Since(start)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = l.StartNode(sctx, env, c, txkvl.CoordinatorNode)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = l.WaitHealthy(wctx, c)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	healthyAt := time.Since(start)
	time.Sleep(6 * time.Second)
	close(stop)
	times := <-done
	end := time.Since(start)
	w.verify(t)

	tp := throughput(times, end)
	base, rec, dip := recoveryTime(tp, faultAt)
	t.Logf("coordinator kill -9, start 2 s later: throughput before %.0f txn/s, lowest 1 s average after %.0f txn/s; serving transactions again %.2fs after the start (%.2fs after the kill); throughput back to 90%% %.2fs after the kill",
		base, dip, (healthyAt - startAt).Seconds(), (healthyAt - faultAt).Seconds(), rec.Seconds())
	if rec < 0 {
		t.Errorf("throughput did not come back to 90%% of %.0f txn/s", base)
	}
	st, err := txkvl.Status(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, r := range st.Recoveries {
		if r.Kind == "coordinator" {
			found = true
			t.Logf("coordinator restart recovery: %d write-sets replayed from the log, %v from the start to serving",
				r.Replayed, r.Done.Sub(r.Detected).Round(time.Millisecond))
		}
	}
	if !found {
		t.Error("no coordinator recovery recorded")
	}
	if b, err := os.ReadFile(victim.LogFile); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "restart recovery done") || strings.Contains(line, "restarted:") {
				t.Logf("coordinator log: %s", line)
			}
		}
	}
	for i, s := range st.Servers {
		if i >= len(before.Servers) || s.ID != before.Servers[i].ID || !s.Live {
			t.Errorf("server after the restart %+v, before %+v", s, before.Servers)
		}
	}
	if err := l.Refresh(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		if n.Down {
			t.Errorf("node %s down after the restart", n.Name)
		}
	}

	// a clean stop and start (the restart fault) works too
	victim, _ = c.Node(txkvl.CoordinatorNode)
	if err := launcher.Terminate(ctx, victim.PID, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	victim.PID, victim.Down = 0, true
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := l.StartNode(rctx, env, c, txkvl.CoordinatorNode); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitHealthy(rctx, c); err != nil {
		t.Fatal(err)
	}
	tx, err := cl.Begin(rctx)
	if err != nil {
		t.Fatal(err)
	}
	tx.Write("usertable", "user55after", map[string][]byte{"f": []byte("clean")})
	if _, err := tx.Commit(rctx); err != nil {
		t.Fatalf("commit after a clean restart: %v", err)
	}
	for {
		tx, err := cl.Begin(rctx)
		if err != nil {
			t.Fatal(err)
		}
		m, _, err := tx.Read(rctx, "usertable", "user55after", nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(m["f"]) == "clean" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServerPausedAcrossLease: a region server is paused (SIGSTOP) under
// load until the recovery manager declared it failed and its regions
// were recovered on the other server, then resumed (SIGCONT): a zombie.
// It must write no region file after it was declared failed (its WAL
// directory was moved aside by then, see coord.fenceWAL) and exit (it was declared failed); every
// acknowledged commit stays readable at its commit timestamp.
func TestServerPausedAcrossLease(t *testing.T) {
	env, _ := isolate(t)
	// a small memstore: every region is over the flush size all the time,
	// so the zombie's flusher has something to write the moment it runs
	c := up(t, env, 2, map[string]string{"txkv.heartbeat": "250ms", "txkv.session-timeout": "1s", "txkv.memstore-flush-size": "4096"})
	l := txkvl.Launcher{}
	ctx := context.Background()
	cl := open(t, coordAddr(t, c))
	defer cl.Close(ctx)
	w := newWorkload(cl)
	w.preload(t)
	start := time.Now()
	stop := make(chan struct{})
	done := make(chan []int64)
	go func() { done <- w.run(16, start, stop) }()
	time.Sleep(2 * time.Second)

	victim, _ := c.Node("s1")
	pid := victim.PID
	if err := launcher.Signal(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = launcher.Signal(pid, syscall.SIGCONT)
		}
	}()
	var failedAt time.Time
	for deadline := time.Now().Add(60 * time.Second); failedAt.IsZero(); {
		st, err := txkvl.Status(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range st.Recoveries {
			if r.Kind == "server" && r.Name == "s1" {
				failedAt = r.Detected
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("s1 was not declared failed and recovered within 60 s of its pause")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := launcher.Signal(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	resumedAt := time.Now()
	for deadline := time.Now().Add(30 * time.Second); launcher.Alive(pid); {
		if time.Now().After(deadline) {
			t.Fatal("the resumed server did not exit within 30 s (it was declared failed)")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("s1 paused, declared failed at %v, resumed %v later, exited after %v",
		failedAt.Format("15:04:05.000"), resumedAt.Sub(failedAt).Round(time.Millisecond), time.Since(resumedAt).Round(time.Millisecond))
	victim.PID, victim.Down = 0, true
	// region files are named <unix nanoseconds>-<server>.rf
	for _, f := range filesUnder(t, filepath.Join(txkvl.StorageDir(c), "regions"), "-s1.rf") {
		ns, err := strconv.ParseInt(strings.SplitN(filepath.Base(f), "-", 2)[0], 10, 64)
		if err == nil && time.Unix(0, ns).After(failedAt) {
			t.Errorf("the zombie wrote region file %s after it was declared failed", f)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err := l.WaitHealthy(wctx, c)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	close(stop)
	<-done
	w.verify(t)
}

// filesUnder lists the files under dir whose names end in suffix.
func filesUnder(t *testing.T, dir, suffix string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, suffix) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
