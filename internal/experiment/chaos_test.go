package experiment_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/scenarios"
	"github.com/faultbench/faultbench/workloads"
)

const chaosEtcd = `
name: test-chaos
target: {kind: etcd, nodes: 3, options: {etcd.election-timeout: 1000ms, etcd.heartbeat-interval: 100ms}}
workload: {ycsb: workloada, properties: {recordcount: "500"}}
load: {threads: 4, rate: 200, warmup: 2s, window: 100ms, duration: 30s}
chaos: {faults: [kill, pause], every: 8s..10s, hold: 2s..3s, concurrent: 2, nodes: "random-of(n1,n2,n3)"}
checks: [lost-writes]
`

// TestChaosEtcd runs a short chaos schedule on a real 3-member etcd: two
// faults at once per cycle (a kill or a pause each, on distinct members),
// every fault healed after its hold, the cycles and per-kind distributions
// in the summary and on the terminal, no acknowledged write lost.
func TestChaosEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real etcd cluster for ~45 s")
	}
	sc, err := scenario.Parse([]byte(chaosEtcd), "test.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute) // a deadline: a loaded machine takes minutes
	defer cancel()
	res, err := experiment.RunScenario(ctx, experiment.ScenarioSpec{
		Scenario: sc, File: "test.yaml", OpenWorkload: workloads.Open, RunsDir: t.TempDir(), StateDir: state,
		Out: &out, Err: &errb, Seed: 11,
	})
	if err != nil {
		t.Fatalf("scenario: %v\n%s\n%s", err, out.String(), errb.String())
	}
	t.Logf("\n%s", out.String())
	sum := res.Summary
	if sum.Failed {
		t.Errorf("run failed: %v", sum.Failures)
	}
	if sum.LostWrites == nil || !sum.LostWrites.OK() {
		t.Errorf("lost-write check: %+v", sum.LostWrites)
	}
	if sum.Analysis == nil || sum.Analysis.Chaos == nil {
		t.Fatalf("no chaos analysis: %+v", sum.Analysis)
	}
	ch := sum.Analysis.Chaos
	if len(ch.Cycles) < 2 {
		t.Fatalf("%d cycles in 30 s of every 8..10 s", len(ch.Cycles))
	}
	for i, c := range ch.Cycles {
		if len(c.Kinds) != 2 || c.HealedAtMs < 0 || c.Nodes[0] == c.Nodes[1] {
			t.Errorf("cycle %d: %+v: want two faults on distinct members, healed", i+1, c)
		}
	}
	for kd, k := range ch.ByKind {
		if (kd != "kill" && kd != "pause") || k.Cycles == 0 || k.DowntimeMs.N+k.DowntimeMs.Never != k.Cycles {
			t.Errorf("by kind %s: %+v", kd, k)
		}
	}
	// every fault was healed after its hold: a restore took effect for
	// each label injected
	evs, err := event.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	injected, restored := map[string]bool{}, map[string]bool{}
	for _, e := range evs {
		switch e.Kind {
		case event.FaultInjected:
			injected[e.Fault] = true
		case event.FaultRestored:
			restored[e.Fault] = true
		case event.FaultError:
			t.Errorf("fault error: %s %s", e.Fault, e.Detail)
		}
	}
	if len(injected) != 2*len(ch.Cycles) {
		t.Errorf("%d faults took effect, want %d", len(injected), 2*len(ch.Cycles))
	}
	for l := range injected {
		if !strings.HasPrefix(l, "chaos") || !restored[l] {
			t.Errorf("fault %s: injected, restored %v", l, restored[l])
		}
	}
	if !strings.Contains(out.String(), "chaos (docs/metrics.md, Chaos)") {
		t.Error("terminal summary lacks the chaos table")
	}
	if cs, _ := (launcher.StateStore{Dir: state}).List(); len(cs) != 0 {
		t.Errorf("state files left: %v", cs)
	}
}

// TestChaosEtcdScenarioPlans: the shipped chaos-etcd scenario is valid and
// its plan lists the cycles drawn from the seed.
func TestChaosEtcdScenarioPlans(t *testing.T) {
	b, err := scenarios.Read("chaos-etcd")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse(b, "chaos-etcd.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := experiment.PlanScenario(experiment.ScenarioSpec{Scenario: sc, File: "scenarios/chaos-etcd.yaml", OpenWorkload: workloads.Open, Out: &out, Err: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"chaos (seed 1): faults kill/pause/partition every 1m0s..2m0s", "as chaos1.1", "as chaos20.1", "end of the measured run"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, out.String())
		}
	}
	// chaos.seed draws another schedule, the same one every time
	plan := func(seed string) string {
		sc, err := scenario.Parse(b, "chaos-etcd.yaml", []string{"chaos.seed=" + seed})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := experiment.PlanScenario(experiment.ScenarioSpec{Scenario: sc, File: "scenarios/chaos-etcd.yaml", OpenWorkload: workloads.Open, Out: &out, Err: &bytes.Buffer{}}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if a, b := plan("7"), plan("7"); a != b || a == out.String() || !strings.Contains(a, "chaos (seed 7)") {
		t.Errorf("chaos.seed=7 planned\n%s\nand\n%s", a, b)
	}
}
