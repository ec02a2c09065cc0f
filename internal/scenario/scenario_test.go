package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
)

const base = `
name: t
target: {kind: etcd, nodes: 3}
workload: {ycsb: workloada, properties: {recordcount: "100"}}
load: {threads: 4, rate: 75%, warmup: 5s, window: 100ms}
schedule: {fault: kill, node: leader, steady: 30s, down: 30s, after: 60s}
checks: [lost-writes]
`

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		sets []string
		want string // in the error
	}{
		{"unknown field", base + "colour: blue\n", nil, "colour"},
		{"unknown nested field", strings.Replace(base, "nodes: 3", "nodes: 3, nodez: 4", 1), nil, "nodez"},
		{"bad rate", base, []string{"load.rate=fast"}, "allowed are ops/s"},
		{"bad percentage", base, []string{"load.rate=0%"}, "percentage"},
		{"bad duration", base, []string{"schedule.down=soon"}, "not a duration"},
		{"window too small", base, []string{"load.window=1ms"}, "load.window"},
		{"unknown check", base, []string{"checks.0=knossos"}, `allowed lost-writes`},
		{"missing kind", strings.Replace(base, "kind: etcd, ", "", 1), nil, "target.kind"},
		{"missing name", strings.Replace(base, "name: t", "", 1), nil, "field name"},
		{"step without node", strings.Replace(base, "schedule: {fault: kill, node: leader, steady: 30s, down: 30s, after: 60s}", "schedule: [{at: 1s, fault: kill}]", 1), nil, "schedule[0].node"},
		{"set without =", base, []string{"load.rate"}, "expected path=value"},
		{"set into a scalar", base, []string{"name.x=1"}, "single value"},
		{"set bad index", base, []string{"checks.5=lost-writes"}, "not an index"},
		{"unknown nested key lists the section's keys", strings.Replace(base, "threads: 4", "thredas: 4", 1), nil, "field load.thredas: unknown; allowed keys of load: threads, load_threads, rate, load_rate"},
		{"set unknown field blamed on --set", base, []string{"load.bogus=1"}, "--set load.bogus=1: load has no field bogus"},
		{"set wrong type", base, []string{"load.threads=abc"}, `--set load.threads=abc: "abc" is not a valid integer`},
		{"explicit zero threads", base, []string{"load.threads=0"}, "--set load.threads=0: field load.threads: 0: allowed at least 1"},
		{"explicit zero calibration", base, []string{"load.calibration=0s"}, "field load.calibration: 0: allowed a positive duration"},
		{"explicit zero op_timeout", base, []string{"load.op_timeout=0"}, "field load.op_timeout: 0: allowed a positive duration"},
		{"load_rate percentage", base, []string{"load.load_rate=50%"}, "field load.load_rate: 50%: allowed ops/s"},
		{"restore after the end", base, []string{"load.duration=40s"}, "field schedule.down: steady 30s + down 30s is not before the end"},
		{"open_threads not a number", base, []string{"load.open_threads=many"}, `field load.open_threads: "many": allowed auto or 1..`},
		{"open_threads zero", base, []string{"load.open_threads=0"}, `field load.open_threads: "0": allowed auto or 1..`},
		{"open_threads in closed loop", base, []string{"load.open_threads=auto", "load.rate=max"}, "field load.open_threads: set, but load.rate is max"},
		{"threads in the file blamed on its line", strings.Replace(base, "threads: 4", "threads: 0", 1), nil, "file.yaml:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "file.yaml", tc.sets)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "file.yaml") && !strings.Contains(err.Error(), "--set") {
				t.Fatalf("error %q lacks %q or the file name", err, tc.want)
			}
		})
	}
}

func TestOpenThreadsAccepted(t *testing.T) {
	for _, v := range []string{"auto", "64"} {
		t.Run(v, func(t *testing.T) {
			sc, err := Parse([]byte(base), "file.yaml", []string{"load.open_threads=" + v})
			if err != nil || sc.Load.OpenThreads != v {
				t.Fatalf("open_threads %q: %v, %+v", v, err, sc)
			}
		})
	}
}

