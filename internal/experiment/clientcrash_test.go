package experiment_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/workloads"
)

const clientCrash = `
name: test-txkv-client-crash
target: {kind: txkv, nodes: 2, options: {txkv.heartbeat: 250ms}}
workload: {ycsb: txn, properties: {recordcount: "2000", txkv.client-process: "true"}}
load: {threads: 8, load_threads: 8, rate: 60, warmup: 2s, duration: 20s, window: 500ms}
schedule:
  - {at: 4s, fault: crash-client, hold: 1s, label: crash}
checks: [lost-writes]
`

// TestTxkvClientCrash is issue 6's client crash on real txkv processes: the
// schedule crashes the load's client (flushes held back for 1 s first), the
// load continues on a replacement client, the recovery manager replays the
// crashed client's write-sets, and no committed transaction is lost. It
// asserts outcomes, not timings.
func TestTxkvClientCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real txkv cluster for ~40 s")
	}
	sc, err := scenario.Parse([]byte(clientCrash), "test.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := experiment.RunScenario(ctx, experiment.ScenarioSpec{
		Scenario: sc, File: "test.yaml", OpenWorkload: workloads.Open, RunsDir: t.TempDir(), StateDir: state,
		Out: &out, Err: &errb, Quiet: true,
	})
	if err != nil {
		t.Fatalf("scenario: %v\n%s\n%s", err, out.String(), errb.String())
	}
	t.Logf("\n%s\n%s", errb.String(), out.String())
	sum := res.Summary
	if len(sum.Errors) > 0 {
		t.Errorf("run errors: %v", sum.Errors)
	}
	evs, err := event.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var crashed, recovered *event.Event
	for i, e := range evs {
		switch e.Kind {
		case fault.EventClientCrashed:
			crashed = &evs[i]
		case fault.EventClientRecovered:
			recovered = &evs[i]
		case event.FaultError:
			t.Errorf("fault error: %s", e.Detail)
		}
	}
	if crashed == nil || recovered == nil {
		t.Fatalf("events lack %s or %s:\n%s", fault.EventClientCrashed, fault.EventClientRecovered, errb.String())
	}
	var name string
	var replayed int
	if _, err := fmt.Sscanf(recovered.Detail, "client %s replayed %d", &name, &replayed); err != nil {
		t.Fatalf("recovery detail %q: %v", recovered.Detail, err)
	}
	if replayed <= 0 {
		t.Errorf("the recovery manager replayed %d write-sets of the crashed client, want > 0 (%s)", replayed, recovered.Detail)
	}
	// the replacement client carries the load on
	wins, err := measure.ReadWindows(filepath.Join(res.Dir, "windows.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var after int64
	for _, w := range wins {
		if w.Op == measure.AllOps && w.Start >= recovered.Since() {
			after += w.OK
		}
	}
	if after == 0 {
		t.Errorf("no successful transaction after the crashed client's recovery at %v", recovered.Since())
	}
	lw := sum.LostWrites
	if lw == nil || !lw.OK() || lw.Txn == nil || lw.Txn.Committed == 0 {
		t.Errorf("lost-commit check: %+v", lw)
	} else {
		t.Logf("crash: %s; recovery: %s; %d transactions after it; lost-commit check: %s", crashed.Detail, recovered.Detail, after, lw)
	}
	if cs, _ := (launcher.StateStore{Dir: state}).List(); len(cs) != 0 {
		t.Errorf("state files left: %v", cs)
	}
}

// TestClientFaultRejectedForEtcd: a crash-client step on a target whose
// driver cannot crash its client is refused before the load, naming the
// scenario field.
func TestClientFaultRejectedForEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real etcd member")
	}
	sc, err := scenario.Parse([]byte(`
name: test-etcd-client-crash
target: {kind: etcd, nodes: 1}
workload: {ycsb: workloada, properties: {recordcount: "10"}}
load: {threads: 1, rate: 10, duration: 5s}
schedule: [{at: 1s, fault: crash-client}]
`), "etcd.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errb bytes.Buffer
	_, err = experiment.RunScenario(ctx, experiment.ScenarioSpec{
		Scenario: sc, File: "etcd.yaml", OpenWorkload: workloads.Open, RunsDir: t.TempDir(), StateDir: state, Err: &errb, Quiet: true,
	})
	if err == nil || !strings.Contains(err.Error(), "etcd.yaml: field schedule[0].fault") || !strings.Contains(err.Error(), "the etcd driver cannot") {
		t.Fatalf("want the scenario rejected naming schedule[0].fault, got %v", err)
	}
	if strings.Contains(errb.String(), "loading records") {
		t.Errorf("the load phase ran before the rejection:\n%s", errb.String())
	}
	if cs, _ := (launcher.StateStore{Dir: state}).List(); len(cs) != 0 {
		t.Errorf("state files left: %v", cs)
	}
}
