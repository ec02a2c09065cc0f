package fault_test

// This file adds a fault kind the way docs/faults.md says to: one
// description (kind.Kind, with its parameter), one Fault, one registry call
// (napRegistry). TestAddedKind then shows that nothing else needs to know
// about it: `scenario --dry-run`'s validation checks its parameter, the
// executor's events carry its action and family, analysis pairs it with its
// restore, and the report draws it with its own label and colour.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/fault/kind"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/report"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/workloads"
)

// napKind is the description of nap: a node naps at a level 1..10 until
// resume wakes it.
var napKind = kind.Kind{
	Name:     "nap",
	Family:   kind.Resource,
	Restores: []string{"resume"},
	Label:    "nap (demo)",
	Color:    0x2a9d8f,
	Params: []kind.Param{{Name: "level", Type: kind.Int, Doc: "how deeply the node naps (1..10)",
		Validate: func(v any) error {
			if n := v.(int); n < 1 || n > 10 {
				return fmt.Errorf("level %d: allowed 1..10", n)
			}
			return nil
		}}},
}

// napFault is nap's Fault: it does nothing but remember its level.
type napFault struct{ level int }

func (*napFault) Name() fault.Action { return "nap" }
func (f *napFault) ConfigureStep(st fault.Step, _ string) error {
	f.level = st.Values.Int("level")
	return nil
}
func (*napFault) Prepare(context.Context, *fault.Cluster, []string) error       { return nil }
func (*napFault) Inject(context.Context, *fault.Cluster, []string) error        { return nil }
func (*napFault) WaitEffective(context.Context, *fault.Cluster, []string) error { return nil }
func (*napFault) Restore(context.Context, *fault.Cluster, []string) error       { return nil }
func (*napFault) WaitRestored(context.Context, *fault.Cluster, []string) error  { return nil }
func (*napFault) Cleanup(context.Context, *fault.Cluster, []string) error       { return nil }

// napRegistry is the built-in registry plus nap: the one registry call.
func napRegistry(t *testing.T) *fault.Registry {
	reg := fault.NewRegistry()
	if err := reg.Add(napKind, func() fault.Fault { return &napFault{} }); err != nil {
		t.Fatal(err)
	}
	return reg
}

// quietLauncher is a cluster that is always healthy and never changes.
type quietLauncher struct{ launcher.Launcher }

func (quietLauncher) Kind() string                                         { return "quiet" }
func (quietLauncher) Refresh(context.Context, *launcher.Cluster) error     { return nil }
func (quietLauncher) WaitHealthy(context.Context, *launcher.Cluster) error { return nil }

const napScenario = `
name: nap-demo
target: {kind: etcd, nodes: 3}
workload: {ycsb: workloada}
load: {duration: 60s, rate: 100}
schedule:
  - {at: 10s, fault: nap, node: n1, as: napped, params: {level: LEVEL}}
  - {at: 20s, fault: resume, node: napped}
`

