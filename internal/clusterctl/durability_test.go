package clusterctl

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/check"
	"github.com/faultbench/faultbench/internal/diskfs"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload"
)

// durabilityCase is one target and durability setting whose writes go
// through a power loss: the setting's documentation promises that an
// acknowledged write survives (wantLoss false) or does not (true).
type durabilityCase struct {
	name     string
	kind     string
	nodes    int
	replicas int
	opts     map[string]string
	props    map[string]string
	victim   string // the power-loss selector
	wantLoss bool
	needs    string // an executable the target needs on PATH
}

// TestPowerLossDurability runs a real cluster with its data directories on
// the disk layer, writes for two seconds with every write tagged by the
// lost-write check, cuts the power of the victim nodes, starts them again
// and reads every written key back. A setting that fsyncs before it
// acknowledges loses nothing; its negative control, the same target with
// the fsync off, loses acknowledged writes, which shows the check can
// fail. Everything written before the load is made durable first (the
// layer's sync), so what is at stake is the load's writes.
func TestPowerLossDurability(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real database processes on FUSE mounts")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skip("the disk layer needs /dev/fuse and root")
	}
	for _, tc := range durabilityCases() {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needs != "" {
				if _, err := exec.LookPath(tc.needs); err != nil {
					t.Skipf("%s not installed (scripts/setup.sh)", tc.needs)
				}
			}
			acked, lost := powerLossRound(t, tc)
			t.Logf("%s: %d acknowledged writes, %d lost after power-loss %s", tc.name, acked, lost, tc.victim)
			if tc.wantLoss && lost == 0 {
				t.Errorf("a power loss lost no acknowledged write although the setting does not fsync before acknowledging")
			}
			if !tc.wantLoss && lost > 0 {
				t.Errorf("a power loss lost %d of %d acknowledged writes although the setting fsyncs before acknowledging", lost, acked)
			}
		})
	}
}

func durabilityCases() []durabilityCase {
	redis := func(fsync string) map[string]string {
		return map[string]string{OptDisk: DiskFuse, "redis.appendonly": "yes", "redis.appendfsync": fsync}
	}
	galera := func(flush string) map[string]string {
		return map[string]string{OptDisk: DiskFuse, "galera.innodb-flush-log-at-trx-commit": flush}
	}
	pg := func(commit string) map[string]string {
		return map[string]string{OptDisk: DiskFuse, "postgres.synchronous-commit": commit}
	}
	cassandra := func(sync string) map[string]string {
		return map[string]string{OptDisk: DiskFuse, "cassandra.commitlog-sync": sync, "cassandra.rf": "1"}
	}
	txkv := func(mode string) map[string]string {
		return map[string]string{OptDisk: DiskFuse, "txkv.persistence": mode}
	}
	return []durabilityCase{
		{name: "redis appendfsync always loses nothing", kind: "redis", nodes: 1, opts: redis("always"), victim: "n1", needs: "redis-server"},
		{name: "redis appendfsync no loses acknowledged writes", kind: "redis", nodes: 1, opts: redis("no"), victim: "n1", wantLoss: true, needs: "redis-server"},
		{name: "galera flush at commit 1 loses nothing", kind: "galera", nodes: 1, opts: galera("1"), victim: "n1", needs: "/usr/sbin/mariadbd"},
		{name: "galera flush at commit 0 loses acknowledged writes", kind: "galera", nodes: 1, opts: galera("0"), victim: "n1", wantLoss: true, needs: "/usr/sbin/mariadbd"},
		{name: "postgres synchronous_commit on loses nothing", kind: "postgres-ha", nodes: 1, opts: pg("on"), victim: "all", needs: "pg_autoctl"},
		{name: "postgres synchronous_commit off loses acknowledged writes", kind: "postgres-ha", nodes: 1, opts: pg("off"), victim: "all", wantLoss: true, needs: "pg_autoctl"},
		{name: "txkv sync persistence loses nothing", kind: "txkv", nodes: 2, opts: txkv("sync"), victim: "all"},
		{name: "txkv async persistence loses nothing", kind: "txkv", nodes: 2, opts: txkv("async"), victim: "all"},
		{name: "cassandra commitlog batch loses nothing", kind: "cassandra", nodes: 1, opts: cassandra("batch"), victim: "n1", needs: "java"},
		{name: "cassandra commitlog periodic loses acknowledged writes", kind: "cassandra", nodes: 1, opts: cassandra("periodic"), victim: "n1", wantLoss: true, needs: "java"},
	}
}

