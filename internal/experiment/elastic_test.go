package experiment_test

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/workloads"
)

// TestElasticityRun is a short EB1 run end to end: a 3-member etcd
// cluster under load gets a fourth member at 3 s and loses n1 at 8 s. The
// run must write the scaling milestones, one elasticity entry per action
// in summary.json with the streaming time filled in, the elasticity table
// in the terminal summary, and leave no cluster behind.
func TestElasticityRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real etcd cluster for ~15 s")
	}
	const doc = `
name: test-eb1
target: {kind: etcd, nodes: 3}
workload: {ycsb: workloadb, properties: {recordcount: "200"}}
load: {threads: 4, rate: 200, duration: 14s}
schedule:
  - {at: 3s, fault: add-node, label: scale-out}
  - {at: 8s, fault: remove-node, node: n1, label: scale-in}
checks: [lost-writes]
`
	sc, err := scenario.Parse([]byte(doc), "test.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute) // a deadline: a loaded machine takes minutes
	defer cancel()
	res, err := experiment.RunScenario(ctx, experiment.ScenarioSpec{
		Scenario: sc, File: "test.yaml", OpenWorkload: workloads.Open, RunsDir: t.TempDir(), StateDir: state, Out: &out, Err: &errb,
	})
	if err != nil {
		t.Fatalf("RunScenario: %v\n%s\n%s", err, out.String(), errb.String())
	}
	evs, err := event.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string][]string{}
	for _, e := range evs {
		kinds[e.Kind] = append(kinds[e.Kind], e.Node)
	}
	for kind, want := range map[string]string{event.ScaleStart: ",n1", event.NodeStarted: "n4", event.NodeJoined: "n4",
		event.StreamingDone: "n4,n1", event.NodeLeft: "n1", event.ScaleEnd: "n4,n1"} {
		if got := strings.Join(kinds[kind], ","); got != want {
			t.Errorf("%s events on %q, want %q", kind, got, want)
		}
	}
	a := res.Summary.Analysis
	if a == nil || len(a.Elasticity) != 2 {
		t.Fatalf("summary has no two elasticity entries: %+v", a)
	}
	add, rm := a.Elasticity[0], a.Elasticity[1]
	if add.Action != "add-node" || add.Nodes != "n4" || add.Before.OKCount == 0 {
		t.Errorf("add-node metrics: %+v", add)
	}
	if rm.Action != "remove-node" || rm.Nodes != "n1" {
		t.Errorf("remove-node metrics: %+v", rm)
	}
	// The streaming time is what the events say, recomputed here from
	// events.jsonl: from the step's scale-start to its last streaming-done,
	// at least its node-joined (etcd streams to a member once it has
	// joined). No bound in seconds: on a loaded machine the new member's
	// start alone took 8.5 s in CI (2026-11-27).
	for _, tc := range []struct {
		m     analyze.ScalingMetrics
		label string
	}{{add, "scale-out"}, {rm, "scale-in"}} {
		var start, joined, done time.Duration = -1, -1, -1
		for _, e := range evs {
			if e.Fault != tc.label {
				continue
			}
			switch e.Kind {
			case event.ScaleStart:
				start = e.Since()
			case event.NodeJoined:
				joined = e.Since()
			case event.StreamingDone:
				done = e.Since()
			}
		}
		if start < 0 || done < start {
			t.Errorf("%s: events without scale-start or streaming-done after it (%v, %v)", tc.label, start, done)
			continue
		}
		want := float64(done-start) / float64(time.Millisecond)
		if math.Abs(tc.m.StreamingMs-want) > 1e-6 {
			t.Errorf("%s: streaming %.3f ms, the events say %.3f ms", tc.label, tc.m.StreamingMs, want)
		}
		if joined >= 0 && done < joined {
			t.Errorf("%s: streaming done at %v, before the node joined at %v", tc.label, done, joined)
		}
	}
	if !strings.Contains(out.String(), "elasticity (docs/metrics.md)") || !strings.Contains(out.String(), "add-node n4") {
		t.Errorf("terminal summary lacks the elasticity table:\n%s", out.String())
	}
	if res.Summary.LostWrites == nil || !res.Summary.LostWrites.OK() {
		t.Errorf("lost-writes check: %+v", res.Summary.LostWrites)
	}
	if cs, _ := (launcher.StateStore{Dir: state}).List(); len(cs) != 0 {
		t.Errorf("state files left: %v", cs)
	}
}