func TestAddedKind(t *testing.T) {
	reg := napRegistry(t)

	t.Run("scenario --dry-run checks its parameter", func(t *testing.T) {
		for _, tc := range []struct {
			name, level string
			reg         *fault.Registry
			want        string // "" = a valid plan
		}{
			{"valid", "3", reg, ""},
			{"out of range", "99", reg, "schedule step 1 (at 10s: nap n1 as napped): level 99: allowed 1..10"},
			{"not an integer", "deep", reg, `level "deep": want an integer`},
			{"without the registry call", "3", nil, `unknown fault action "nap"`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				file := filepath.Join("..", "..", "scenarios", "nap-demo.yaml") // workloads/ is found next to scenarios/
				sc, err := scenario.Parse([]byte(strings.Replace(napScenario, "LEVEL", tc.level, 1)), file, nil)
				if err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				err = experiment.PlanScenario(experiment.ScenarioSpec{Scenario: sc, File: file, OpenWorkload: workloads.Open,
					Out: &out, Faults: tc.reg})
				if tc.want == "" {
					if err != nil {
						t.Fatalf("plan: %v", err)
					}
					if !strings.Contains(out.String(), "nap") {
						t.Errorf("the plan does not show the nap step:\n%s", out.String())
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("plan: %v, want an error with %q", err, tc.want)
				}
			})
		}
	})

	// Run the schedule on a quiet cluster: nap n1, a start of n1 (which
	// does not undo a nap), resume the napped node.
	self := os.Getpid()
	c := &launcher.Cluster{Kind: "quiet", Name: "quiet"}
	for _, n := range []string{"n1", "n2", "n3"} {
		c.Nodes = append(c.Nodes, launcher.Node{Name: n, PID: self, Argv: os.Args})
	}
	log := event.NewMemory(time.Now().Add(-10 * time.Second)) // the run began 10 s ago
	cl := &fault.Cluster{Launcher: quietLauncher{}, Cluster: c, Events: log, HealthTimeout: 5 * time.Second}
	sched := fault.Schedule{
		{Action: "nap", Node: "n1", As: "napped", Params: map[string]string{"level": "3"}},
		{At: 10 * time.Millisecond, Action: fault.ActionStart, Node: "n1"},
		{At: 20 * time.Millisecond, Action: fault.ActionResume, Node: "napped"},
	}
	if err := fault.Run(context.Background(), time.Now(), sched, cl, reg, nil); err != nil {
		t.Fatal(err)
	}
	evs := log.Events()

	t.Run("its events carry its action and family", func(t *testing.T) {
		n := 0
		for _, e := range evs {
			if (e.Kind == event.FaultInject || e.Kind == event.FaultInjected) && e.Node == "n1" {
				n++
				if e.Action != "nap" || e.Family != string(kind.Resource) {
					t.Errorf("%s event: action %q family %q, want nap resource", e.Kind, e.Action, e.Family)
				}
			}
		}
		if n != 2 {
			t.Errorf("%d inject events of nap, want fault-inject and fault-injected: %+v", n, evs)
		}
	})

	t.Run("analysis pairs it with its restore", func(t *testing.T) {
		faults := analyze.FaultsFromEventsWith(evs, reg.Kinds())
		var nap *analyze.Fault
		for i := range faults {
			if faults[i].Action == "nap" {
				nap = &faults[i]
			}
		}
		if nap == nil || nap.RestoreAction != "resume" || nap.Label != "napped" {
			t.Fatalf("faults %+v: want nap restored by resume", faults)
		}
		// Without the kind, its restores are unknown: resume (pause
		// family) and start (process) undo nothing of family resource.
		for _, f := range analyze.FaultsFromEvents(evs) {
			if f.Action == "nap" && f.Restored() {
				t.Errorf("paired by the built-in kinds alone: %+v", f)
			}
		}
	})

	t.Run("the report draws it with its label and colour", func(t *testing.T) {
		// a run directory as a scenario leaves it: 30 one-second windows,
		// the events, summary.json with the analysis and the kinds the
		// built-in registry lacks; report.Render reads nothing else
		dir := t.TempDir()
		cols := strings.Split(measure.WindowsHeader, ",")
		var csv strings.Builder
		csv.WriteString(measure.WindowsHeader + "\n")
		for i := range 30 {
			row := make([]string, len(cols))
			for j, c := range cols {
				switch c {
				case "start_ms":
					row[j] = fmt.Sprint(i * 1000)
				case "end_ms":
					row[j] = fmt.Sprint((i + 1) * 1000)
				case "phase":
					row[j] = measure.PhaseRun
				case "op":
					row[j] = measure.AllOps
				case "ok":
					row[j] = "100"
				default:
					row[j] = "1000"
				}
			}
			csv.WriteString(strings.Join(row, ",") + "\n")
		}
		write := func(name string, b []byte) {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write(measure.WindowsFile, []byte(csv.String()))
		var evb bytes.Buffer
		for _, e := range evs {
			b, _ := json.Marshal(e)
			evb.Write(append(b, '\n'))
		}
		write("events.jsonl", evb.Bytes())
		rows, err := measure.ReadWindows(filepath.Join(dir, measure.WindowsFile))
		if err != nil {
			t.Fatal(err)
		}
		params := analyze.DefaultParams()
		params.Kinds = reg.Kinds()
		rep, err := analyze.Analyze(rows, evs, params)
		if err != nil {
			t.Fatal(err)
		}
		render := func(kinds []kind.Description) []byte {
			sum, _ := json.Marshal(rundir.Summary{Scenario: "nap-demo", Target: "quiet", Analysis: rep, FaultKinds: kinds})
			write("summary.json", sum)
			out, err := report.Render(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			html, err := os.ReadFile(out.HTML)
			if err != nil {
				t.Fatal(err)
			}
			return html
		}
		unlisted := reg.Unlisted(sched.Actions())
		if len(unlisted) != 1 || unlisted[0].Name != "nap" {
			t.Fatalf("kinds for summary.json: %+v, want nap's only", unlisted)
		}
		html := render(unlisted)
		for _, want := range []string{"nap (demo) n1", napKind.Color.Hex()} {
			if !bytes.Contains(html, []byte(want)) {
				t.Errorf("report.html lacks %q", want)
			}
		}
		// the negative control: without its description the report draws
		// it grey, by its action
		html = render(nil)
		if bytes.Contains(html, []byte(napKind.Color.Hex())) || bytes.Contains(html, []byte("nap (demo)")) {
			t.Error("without its kind the report still used its label or colour")
		}
	})
}
