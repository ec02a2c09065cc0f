package distrib_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/faultbench/faultbench/internal/distrib"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/launcher/etcd"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/remote"
	"github.com/faultbench/faultbench/internal/remote/sshtest"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/targets"
)

// offsetAddresser places a cluster's node i on host i+off of a namespace
// network (the first hosts are the client hosts).
type offsetAddresser struct {
	a interface {
		launcher.Addresser
		launcher.ArgvWrapper
	}
	off int
}

func (o offsetAddresser) Host(i int) string                      { return o.a.Host(i + o.off) }
func (o offsetAddresser) Port(h string) (int, error)             { return o.a.Port(h) }
func (o offsetAddresser) WrapArgv(i int, argv []string) []string { return o.a.WrapArgv(i+o.off, argv) }

// TestDistributedLoad loads a 3-member etcd from 3 client hosts, each a
// network namespace running Debian's sshd, and checks the coordinator's
// merge against what the workers sent, the inserts against the database,
// and that nothing is left behind.
func TestDistributedLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sshd in network namespaces")
	}
	if err := sshtest.Available(); err != nil {
		t.Skip("skipping the distributed test:", err)
	}
	bin := os.Getenv("FAULTBENCH_BIN")
	if bin == "" {
		t.Skip("skipping the distributed test: FAULTBENCH_BIN is not set (the client hosts run the faultbench binary; make test sets it)")
	}
	tmp := t.TempDir()
	workerDirsBefore := workerDirs()
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()

	c, n := remote.RoleClient, remote.RoleNode
	hosts, err := sshtest.Start(ctx, tmp, 6, [][]remote.Role{{c}, {c}, {c}, {n}, {n}, {n}})
	if err != nil {
		t.Fatal(err)
	}
	hostNamespaces := hosts.Namespaces()
	if len(hostNamespaces) != 7 {
		t.Fatalf("namespaces %v, want 6 hosts and a bridge", hostNamespaces)
	}
	closed := false
	closeHosts := func() {
		if !closed {
			closed = true
			if err := hosts.Close(context.Background()); err != nil {
				t.Error(err)
			}
		}
	}
	defer closeHosts()

	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	env.Self = bin
	na, err := hosts.Network.Addresser(bin)
	if err != nil {
		t.Fatal(err)
	}
	env.Addrs = offsetAddresser{a: na, off: 3}
	cl, err := etcd.Launcher{}.Up(ctx, env, launcher.Spec{Nodes: 3, Dir: filepath.Join(tmp, "etcd")})
	if err != nil {
		t.Fatal(err)
	}
	downed := false
	down := func() {
		if !downed {
			downed = true
			if err := launcher.Down(context.Background(), cl, 5*time.Second); err != nil {
				t.Error(err)
			}
		}
	}
	defer down()

	reg := targets.Builtin()
	tgt, _ := reg.Get("etcd")
	const records = 3000
	p := properties.New()
	for k, v := range map[string]string{
		"recordcount": "3000", "fieldcount": "2", "fieldlength": "20", "threadcount": "6", "target": "1500",
		"measurement.window": "500ms",
	} {
		p.Set(k, v)
	}
	tgt.ConnectTo(p, cl)
	inv, err := remote.Load(hosts.Inventory)
	if err != nil {
		t.Fatal(err)
	}
	res, err := distrib.Run(ctx, distrib.Spec{
		Spec: experiment.Spec{Target: "etcd", Phase: runner.Load, Props: p,
			RunsDir: filepath.Join(tmp, "runs"), Quiet: true, StateDir: filepath.Join(tmp, "state"), Targets: reg},
		Inventory: inv, Binary: bin,
	})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("every worker delivered its share", func(t *testing.T) {
		if len(res.Workers) != 3 || len(res.Missing) != 0 {
			t.Fatalf("workers %d, missing %v", len(res.Workers), res.Missing)
		}
		next := int64(0)
		for _, w := range res.Workers {
			if w.Status != "done" {
				t.Errorf("client %d: %s %s", w.Client, w.Status, w.Detail)
			}
			if w.InsertStart != next || w.OK != w.InsertCount {
				t.Errorf("client %d: keys %d+%d (want start %d), %d inserted", w.Client, w.InsertStart, w.InsertCount, next, w.OK)
			}
			next += w.InsertCount
			t.Logf("client %d (%s): %d ops in %d windows, %.1f ops/s, clock offset %.3f ± %.3f ms",
				w.Client, w.Host, w.Operations, w.Windows, w.Throughput, w.ClockOffsetMs, w.ClockUncertaintyMs)
		}
		if next != records {
			t.Errorf("key ranges cover %d records, want %d", next, records)
		}
		t.Logf("per-client throughput CV %.4f", res.CV)
	})
	t.Run("merged counts equal the union of the workers'", func(t *testing.T) {
		var sent, sentOK int64
		for _, w := range res.Workers {
			sent += w.Operations
			sentOK += w.OK
		}
		rows, err := measure.ReadWindows(filepath.Join(res.Dir, measure.WindowsFile))
		if err != nil {
			t.Fatal(err)
		}
		var merged int64
		for _, r := range rows {
			if r.Op == measure.AllOps {
				merged += r.OK + r.ErrorCount()
			}
		}
		if merged != sent {
			t.Errorf("windows.csv counts %d operations, the workers sent %d", merged, sent)
		}
		if got := res.Totals.All.Intended.TotalCount(); got != sentOK || res.Totals.All.OK != sentOK {
			t.Errorf("merged histogram holds %d, totals %d ok, the workers reported %d", got, res.Totals.All.OK, sentOK)
		}
		hl, err := measure.ReadHistLogs(res.Dir)
		if err != nil {
			t.Fatal(err)
		}
		var inLogs int64
		for _, r := range rows {
			if r.Op != measure.AllOps {
				continue
			}
			h := measure.NewLatencyHistogram()
			hl.MergeWindow(measure.AllOps, r.Start, h)
			if h.TotalCount() != r.OK {
				t.Errorf("window %v: hist/all.hlog holds %d, windows.csv %d ok", r.Start, h.TotalCount(), r.OK)
			}
			inLogs += h.TotalCount()
		}
		if inLogs != sentOK {
			t.Errorf("hist/all.hlog holds %d, the workers reported %d ok", inLogs, sentOK)
		}
		t.Logf("merged: %d operations (%d ok) = sum of the workers' %d", merged, res.Totals.All.OK, sent)
	})
	t.Run("inserts did not collide", func(t *testing.T) {
		var eps []string
		for _, nd := range cl.Nodes {
			eps = append(eps, "http://"+nd.Addr)
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		gctx, gcancel := context.WithTimeout(ctx, 10*time.Second)
		defer gcancel()
		r, err := cli.Get(gctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if r.Count != records {
			t.Fatalf("etcd holds %d keys, want %d (one per record, each inserted by one worker)", r.Count, records)
		}
	})
	t.Run("env.json records the clock offsets", func(t *testing.T) {
		var e rundir.Env
		b, err := os.ReadFile(filepath.Join(res.Dir, "env.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		if len(e.Clients) != 3 || e.Clients[2].Address != inv.Hosts[2].Address {
			t.Fatalf("clients in env.json: %+v", e.Clients)
		}
	})

	// a run phase (reads and updates, no inserts) for the per-client spread
	rp := properties.New()
	for k, v := range map[string]string{
		"recordcount": "3000", "fieldcount": "2", "fieldlength": "20", "threadcount": "6", "target": "900",
		"readproportion": "0.5", "updateproportion": "0.5", "maxexecutiontime": "4", "measurement.window": "500ms",
	} {
		rp.Set(k, v)
	}
	tgt.ConnectTo(rp, cl)
	rres, err := distrib.Run(ctx, distrib.Spec{
		Spec: experiment.Spec{Target: "etcd", Phase: runner.Run, Props: rp,
			RunsDir: filepath.Join(tmp, "runs"), Quiet: true, StateDir: filepath.Join(tmp, "state"), Targets: reg},
		Inventory: inv, Binary: bin,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("run phase: merged totals equal the workers' sum", func(t *testing.T) {
		var ok int64
		for _, w := range rres.Workers {
			ok += w.OK
			t.Logf("run: client %d (%s): %d ok, %.1f ops/s", w.Client, w.Host, w.OK, w.Throughput)
		}
		if ok != rres.Totals.All.OK || rres.Totals.All.Intended.TotalCount() != ok {
			t.Fatalf("merged %d ok (histogram %d), workers %d", rres.Totals.All.OK, rres.Totals.All.Intended.TotalCount(), ok)
		}
		t.Logf("run: merged %d ok; per-client throughput CV %.4f", ok, rres.CV)
	})
	if keep := os.Getenv("FAULTBENCH_DISTRIB_KEEP"); keep != "" {
		// for docs: the small files of both runs
		for _, d := range []string{res.Dir, rres.Dir} {
			dst := filepath.Join(keep, filepath.Base(d))
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"summary.json", "windows.csv", "events.jsonl", "clients.csv", "workers.csv", "env.json"} {
				if b, err := os.ReadFile(filepath.Join(d, f)); err == nil {
					os.WriteFile(filepath.Join(dst, f), b, 0o644)
				}
			}
		}
	}

	down()
	closeHosts()
	t.Run("cleanup left nothing", func(t *testing.T) {
		if pids := procsWith(tmp); len(pids) > 0 {
			t.Errorf("processes left: %v", pids)
		}
		now := namespaces()
		for _, ns := range hostNamespaces {
			if now[ns] {
				t.Errorf("namespace left: %s", ns)
			}
		}
		for d := range workerDirs() {
			if !workerDirsBefore[d] {
				t.Errorf("worker temp dir left: %s", d)
			}
		}
	})
}

func namespaces() map[string]bool {
	out := map[string]bool{}
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		out[e.Name()] = true
	}
	return out
}

func workerDirs() map[string]bool {
	out := map[string]bool{}
	m, _ := filepath.Glob(filepath.Join(os.TempDir(), "faultbench-worker-*"))
	for _, d := range m {
		out[d] = true
	}
	return out
}

// procsWith returns the pids whose command line contains s.
func procsWith(s string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) && e.Name() != "self" && e.Name() != "thread-self" && e.Name() != strconv.Itoa(os.Getpid()) {
			out = append(out, e.Name())
		}
	}
	return out
}