func TestSetAndResolve(t *testing.T) {
	sc, err := Parse([]byte(base), "file.yaml", []string{"load.rate=100%", "schedule.down=60s", "target.nodes=5", "workload.properties.fieldcount=3"})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Load.Rate.Percent != 100 || sc.Target.Nodes != 5 || sc.Workload.Properties["fieldcount"] != "3" || sc.Workload.Properties["recordcount"] != "100" {
		t.Fatalf("sets not applied: %+v", sc)
	}
	sc.Resolve("leader")
	steps := sc.Schedule.Steps
	if len(steps) != 2 || steps[0].At.D() != 30*time.Second || steps[0].Fault != "kill" || steps[0].As != "victim" ||
		steps[1].At.D() != 90*time.Second || steps[1].Fault != "start" || steps[1].Node != "victim" {
		t.Fatalf("failover shorthand expanded wrongly: %+v", steps)
	}
	if sc.Load.Duration.D() != 150*time.Second {
		t.Errorf("duration %v, want steady+down+after = 150s", sc.Load.Duration.D())
	}
	if sc.Load.Calibration.D() != 15*time.Second || sc.Load.OpTimeout.D() != 10*time.Second || sc.Analysis.DownFraction != 0.10 {
		t.Errorf("defaults not filled: %+v %+v", sc.Load, sc.Analysis)
	}
	// the resolved form parses back to the same steps
	b, err := sc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(b, "resolved.yaml", nil)
	if err != nil {
		t.Fatalf("resolved scenario does not parse: %v\n%s", err, b)
	}
	if len(again.Schedule.Steps) != 2 || again.Schedule.Steps[1].At != steps[1].At || again.Load.Rate != sc.Load.Rate {
		t.Fatalf("round trip changed the scenario:\n%s", b)
	}
}

func TestPauseDefaultsToResume(t *testing.T) {
	sc, err := Parse([]byte(base), "f", []string{"schedule.fault=pause"})
	if err != nil {
		t.Fatal(err)
	}
	sc.Resolve("leader")
	if sc.Schedule.Steps[1].Fault != "resume" {
		t.Fatalf("restore of pause = %q", sc.Schedule.Steps[1].Fault)
	}
}

func TestRates(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Rate
		ok   bool
	}{
		{"5000", Rate{OpsPerSec: 5000}, true},
		{"75%", Rate{Percent: 75}, true},
		{" 50 % ", Rate{Percent: 50}, true},
		{"max", Rate{Max: true}, true},
		{"-1", Rate{}, false},
		{"abc%", Rate{}, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRate(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("ParseRate(%q) = %+v, %v", tc.in, got, err)
			}
		})
	}
}

// TestShippedScenarios: every file in scenarios/ parses and validates.
func TestShippedScenarios(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "scenarios", "*.yaml"))
	if len(files) < 3 {
		t.Fatalf("found %d scenario files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			sc, err := LoadFile(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sc.WorkloadPath(f); err != nil {
				if _, serr := os.Stat(filepath.Join("..", "..", "workloads", sc.Workload.YCSB)); serr != nil {
					t.Errorf("workload %q not shipped", sc.Workload.YCSB)
				}
			}
		})
	}
}

func TestClientFaultSteps(t *testing.T) {
	const doc = `
name: t
target: {kind: txkv}
workload: {ycsb: txn}
schedule:
  - STEP
`
	tests := []struct {
		name, step string
		want       string // in the error; "" = valid
		hold       time.Duration
	}{
		{"no node", "{at: 30s, fault: crash-client}", "", 0},
		{"node client", "{at: 30s, fault: crash-client, node: client}", "", 0},
		{"hold", "{at: 30s, fault: crash-client, hold: 1s}", "", time.Second},
		{"hold in seconds", "{at: 30s, fault: crash-client, hold: 0.5}", "", 500 * time.Millisecond},
		{"cluster node", "{at: 30s, fault: crash-client, node: s1}", "field schedule[0].node", 0},
		{"as", "{at: 30s, fault: crash-client, as: c}", "field schedule[0].as", 0},
		{"negative hold", "{at: 30s, fault: crash-client, hold: -1s}", "negative", 0},
		{"long hold", "{at: 30s, fault: crash-client, hold: 11m}", "field schedule[0].hold", 0},
		{"hold on kill", "{at: 30s, fault: kill, node: s1, hold: 1s}", `field schedule[0].hold: only crash-client takes hold, not "kill"`, 0},
		{"kill without node", "{at: 30s, fault: kill}", "field schedule[0].node: required", 0},
		{"unknown step field", "{at: 30s, fault: crash-client, holdd: 1s}", "holdd", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse([]byte(strings.Replace(doc, "STEP", tc.step, 1)), "file.yaml", nil)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := sc.Schedule.Steps[0].Hold.D(); got != tc.hold {
					t.Errorf("hold %v, want %v", got, tc.hold)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "file.yaml") {
				t.Fatalf("error %v, want one with %q and the file name", err, tc.want)
			}
		})
	}
}

