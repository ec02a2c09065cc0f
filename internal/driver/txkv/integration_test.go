package txkv_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/check"
	"github.com/faultbench/faultbench/internal/driver"
	txkvdriver "github.com/faultbench/faultbench/internal/driver/txkv"
	"github.com/faultbench/faultbench/internal/launcher"
	txkvl "github.com/faultbench/faultbench/internal/launcher/txkv"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/workload"
)

// TestMain lets the test binary stand in for the faultbench binary (see
// internal/launcher/txkv).
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "node" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		var err error
		switch os.Args[2] {
		case "txkv-coordinator":
			err = txkvl.RunCoordinator(ctx, os.Args[3:])
		case "txkv-server":
			err = txkvl.RunServer(ctx, os.Args[3:])
		case "txkv-client":
			err = txkvl.RunClient(ctx, os.Args[3:])
		}
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func phase(t *testing.T, ph runner.Phase, wl *workload.Workload, d driver.Driver, threads int, dur time.Duration, tr runner.Tracker) *measure.Totals {
	t.Helper()
	start := time.Now()
	col, err := measure.NewCollector(measure.Config{Dir: t.TempDir(), Ops: workload.OpNames(), Window: 100 * time.Millisecond, Start: start, Workers: threads})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { col.Run(cctx); close(done) }()
	r := &runner.Runner{Config: runner.Config{Phase: ph, Threads: threads, Duration: dur, Seed: 1}, Workload: wl, Driver: d, Collector: col, Tracker: tr, Start: start}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	tot, err := col.Close()
	if err != nil {
		t.Fatal(err)
	}
	return tot
}

// TestTransactionsThroughRunner drives the txn workload (TXN ops of 10 row
// operations) through the runner against a real cluster, with the
// lost-commit check.
func TestTransactionsThroughRunner(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real txkv processes")
	}
	t.Setenv("TMPDIR", t.TempDir())
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := txkvl.Launcher{}.Up(ctx, env, launcher.Spec{Nodes: 2, Options: map[string]string{"txkv.heartbeat": "200ms"}})
	if err != nil {
		t.Fatal(err)
	}
	defer launcher.Down(context.Background(), c, 10*time.Second)

	p := properties.New()
	txkvl.Connect(p, c)
	for k, v := range map[string]string{"recordcount": "3000", "readproportion": "0.5", "updateproportion": "0.5",
		"txn.ops": "10", "fieldcount": "4", "fieldlength": "20", "seed": "1"} {
		p.Set(k, v)
	}
	wl, err := workload.New(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := txkvdriver.NewDriver(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if u := p.Unknown(); len(u) > 0 {
		t.Errorf("unknown properties: %v", u)
	}
	load := phase(t, runner.Load, wl, d, 8, 0, nil)
	if n := load.Ops[workload.Insert].OK; n != 3000 {
		t.Fatalf("loaded %d records", n)
	}
	tr := check.NewTracker(8)
	run := phase(t, runner.Run, wl, d, 8, 4*time.Second, tr)
	txn := run.Ops[workload.Txn]
	t.Logf("TXN: %d ok, errors %v, mean %.1f ms", txn.OK, txn.Errors, txn.Intended.Mean()/1000)
	if txn.OK < 100 {
		t.Errorf("only %d transactions committed", txn.OK)
	}
	for k := workload.OpKind(0); k < workload.Txn; k++ {
		if n := run.Ops[k].OK; n != 0 {
			t.Errorf("%v recorded %d times in a transactional run", k, n)
		}
	}
	res := tr.Verify(ctx, d, wl.Table(), 8)
	t.Logf("check: %s", res)
	// a transaction in flight at the deadline that committed after it is
	// cut (in no window) but committed all the same
	if cutOK := run.Cut[outcome.OK]; !res.OK() || res.Txn == nil || res.Txn.Committed != txn.OK+cutOK {
		t.Errorf("check failed: %s (recorded %d committed, %d cut after committing)", res, txn.OK, cutOK)
	}
	// single operations are one-operation transactions
	if err := d.Update(ctx, wl.Table(), wl.KeyName(1), map[string][]byte{"field0": []byte("x")}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		m, err := d.Read(ctx, wl.Table(), wl.KeyName(1), nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(m["field0"]) == "x" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("update not visible: %q", m["field0"])
		}
		time.Sleep(10 * time.Millisecond)
	}
	rows, err := d.Scan(ctx, wl.Table(), "user", 50, nil)
	if err != nil || len(rows) != 50 {
		t.Errorf("scan: %d rows, %v", len(rows), err)
	}
	if err := d.Delete(ctx, wl.Table(), wl.KeyName(2)); err != nil {
		t.Fatal(err)
	}
	// every operation ended its transaction: version garbage collection
	// passes all of them
	st, err := txkvl.Status(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for last := st.Now; st.LowWater < last; {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("the low-water mark stays at %d below the last commit %d: a transaction was left open", st.LowWater, last)
		}
		time.Sleep(50 * time.Millisecond)
		if st, err = txkvl.Status(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}
