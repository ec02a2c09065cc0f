package experiment_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/autoscale"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/report"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/workloads"
)

// TestAutoscaleRun is a short EB2 run end to end on etcd, the cheapest
// target that scales: 3 members under a stepped rate profile, a scale-out
// rule that must fire (any p99 is above 1 µs) and a scale-in rule that
// must not (the throughput never falls under 1 op/s). The run must take
// exactly one decision, add n4 through the add-node fault labelled with it,
// see the cluster serve at 4 members (the member joined and caught up, the
// launcher's scale-end, and successful operations after it), write the
// autoscale section with the time to the new size, draw the decision in
// report.html and leave no cluster behind. The decision's timings are not
// bounded in seconds: a loaded machine stretches a member's start.
func TestAutoscaleRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real etcd cluster for ~25 s")
	}
	const doc = `
name: test-eb2
target: {kind: etcd, nodes: 3}
workload: {ycsb: workloadb, properties: {recordcount: "200", runner.profile: "steps 0s=0.5,5s=1"}}
load: {threads: 4, rate: 200, duration: 22s, window: 500ms}
autoscale:
  rules:
    - {name: hot, when: "p99 > 1us", for: 1s, then: add-node}
    - {name: idle, when: "throughput < 1", for: 1s, then: remove-node}
  cooldown: 2s
  min_nodes: 3
  max_nodes: 4
  latency_target: 50ms
`
	sc, err := scenario.Parse([]byte(doc), "test.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute) // a deadline: a loaded machine takes minutes
	defer cancel()
	res, err := experiment.RunScenario(ctx, experiment.ScenarioSpec{
		Scenario: sc, File: "test.yaml", OpenWorkload: workloads.Open, RunsDir: t.TempDir(), StateDir: state, Out: &out, Err: &errb,
	})
	if err != nil {
		t.Fatalf("RunScenario: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if cs, _ := (launcher.StateStore{Dir: state}).List(); len(cs) != 0 {
		t.Errorf("state files left: %v", cs)
	}
	evs, err := event.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var decisions, labelled []event.Event
	for _, e := range evs {
		if e.Kind == autoscale.EventDecision {
			decisions = append(decisions, e)
		}
		if e.Fault == "autoscale-1" {
			labelled = append(labelled, e)
		}
	}
	if len(decisions) != 1 || decisions[0].Fault != "autoscale-1" || !strings.Contains(decisions[0].Detail, "rule hot") {
		t.Fatalf("decision events %+v, want one of rule hot (the idle rule must not fire)", decisions)
	}
	var joined, ended bool
	for _, e := range labelled {
		switch {
		case e.Kind == event.NodeJoined && e.Node == "n4":
			joined = true
		case e.Kind == event.ScaleEnd && !strings.Contains(e.Detail, "failed"):
			ended = e.Since() >= decisions[0].Since()
		}
	}
	if !joined || !ended {
		t.Fatalf("the add-node of the decision: node-joined n4 %v, scale-end after the decision %v; events %+v", joined, ended, labelled)
	}
	rep, err := report.SummaryAutoscale(res.Summary)
	if err != nil || rep == nil {
		t.Fatalf("summary autoscale section: %v, %v", rep, err)
	}
	if len(rep.Decisions) != 1 || rep.StartNodes != 3 || rep.EndNodes != 4 {
		t.Fatalf("autoscale report: %d decisions, %d -> %d nodes", len(rep.Decisions), rep.StartNodes, rep.EndNodes)
	}
	d := rep.Decisions[0]
	if d.Action != autoscale.AddNode || d.Nodes != "n4" || d.Failed || d.ReadyMs < 0 || d.ReadyMs < d.JoinedMs || d.ReactionMs < 0 {
		t.Errorf("decision metrics %+v", d)
	}
	// serving at the new size: successful operations in the windows after
	// the action's end
	readyAt := time.Duration((d.AtMs + d.ReadyMs) * float64(time.Millisecond))
	var okAfter int64
	wins, err := measure.ReadWindows(filepath.Join(res.Dir, measure.WindowsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wins {
		if w.Op == measure.AllOps && w.Start >= readyAt {
			okAfter += w.OK
		}
	}
	if okAfter == 0 || d.After.Windows == 0 {
		t.Errorf("no successful operation after the cluster grew to 4 at %v (after span %+v)", readyAt, d.After)
	}
	if !strings.Contains(out.String(), "autoscaling, EB2") || !strings.Contains(out.String(), "autoscale-1") {
		t.Errorf("terminal summary lacks the autoscaling table:\n%s", out.String())
	}
	if !strings.Contains(errb.String(), "autoscale") {
		t.Errorf("the decision was not echoed on the terminal:\n%s", errb.String())
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if html := string(b); !strings.Contains(html, `id="autoscaling"`) || !strings.Contains(html, "rule hot (add-node when p99") {
		t.Errorf("report.html lacks the autoscaling section or the decision's mark")
	}
	if cs := res.Summary.Errors; len(cs) != 0 {
		t.Errorf("summary errors: %v", cs)
	}
}