func TestResolvedClientFaultKeepsHold(t *testing.T) {
	sc, err := Parse([]byte("name: t\ntarget: {kind: txkv}\nworkload: {ycsb: txn}\nschedule: [{at: 30s, fault: crash-client, hold: 1s}]\n"), "file.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	sc.Resolve("random")
	b, err := sc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b, "resolved.yaml", nil)
	if err != nil {
		t.Fatalf("the resolved scenario does not parse: %v\n%s", err, b)
	}
	if st := back.Schedule.Steps[0]; st.Fault != "crash-client" || st.Hold.D() != time.Second || st.Node != "" {
		t.Errorf("resolved step %+v", st)
	}
}

// TestSetDottedKeys: property and option names contain dots; --set keeps
// them one key inside target.driver, target.options and workload.properties.
func TestSetDottedKeys(t *testing.T) {
	sc, err := Parse([]byte(base), "file.yaml", []string{
		"target.driver.cassandra.consistency=QUORUM",
		"target.options.cassandra.rf=2",
		"workload.properties.measurement.window=100ms",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Target.Driver["cassandra.consistency"]; got != "QUORUM" {
		t.Errorf("target.driver = %v, want cassandra.consistency=QUORUM", sc.Target.Driver)
	}
	if got := sc.Target.Options["cassandra.rf"]; got != "2" {
		t.Errorf("target.options = %v, want cassandra.rf=2", sc.Target.Options)
	}
	if got := sc.Workload.Properties["measurement.window"]; got != "100ms" {
		t.Errorf("workload.properties = %v, want measurement.window=100ms", sc.Workload.Properties)
	}
}

func TestScalingSteps(t *testing.T) {
	const doc = `
name: t
target: {kind: cassandra, nodes: 2}
workload: {ycsb: workloadb}
schedule:
  - STEP
`
	tests := []struct {
		name, step string
		want       string // in the error; "" = valid
	}{
		{"add", "{at: 30s, fault: add-node}", ""},
		{"add three throttled", "{at: 30s, fault: add-node, count: 3, streaming: 5mbit}", ""},
		{"add without bootstrap", "{at: 30s, fault: add-node, bootstrap: false}", ""},
		{"remove", "{at: 30s, fault: remove-node, node: n1, streaming: unthrottled}", ""},
		{"add with node", "{at: 30s, fault: add-node, node: n1}", "field schedule[0].node"},
		{"count too high", "{at: 30s, fault: add-node, count: 9}", "field schedule[0].count"},
		{"bad streaming", "{at: 30s, fault: add-node, streaming: fast}", "field schedule[0].streaming"},
		{"streaming on kill", "{at: 30s, fault: kill, node: n1, streaming: 5mbit}", "field schedule[0].streaming: only add-node and remove-node"},
		{"bootstrap on pause", "{at: 30s, fault: pause, node: n1, bootstrap: false}", "field schedule[0].bootstrap"},
		{"remove without node", "{at: 30s, fault: remove-node}", "field schedule[0].node: required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse([]byte(strings.Replace(doc, "STEP", tc.step, 1)), "file.yaml", nil)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st := sc.Schedule.Steps[0].FaultStep()
			if strings.Contains(tc.step, "bootstrap: false") != st.NoBootstrap {
				t.Errorf("NoBootstrap %v from %s", st.NoBootstrap, tc.step)
			}
		})
	}
}

func TestEB1CassandraSets(t *testing.T) {
	for _, sets := range [][]string{
		{"schedule.0.streaming=5mbit"},
		{"schedule.0.bootstrap=false", "schedule.0.streaming="},
		{"schedule.0.count=3"},
	} {
		b, err := os.ReadFile("../../scenarios/eb1-cassandra.yaml")
		if err != nil {
			t.Fatal(err)
		}
		sc, err := Parse(b, "eb1-cassandra.yaml", sets)
		if err != nil {
			t.Fatalf("--set %v: %v", sets, err)
		}
		st := sc.Schedule.Steps[0].FaultStep()
		if st.Action != fault.ActionAddNode {
			t.Errorf("--set %v: step %+v", sets, st)
		}
	}
}
