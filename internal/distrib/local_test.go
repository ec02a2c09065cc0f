package distrib_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/distrib"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/launcher"
	etcdlauncher "github.com/faultbench/faultbench/internal/launcher/etcd"
	"github.com/faultbench/faultbench/internal/launcher/redis"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/targets"
)

// coordEnv makes this test binary a coordinator of client processes
// whose properties are in the file it names (TestCoordinatorKilled).
const coordEnv = "FAULTBENCH_TEST_DISTRIB_COORDINATOR"

func TestMain(m *testing.M) {
	if path := os.Getenv(coordEnv); path != "" {
		os.Unsetenv(coordEnv) // its workers are workers
		p := properties.New()
		if err := p.LoadFile(path); err != nil {
			fmt.Fprintln(os.Stderr, "coordinator:", err)
			os.Exit(1)
		}
		bin, _ := os.Executable()
		dir := filepath.Dir(path)
		_, err := distrib.Run(context.Background(), distrib.Spec{Spec: experiment.Spec{Target: "redis", Phase: runner.Run, Props: p,
			RunsDir: filepath.Join(dir, "runs"), Quiet: true, StateDir: filepath.Join(dir, "state"), Targets: targets.Builtin()}, Processes: true, Binary: bin})
		if err != nil {
			fmt.Fprintln(os.Stderr, "coordinator:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// the test binary serves as the faultbench binary the local client
	// processes (`<self> worker`) and the etcd launcher (`<self> node etcd
	// ...`) start
	if len(os.Args) > 1 && os.Args[1] == distrib.WorkerCommand {
		if err := distrib.Work(context.Background(), os.Stdin, os.Stdout, targets.Builtin()); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) > 2 && os.Args[1] == "node" && os.Args[2] == "etcd" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := etcdlauncher.RunNode(ctx, os.Args[3:])
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if err := stopSharedRedis(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// sharedRedis is the package's one standalone redis-server, loaded once
// with redisRecords records and shared by the tests that need one (they
// only read and update): starting and loading it per test cost each of
// them a redis start and a load phase with its report. TestMain stops it
// after the tests.
var sharedRedis struct {
	once sync.Once
	dir  string
	cl   *launcher.Cluster
	p    *properties.Properties
	err  error
}

// redisRecords is the number of records the shared redis-server holds.
const redisRecords = 600

// startRedis returns the redis target and properties for the shared
// redis-server (started on first use), with recordcount records (at most
// redisRecords), skipping under -short and without redis-server.
func startRedis(t *testing.T, records int) (*targets.Target, *properties.Properties) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts redis-server and client processes")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not on PATH")
	}
	if records > redisRecords {
		t.Fatalf("the shared redis-server holds %d records, not %d", redisRecords, records)
	}
	s := &sharedRedis
	s.once.Do(func() { s.err = startSharedRedis() })
	if s.err != nil {
		t.Fatal(s.err)
	}
	tgt, _ := targets.Builtin().Get("redis")
	p := s.p.Clone()
	p.Set("recordcount", strconv.Itoa(records))
	return tgt, p
}

// startSharedRedis starts sharedRedis's server and loads it.
func startSharedRedis() error {
	s := &sharedRedis
	var err error
	if s.dir, err = os.MkdirTemp("", "distrib-redis-"); err != nil {
		return err
	}
	env, err := launcher.NewEnv()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if s.cl, err = (redis.StandaloneLauncher{}).Up(ctx, env, launcher.Spec{Name: "distrib-procs-test", Nodes: 1, Dir: filepath.Join(s.dir, "redis")}); err != nil {
		return fmt.Errorf("redis Up: %w", err)
	}
	reg := targets.Builtin()
	tgt, _ := reg.Get("redis")
	p := properties.New()
	for k, v := range map[string]string{
		"recordcount": strconv.Itoa(redisRecords), "fieldcount": "2", "fieldlength": "20", "threadcount": "4",
		"readproportion": "0.5", "updateproportion": "0.5", "insertproportion": "0", "requestdistribution": "uniform",
	} {
		p.Set(k, v)
	}
	tgt.ConnectTo(p, s.cl)
	if _, err := experiment.Run(ctx, experiment.Spec{Target: "redis", Phase: runner.Load, Props: p.Clone(), RunsDir: filepath.Join(s.dir, "runs"), Quiet: true,
		StateDir: filepath.Join(s.dir, "state"), Targets: reg}); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	s.p = p
	return nil
}

// stopSharedRedis stops the shared redis-server, if it was started, and
// removes its directory.
func stopSharedRedis() error {
	s := &sharedRedis
	var err error
	if s.cl != nil {
		if err = launcher.Down(context.Background(), s.cl, 5*time.Second); err != nil {
			err = fmt.Errorf("redis Down: %w", err)
		}
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
	return err
}

// workerChildren returns the pids of this process's children that run
// `worker`.
func workerChildren(t *testing.T) []int {
	t.Helper()
	return workerChildrenOf(t, os.Getpid())
}

// workerChildrenOf returns the pids of parent's children that run `worker`.
func workerChildrenOf(t *testing.T, parent int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Error(err) // not Fatal: called from other goroutines too
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmd), "\x00"+distrib.WorkerCommand) {
			out = append(out, pid)
		}
	}
	return out
}