// powerLossRound runs one case and returns the acknowledged writes and the
// lost ones (writes and inserts).
func powerLossRound(t *testing.T, tc durabilityCase) (acked int64, lost int) {
	// a short directory: the layer's control socket path must fit a
	// unix socket address, which t.TempDir's long names do not
	dir, err := os.MkdirTemp("", "dur")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// nodes that run as a database user (mysql, postgres) walk into it
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	m := New(filepath.Join(dir, "state"), env, nil)
	m.Grace = 5 * time.Second
	tg, err := m.Targets.Get(tc.kind)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := m.Up(ctx, tc.kind, launcher.Spec{Name: "dur", Nodes: tc.nodes, Replicas: tc.replicas, Dir: filepath.Join(dir, "c"), Options: tc.opts})
	t.Cleanup(func() {
		if c != nil {
			if err := m.Down(context.Background(), "dur"); err != nil {
				t.Errorf("down: %v", err)
			}
		}
		if left := diskfs.MountsUnder(dir); len(left) > 0 {
			t.Errorf("mounts left behind: %v", left)
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	p := properties.New()
	tg.ApplyDefaults(p)
	for k, v := range tc.props {
		p.Set(k, v)
	}
	tg.ConnectTo(p, c)
	d, err := tg.NewDriver(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// one tagged write first, so that the schema the driver makes for the
	// tag (an SQL column) is in place before the sync: what is at stake
	// is the load's rows, not the DDL
	warm := &workload.Op{Kind: workload.Insert, Key: "warmup", Values: map[string][]byte{"field0": []byte("v")}}
	wt := check.NewTracker(1)
	wtok := wt.BeforeWrite(0, warm)
	if err := d.Insert(ctx, "usertable", warm.Key, warm.Values); err != nil {
		t.Fatalf("first write: %v", err)
	}
	wt.AfterWrite(0, warm, wtok, nil)
	for _, n := range c.Nodes {
		if n.DataDir == "" || n.Host != "" {
			continue
		}
		if !diskfs.Mounted(n.DataDir) {
			t.Fatalf("%s: %s is not on the disk layer", n.Name, n.DataDir)
		}
		if _, err := diskfs.Call(ctx, diskfs.LayoutOf(n.DataDir).Ctl, diskfs.Request{Op: diskfs.CtlSync}); err != nil {
			t.Fatal(err)
		}
	}

	const workers = 4
	tr := check.NewTracker(workers)
	lctx, lcancel := context.WithTimeout(ctx, 2*time.Second)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; lctx.Err() == nil; i++ {
				op := &workload.Op{Kind: workload.Insert, Key: fmt.Sprintf("user%d-%d", w, i),
					Values: map[string][]byte{"field0": []byte("v")}}
				tok := tr.BeforeWrite(w, op)
				octx, ocancel := context.WithTimeout(ctx, 5*time.Second)
				err := d.Insert(octx, "usertable", op.Key, op.Values)
				ocancel()
				tr.AfterWrite(w, op, tok, err)
			}
		})
	}
	wg.Wait()
	lcancel()

	fc, err := m.FaultCluster(c, nil, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	reg := fault.NewRegistry()
	if _, err := fault.Apply(ctx, fc, reg, fault.ActionPowerLoss, tc.victim); err != nil {
		t.Fatalf("power-loss: %v", err)
	}
	if _, err := fault.Apply(ctx, fc, reg, fault.ActionStart, tc.victim); err != nil {
		t.Fatalf("start after the power loss: %v", err)
	}
	c = fc.Snapshot()
	// a new client reads back: the old one's connections died with the
	// nodes
	tg.ConnectTo(p, c)
	vd, err := tg.NewDriver(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer vd.Close()
	vctx, vcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer vcancel()
	res := tr.Verify(vctx, vd, "usertable", workers)
	if res.AckedWrites == 0 {
		t.Fatal("no write was acknowledged")
	}
	if res.Unreadable > 0 {
		ex := res.Examples
		if len(ex) > 3 {
			ex = ex[:3]
		}
		t.Errorf("%d keys could not be read back: %+v", res.Unreadable, ex)
	}
	return res.AckedWrites, res.LostWrites + res.LostInserts
}
