package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	etcdlauncher "github.com/faultbench/faultbench/internal/launcher/etcd"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/workloads"
)

// TestMain lets the test binary serve as the faultbench binary the etcd
// launcher spawns (`<self> node etcd ...`) when FAULTBENCH_SELF does not
// name a built binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "node" && os.Args[2] == "etcd" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := etcdlauncher.RunNode(ctx, os.Args[3:])
		stop()
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const base = `name: t
target: {kind: etcd}
workload: {ycsb: workloadb, properties: {recordcount: "100"}}
load: {threads: 4, duration: 5s}
`

func TestSteps(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want [][]string // each step's sets after the name
	}{
		{"sb1: one step per rate at the fixed size", base + "sweep: {type: sb1, rates: [100, 50%]}",
			[][]string{{"load.rate=100"}, {"load.rate=50%"}}},
		{"sb2: one step per size, data scaled", base + "sweep: {type: sb2, nodes: [1, 3], records_per_node: 100}",
			[][]string{{"target.nodes=1", "workload.properties.recordcount=100"}, {"target.nodes=3", "workload.properties.recordcount=300"}}},
		{"sb3: load and threads scale with the size", base + "sweep: {type: sb3, nodes: [1, 3], rate_per_node: 150, threads_per_node: 2}",
			[][]string{{"target.nodes=1", "load.rate=150", "load.threads=2"}, {"target.nodes=3", "load.rate=450", "load.threads=6"}}},
		{"sb3: clients scale with the size", base + "sweep: {type: sb3, nodes: [1, 2], rate_per_node: 100, threads_per_node: 4, clients_per_node: 2}",
			[][]string{{"target.nodes=1", "load.rate=100", "load.threads=4", "load.clients=2"}, {"target.nodes=2", "load.rate=200", "load.threads=8", "load.clients=4"}}},
		{"metastable: retry x trigger x load, each judged", base + "sweep: {type: metastable, rates: [50%, 90%], retries: [none, backoff], triggers: [{name: x3, set: [workload.properties.runner.spike.factor=3]}]}",
			[][]string{
				{"workload.properties.runner.spike.factor=3", "workload.properties.runner.retry=none", "workload.properties.metastable=true", "load.rate=50%"},
				{"workload.properties.runner.spike.factor=3", "workload.properties.runner.retry=none", "workload.properties.metastable=true", "load.rate=90%"},
				{"workload.properties.runner.spike.factor=3", "workload.properties.runner.retry=backoff", "workload.properties.metastable=true", "load.rate=50%"},
				{"workload.properties.runner.spike.factor=3", "workload.properties.runner.retry=backoff", "workload.properties.metastable=true", "load.rate=90%"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := scenario.Parse([]byte(tt.doc), "f.yaml", nil)
			if err != nil {
				t.Fatal(err)
			}
			steps, err := Steps(sc)
			if err != nil {
				t.Fatal(err)
			}
			if len(steps) != len(tt.want) {
				t.Fatalf("%d steps, want %d", len(steps), len(tt.want))
			}
			for i, st := range steps {
				if st.Index != i+1 || st.Sets[0] != "name=t-s0"+string(rune('1'+i)) {
					t.Errorf("step %d: index %d, name set %q", i, st.Index, st.Sets[0])
				}
				if !reflect.DeepEqual(st.Sets[1:], tt.want[i]) {
					t.Errorf("step %d sets %v, want %v", i+1, st.Sets[1:], tt.want[i])
				}
			}
		})
	}
}

// spec returns a Spec for the sweep document doc written to a file in dir.
func spec(t *testing.T, doc, dir string, sets []string) *Spec {
	t.Helper()
	file := filepath.Join(dir, "sweep.yaml")
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.LoadFile(file, sets)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	return &Spec{Scenario: sc, File: file, OpenWorkload: workloads.Open, RunsDir: filepath.Join(dir, "runs"),
		StateDir: filepath.Join(dir, "state"), Out: &out, Err: &errOut, Quiet: true,
		Step: func(extra []string) (*scenario.Scenario, error) {
			return scenario.LoadFile(file, append(append([]string(nil), sets...), extra...))
		}}
}

