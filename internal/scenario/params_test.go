package scenario

import (
	"strings"
	"testing"
)

// TestStepParams: a step's fault parameters, in their own fields or under
// params:, are checked by the fault kind's declaration.
func TestStepParams(t *testing.T) {
	const doc = `
name: t
target: {kind: cassandra, nodes: 2}
workload: {ycsb: workloadb}
schedule:
  - STEP
`
	for _, tc := range []struct {
		name, step string
		want       string // in the error; "" = valid
	}{
		{"count under params", "{at: 30s, fault: add-node, params: {count: 3}}", ""},
		{"count under params too high", "{at: 30s, fault: add-node, params: {count: 9}}", "field schedule[0].params.count: count 9: allowed 1..8"},
		{"not an integer", "{at: 30s, fault: add-node, params: {count: many}}", `field schedule[0].params.count: count "many": want an integer`},
		{"unknown parameter", "{at: 30s, fault: kill, node: n1, params: {level: 3}}", "field schedule[0].params.level: level is not a parameter of kill"},
		{"another kind's parameter", "{at: 30s, fault: kill, node: n1, params: {hold: 1s}}", `field schedule[0].params.hold: only crash-client takes hold, not "kill"`},
		{"bootstrap true on pause", "{at: 30s, fault: pause, node: n1, bootstrap: true}", "field schedule[0].bootstrap"},
		{"unknown action left to the runner", "{at: 30s, fault: nap, node: n1, params: {level: 3}}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse([]byte(strings.Replace(doc, "STEP", tc.step, 1)), "file.yaml", nil)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(sc.Schedule.Steps[0].Params) > 0 && len(sc.Schedule.Steps[0].FaultStep().Params) == 0 {
					t.Error("params lost on the way to the fault step")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestFailoverRestoreDefault: the failover shorthand's restore defaults to
// the action that undoes its fault.
func TestFailoverRestoreDefault(t *testing.T) {
	for fault, want := range map[string]string{"kill": "start", "stop": "start", "pause": "resume", "partition": "heal"} {
		sc, err := Parse([]byte("name: t\ntarget: {kind: etcd}\nworkload: {ycsb: workloada}\nschedule: {fault: "+fault+", steady: 10s, down: 10s, after: 10s}\n"), "file.yaml", nil)
		if err != nil {
			t.Fatal(err)
		}
		sc.Resolve("leader")
		if got := sc.Schedule.Steps[1].Fault; got != want {
			t.Errorf("%s: restore %q, want %q", fault, got, want)
		}
	}
}
