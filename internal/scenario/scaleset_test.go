package scenario

import (
	"os"
	"strings"
	"testing"
)

func TestScaleSets(t *testing.T) {
	eb1, err := os.ReadFile("../../scenarios/eb1-cassandra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const mixed = `
name: t
target: {kind: cassandra, nodes: 3}
workload: {ycsb: workloadb}
schedule:
  steps:
    - {at: 10s, fault: kill, node: n1}
    - {at: 20s, fault: add-node}
    - {at: 40s, fault: remove-node, node: n2}
`
	type step struct {
		streaming string
		count     int
		noBoot    bool
	}
	tests := []struct {
		name string
		doc  string
		sets []string
		want []step // per step; nil when an error is expected
		err  string
	}{
		{"streaming", string(eb1), []string{"scale.streaming=5mbit"}, []step{{"5mbit", 1, false}}, ""},
		{"bootstrap false clears streaming", string(eb1), []string{"scale.bootstrap=false"}, []step{{"", 1, true}}, ""},
		{"count", string(eb1), []string{"scale.count=3"}, []step{{"unthrottled", 3, false}}, ""},
		{"CS-6", string(eb1), []string{"scale.count=3", "scale.bootstrap=false"}, []step{{"", 3, true}}, ""},
		{"streaming on add and remove, not kill", mixed, []string{"scale.streaming=40mbit"},
			[]step{{"", 0, false}, {"40mbit", 0, false}, {"40mbit", 0, false}}, ""},
		{"count on add only", mixed, []string{"scale.count=2"},
			[]step{{"", 0, false}, {"", 2, false}, {"", 0, false}}, ""},
		{"no scaling step", base, []string{"scale.streaming=5mbit"}, nil,
			"--set scale.streaming=5mbit: the scenario's schedule has no add-node or remove-node step to set streaming on"},
		{"unknown field", string(eb1), []string{"scale.speed=1"}, nil, "scale has no field speed (allowed: streaming, bootstrap, count"},
		{"bad count", string(eb1), []string{"scale.count=three"}, nil, `--set scale.count=three: "three" is not a valid integer`},
		{"bad throttle", string(eb1), []string{"scale.streaming=fast"}, nil, "--set scale.streaming=fast"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse([]byte(tc.doc), "file.yaml", tc.sets)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(sc.Schedule.Steps) != len(tc.want) {
				t.Fatalf("%d steps, want %d", len(sc.Schedule.Steps), len(tc.want))
			}
			for i, w := range tc.want {
				st := sc.Schedule.Steps[i].FaultStep()
				if got := (step{st.Streaming, st.Count, st.NoBootstrap}); got != w {
					t.Errorf("step %d: %+v, want %+v", i, got, w)
				}
			}
		})
	}
}

func TestScaleSetSource(t *testing.T) {
	b, err := os.ReadFile("../../scenarios/eb1-cassandra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Parse(b, "eb1-cassandra.yaml", []string{"scale.streaming=5mbit"})
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Source("schedule[0].streaming"); got != "--set scale.streaming=5mbit" {
		t.Errorf("source %q", got)
	}
}