func TestPlanRejectsABadStep(t *testing.T) {
	dir := t.TempDir()
	// etcd's launcher options are checked per step, before anything starts
	doc := strings.Replace(base, "target: {kind: etcd}", "target: {kind: etcd, options: {no.such: x}}", 1)
	s := spec(t, doc+"sweep: {type: sb2, nodes: [1, 3]}", dir, nil)
	_, err := Plan(s)
	if err == nil || !strings.Contains(err.Error(), "step 1") || !strings.Contains(err.Error(), "no.such") {
		t.Fatalf("Plan error %v, want step 1's unknown launcher option", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); !os.IsNotExist(err) {
		t.Errorf("Plan created the runs directory (stat: %v)", err)
	}
}

// TestSweepEtcd runs a real two-step SB1 sweep on a 1-member etcd: two
// run directories under one sweep directory, a summary row per step with
// the offered rate, and a report with the scaling curve.
func TestSweepEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two real 1-member etcd clusters for ~15 s")
	}
	if os.Getenv("FAULTBENCH_SELF") == "" {
		t.Setenv("FAULTBENCH_SELF", os.Args[0])
	}
	dir := t.TempDir()
	doc := `name: tsweep
target: {kind: etcd, nodes: 1}
workload: {ycsb: workloadb, properties: {recordcount: "200"}}
load: {threads: 4, clients: 2, warmup: 1s, duration: 3s, window: 500ms}
sweep: {type: sb1, rates: [50, 100]}
`
	s := spec(t, doc, dir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := Run(ctx, *s)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, s.Err.(*bytes.Buffer))
	}
	var sum rundir.SweepSummary
	b, err := os.ReadFile(filepath.Join(out.Dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Type != "sb1" || len(sum.Steps) != 2 || sum.Failed {
		t.Fatalf("summary: type %s, %d steps, failed %v (%v)", sum.Type, len(sum.Steps), sum.Failed, sum.Failures)
	}
	for i, st := range sum.Steps {
		t.Run(st.Dir, func(t *testing.T) {
			if want := []float64{50, 100}[i]; st.OfferedOps != want {
				t.Errorf("offered %v, want %v", st.OfferedOps, want)
			}
			if st.AchievedOps <= 0 || st.PerOp["READ"].Count == 0 {
				t.Errorf("achieved %v ops/s, %d reads", st.AchievedOps, st.PerOp["READ"].Count)
			}
			if st.Nodes != 1 || st.Clients != 2 {
				t.Errorf("nodes %d, clients %d; want 1, 2", st.Nodes, st.Clients)
			}
			if st.ClientThroughputCV < 0 {
				t.Errorf("client CV %v: not computed for 2 clients", st.ClientThroughputCV)
			}
			if _, err := os.Stat(filepath.Join(out.Dir, st.Dir, "windows.csv")); err != nil {
				t.Errorf("the step's run directory: %v", err)
			}
		})
	}
	for _, f := range []string{"steps.csv", "report.html", "plots/sweep-curve.png", "env.json", "sweep.yaml"} {
		if _, err := os.Stat(filepath.Join(out.Dir, f)); err != nil {
			t.Errorf("sweep directory lacks %s: %v", f, err)
		}
	}
	html, _ := os.ReadFile(filepath.Join(out.Dir, "report.html"))
	if !strings.Contains(string(html), `id="fig-sweep-curve"`) {
		t.Errorf("report.html lacks the scaling curve")
	}
	for _, ref := range []string{`src="http`, `href="http`, "@import"} {
		if strings.Contains(string(html), ref) {
			t.Errorf("report.html loads something from the network (%s)", ref)
		}
	}
	// nothing left running
	if cs, _ := (launcher.StateStore{Dir: s.StateDir}).List(); len(cs) > 0 {
		t.Errorf("%d clusters still recorded after the sweep", len(cs))
	}
}

func TestMetastableSweepValidation(t *testing.T) {
	for _, tc := range []struct{ name, sweep, want string }{
		{"no triggers", "sweep: {type: metastable, rates: [50%]}", "sweep.triggers"},
		{"unknown policy", "sweep: {type: metastable, rates: [50%], retries: [forever], triggers: [{name: a, set: []}]}", "sweep.retries[0]"},
		{"same trigger name twice", "sweep: {type: metastable, rates: [50%], triggers: [{name: a, set: []}, {name: a, set: []}]}", "sweep.triggers[1].name"},
		{"triggers on an sb1 sweep", "sweep: {type: sb1, rates: [50%], triggers: [{name: a, set: []}]}", "sweep.triggers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scenario.Parse([]byte(base+tc.sweep), "f.yaml", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one naming %s", err, tc.want)
			}
		})
	}
}

// TestMetastableCells: a recovery map's steps.csv and terminal table give
// every cell flat (policy, trigger, load, verdict with the time to
// recover); the negative control, an sb1 sweep's, has none of these
// columns.
func TestMetastableCells(t *testing.T) {
	ttr := 2100.0
	steps := []rundir.SweepStep{
		{Step: 1, Dir: "s01", RateSpec: "50%", Retry: "none", Trigger: "x2 for 3s", Verdict: "recovered", TimeToRecoverMs: &ttr},
		{Step: 2, Dir: "s02", RateSpec: "90%", Retry: "immediate", Trigger: "x3 for 5s", Verdict: "metastable"},
		{Step: 3, Dir: "s03", RateSpec: "75%", Retry: "backoff", Trigger: "x3 for 5s", Verdict: "unknown"},
	}
	for _, tc := range []struct {
		typ       string
		wantCSV   []string // lines steps.csv must contain
		wantTable []string // lines of the table must contain these, in order
	}{
		{"metastable",
			[]string{",retry,trigger,verdict,time_to_recover_ms,dir,error", ",none,x2 for 3s,recovered,2100,s01,", ",immediate,x3 for 5s,metastable,,s02,", ",backoff,x3 for 5s,unknown,,s03,"},
			[]string{"retry", "none", "immediate", "backoff"}},
		{"sb1", []string{",client_throughput_cv,client_p99_cv,dir,error"}, nil},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			dir := t.TempDir()
			sum := &rundir.SweepSummary{Sweep: "m", Type: tc.typ, Target: "redis", Planned: 3, Steps: steps}
			if err := write(dir, sum); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, "steps.csv"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.wantCSV {
				if !strings.Contains(string(b), want) {
					t.Errorf("steps.csv lacks %q:\n%s", want, b)
				}
			}
			var w bytes.Buffer
			WriteTable(&w, sum)
			lines := strings.Split(w.String(), "\n")
			if tc.wantTable == nil {
				if strings.Contains(w.String(), "trigger") || strings.Contains(string(b), "verdict") {
					t.Errorf("an %s sweep shows recovery map columns:\n%s\n%s", tc.typ, w.String(), b)
				}
				return
			}
			for i, want := range tc.wantTable {
				if !strings.Contains(lines[i], want) {
					t.Errorf("table line %d lacks %q:\n%s", i, want, w.String())
				}
			}
			for _, want := range []string{"x2 for 3s", "recovered in 2.1 s", "metastable", "unknown"} {
				if !strings.Contains(w.String(), want) {
					t.Errorf("table lacks %q:\n%s", want, w.String())
				}
			}
		})
	}
}
