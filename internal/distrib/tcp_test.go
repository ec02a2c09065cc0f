package distrib_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/distrib"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/launcher/etcd"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/targets"
)

// TestWorkersConnect runs a load phase whose two workers connect to the
// coordinator over TCP (`faultbench worker --connect`, the Kubernetes
// transport) against a one-member etcd on 127.0.0.1.
func TestWorkersConnect(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and worker processes")
	}
	bin := os.Getenv("FAULTBENCH_BIN")
	if bin == "" {
		t.Skip("FAULTBENCH_BIN is not set (the workers run the faultbench binary; make test sets it)")
	}
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	env.Self = bin
	cl, err := etcd.Launcher{}.Up(ctx, env, launcher.Spec{Nodes: 1, Dir: filepath.Join(tmp, "etcd")})
	if err != nil {
		t.Fatal(err)
	}
	defer launcher.Down(context.Background(), cl, 5*time.Second)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	for range 2 {
		cmd := exec.CommandContext(ctx, bin, distrib.WorkerCommand, "--connect", l.Addr().String())
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	reg := targets.Builtin()
	tgt, _ := reg.Get("etcd")
	p := properties.New()
	for k, v := range map[string]string{"recordcount": "400", "fieldcount": "1", "threadcount": "2", "measurement.window": "200ms"} {
		p.Set(k, v)
	}
	tgt.ConnectTo(p, cl)
	res, err := distrib.Run(ctx, distrib.Spec{
		Spec: experiment.Spec{Target: "etcd", Phase: runner.Load, Props: p,
			RunsDir: filepath.Join(tmp, "runs"), Quiet: true, StateDir: filepath.Join(tmp, "state"), Targets: reg},
		Listener: l, Workers: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	var ok int64
	for _, w := range res.Workers {
		if w.Status != "done" || w.OK != 200 {
			t.Errorf("worker %d (%s): %s, %d ok, want done and 200", w.Client, w.Address, w.Status, w.OK)
		}
		ok += w.OK
	}
	if res.Totals.All.OK != ok || res.Totals.All.Intended.TotalCount() != ok {
		t.Fatalf("merged %d ok (histogram %d), workers %d", res.Totals.All.OK, res.Totals.All.Intended.TotalCount(), ok)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("worker process: %v", err)
		}
	}
}

// TestWorkerDies kills one of three workers mid-run: the run goes on with
// the others, the death is an event naming the missing share, the worker
// is reported missing and the command fails.
func TestWorkerDies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and worker processes")
	}
	bin := os.Getenv("FAULTBENCH_BIN")
	if bin == "" {
		t.Skip("FAULTBENCH_BIN is not set (the workers run the faultbench binary; make test sets it)")
	}
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	env.Self = bin
	cl, err := etcd.Launcher{}.Up(ctx, env, launcher.Spec{Nodes: 1, Dir: filepath.Join(tmp, "etcd")})
	if err != nil {
		t.Fatal(err)
	}
	defer launcher.Down(context.Background(), cl, 5*time.Second)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	for range 3 {
		cmd := exec.CommandContext(ctx, bin, distrib.WorkerCommand, "--connect", l.Addr().String())
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	// the victim dies a second into the 4 s run (the run starts about a
	// second after the workers connect)
	go func() {
		time.Sleep(3 * time.Second)
		cmds[1].Process.Kill()
	}()
	reg := targets.Builtin()
	tgt, _ := reg.Get("etcd")
	p := properties.New()
	for k, v := range map[string]string{"recordcount": "300", "fieldcount": "1", "threadcount": "3", "target": "150",
		"readproportion": "1", "updateproportion": "0", "maxexecutiontime": "4", "measurement.window": "200ms"} {
		p.Set(k, v)
	}
	tgt.ConnectTo(p, cl)
	res, err := distrib.Run(ctx, distrib.Spec{
		Spec: experiment.Spec{Target: "etcd", Phase: runner.Run, Props: p,
			RunsDir: filepath.Join(tmp, "runs"), Quiet: true, StateDir: filepath.Join(tmp, "state"), Targets: reg},
		Listener: l, Workers: 3,
	})
	if err == nil || !strings.Contains(err.Error(), "1 of 3 workers did not finish") {
		t.Fatalf("want the run to fail naming the missing worker, got %v", err)
	}
	if res == nil || len(res.Missing) != 1 {
		t.Fatalf("missing: %+v", res)
	}
	died := res.Workers[res.Missing[0]]
	if died.Status != "died" {
		t.Errorf("the killed worker is %q (%s), want died", died.Status, died.Detail)
	}
	var ok int64
	for _, w := range res.Workers {
		ok += w.OK
	}
	if res.Totals.All.OK < ok {
		t.Errorf("merged %d ok, fewer than the finished workers' %d", res.Totals.All.OK, ok)
	}
	evs, err := os.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(evs), `"kind":"worker-died"`) || !strings.Contains(string(evs), "missing share: 1 threads, 50 ops/s") {
		t.Errorf("no worker-died event naming the share:\n%s", evs)
	}
	sum, _ := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
	if !strings.Contains(string(sum), `"failed": true`) {
		t.Errorf("summary.json not marked failed:\n%s", sum)
	}
	for _, c := range cmds {
		_ = c.Wait()
	}
}