// alive reports whether pid is a process that has not been reaped.
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// readCSV reads a CSV file of a run directory.
func readCSV(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

// runProcesses runs a 3-client run phase of p, with props set, as client
// processes of this test binary.
func runProcesses(t *testing.T, p *properties.Properties, props map[string]string) (*distrib.Result, error) {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p.Set("operationcount", "0")
	p.Set("measurement.window", "500ms")
	p.Set("clients", "3")
	p.Set("clients.process", "true")
	for k, v := range props {
		p.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return distrib.Run(ctx, distrib.Spec{Spec: experiment.Spec{Target: "redis", Phase: runner.Run, Props: p,
		RunsDir: t.TempDir(), Quiet: true, StateDir: t.TempDir(), Targets: targets.Builtin()}, Processes: true, Binary: bin})
}

// TestClientProcesses runs a run phase against a real redis-server with
// clients=3 as three local worker processes and checks the exact merge
// (the run's totals, windows and client rows against what each process
// delivered), the per-client spread, env.json, and that no process is
// left.
func TestClientProcesses(t *testing.T) {
	_, p := startRedis(t, 600)
	res, err := runProcesses(t, p, map[string]string{"threadcount": "7", "target": "300", "maxexecutiontime": "3s"})
	if err != nil {
		t.Fatal(err)
	}
	wantThreads := []int{3, 2, 2}
	t.Run("every process delivered its share", func(t *testing.T) {
		if len(res.Workers) != 3 || len(res.Missing) != 0 {
			t.Fatalf("workers %d, missing %v", len(res.Workers), res.Missing)
		}
		for i, w := range res.Workers {
			if w.Status != "done" || w.Host != distrib.ProcessName(i) || !strings.HasPrefix(w.Address, "pid ") || w.Threads != wantThreads[i] || w.OK == 0 {
				t.Errorf("worker %d: %+v", i, w)
			}
		}
	})
	t.Run("merged counts are the sum of the groups'", func(t *testing.T) {
		var ok, ops int64
		for _, w := range res.Workers {
			ok += w.OK
			ops += w.Operations
		}
		if res.Totals.All.OK != ok {
			t.Errorf("run OK %d, the processes reported %d", res.Totals.All.OK, ok)
		}
		var windowOps int64
		for _, r := range readCSV(t, filepath.Join(res.Dir, "windows.csv")) {
			if r["op"] != "ALL" {
				continue
			}
			for k, v := range r {
				if k == "ok" || strings.HasPrefix(k, "err_") {
					windowOps += atoi(t, v)
				}
			}
		}
		if windowOps != ops {
			t.Errorf("windows.csv ALL rows hold %d operations, the processes sent %d", windowOps, ops)
		}
		rows := readCSV(t, filepath.Join(res.Dir, "clients.csv"))
		if len(rows) != 3 {
			t.Fatalf("clients.csv: %d rows, want 3", len(rows))
		}
		for i, r := range rows {
			if got := atoi(t, r["ok"]); got != res.Workers[i].OK {
				t.Errorf("clients.csv client %d: ok %d, process %d reported %d", i, got, i, res.Workers[i].OK)
			}
		}
	})
	t.Run("per-client spread and env.json", func(t *testing.T) {
		var sum rundir.Summary
		readJSON(t, filepath.Join(res.Dir, "summary.json"), &sum)
		pc := sum.PerClient
		if pc == nil || len(pc.Clients) != 3 {
			t.Fatalf("summary.json per_client: %+v", pc)
		}
		for i, c := range pc.Clients {
			if c.Workers != wantThreads[i] || c.OK != res.Workers[i].OK || c.ThroughputOps <= 0 {
				t.Errorf("per_client %d: %+v", i, c)
			}
		}
		var tp []float64
		for _, c := range pc.Clients {
			tp = append(tp, c.ThroughputOps)
		}
		if cv, ok := analyze.CoefficientOfVariation(tp); !ok || pc.ThroughputCV != cv {
			t.Errorf("throughput_cv %v, the clients' throughputs %v give %v", pc.ThroughputCV, tp, cv)
		}
		var env rundir.Env
		readJSON(t, filepath.Join(res.Dir, "env.json"), &env)
		if env.ClientGroups != rundir.ClientGroupsProcesses || len(env.Clients) != 3 {
			t.Errorf("env.json client_groups %q, %d clients", env.ClientGroups, len(env.Clients))
		}
		b, err := os.ReadFile(filepath.Join(res.Dir, "report.html"))
		if err != nil || !strings.Contains(string(b), "Clients") {
			t.Errorf("report.html has no clients section (%v)", err)
		}
	})
	t.Run("no process left", func(t *testing.T) {
		for _, w := range res.Workers {
			pid, _ := strconv.Atoi(strings.TrimPrefix(w.Address, "pid "))
			if pid > 0 && alive(pid) {
				t.Errorf("%s (pid %d) still runs", w.Host, pid)
			}
		}
		if left := workerChildren(t); len(left) > 0 {
			t.Errorf("worker processes left: %v", left)
		}
	})
}

// TestClientProcessDies kills one of three worker processes during the
// run: its share is reported missing, an event says so, and the others'
// are merged.
func TestClientProcessDies(t *testing.T) {
	_, p := startRedis(t, 300)
	killed := make(chan int, 1)
	go func() {
		// once three workers run and the phase is under way, kill one
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			if pids := workerChildren(t); len(pids) == 3 {
				time.Sleep(2500 * time.Millisecond)
				if err := syscall.Kill(pids[0], syscall.SIGKILL); err == nil {
					killed <- pids[0]
				}
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	res, err := runProcesses(t, p, map[string]string{"threadcount": "3", "target": "150", "maxexecutiontime": "4s"})
	var pid int
	select {
	case pid = <-killed:
	default:
		t.Fatalf("no worker was killed (run: %v)", err)
	}
	if err == nil || !strings.Contains(err.Error(), "shares are missing") {
		t.Fatalf("run error %v, want the missing share", err)
	}
	if res == nil || len(res.Missing) != 1 {
		t.Fatalf("result %+v, want one missing share", res)
	}
	dead := res.Workers[res.Missing[0]]
	if dead.Status != "died" || dead.Address != "pid "+strconv.Itoa(pid) {
		t.Errorf("missing worker %+v, want the killed pid %d, died", dead, pid)
	}
	evs, err := os.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
	if err != nil || !strings.Contains(string(evs), distrib.EventWorkerDied) {
		t.Errorf("events.jsonl has no %s event (%v)", distrib.EventWorkerDied, err)
	}
	var sum rundir.Summary
	readJSON(t, filepath.Join(res.Dir, "summary.json"), &sum)
	if !sum.Failed || sum.PerClient == nil || len(sum.PerClient.Clients) != 2 {
		t.Errorf("summary: failed %v, per_client %+v; want failed and the two finished clients", sum.Failed, sum.PerClient)
	}
	if left := workerChildren(t); len(left) > 0 {
		t.Errorf("worker processes left: %v", left)
	}
	// the killed worker could not remove its own run directory: the
	// coordinator removes the directory it gave each worker
	for _, pat := range []string{"faultbench-process-*", "faultbench-worker-*"} {
		if left, _ := filepath.Glob(filepath.Join(os.TempDir(), pat)); len(left) > 0 {
			t.Errorf("worker directories left: %v", left)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestCoordinatorKilled kills (SIGKILL) a coordinator of three client
// processes during its run: its workers end with it (the kernel kills them,
// Pdeathsig; a worker whose standard input closes would end anyway).
func TestCoordinatorKilled(t *testing.T) {
	_, p := startRedis(t, 300)
	for k, v := range map[string]string{"threadcount": "3", "target": "150", "maxexecutiontime": "60s", "operationcount": "0",
		"clients": "3", "clients.process": "true"} {
		p.Set(k, v)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "run.properties")
	var b strings.Builder
	for k, v := range p.Map() {
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	coord := exec.Command(bin, "-test.run=^$")
	// a killed coordinator cannot remove its workers' directories: keep
	// them in the test's own
	coord.Env = append(os.Environ(), coordEnv+"="+path, "TMPDIR="+dir)
	var stderr strings.Builder
	coord.Stderr = &stderr
	if err := coord.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = coord.Wait(); close(exited) }()
	defer func() {
		_ = coord.Process.Kill()
		<-exited
	}()
	var workers []int
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && len(workers) < 3; time.Sleep(100 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("the coordinator ended before its workers ran: %s", stderr.String())
		default:
		}
		workers = workerChildrenOf(t, coord.Process.Pid)
	}
	if len(workers) != 3 {
		t.Fatalf("the coordinator started %d workers within a minute, want 3: %s", len(workers), stderr.String())
	}
	time.Sleep(time.Second) // into the phase
	if err := coord.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	// the kernel signals them at once; the bound is generous for a loaded machine
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		left := 0
		for _, pid := range workers {
			if alive(pid) && !zombie(pid) {
				left++
			}
		}
		if left == 0 {
			return
		}
	}
	t.Errorf("worker processes %v outlived their killed coordinator", workers)
}

// zombie reports whether pid has exited but not been reaped (its new
// parent, init, reaps it in its own time).
func zombie(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true // gone
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}
