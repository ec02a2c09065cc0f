package scenario_test

import (
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/scenario"
)

func TestAutoscaleSection(t *testing.T) {
	const base = `
name: t
target: {kind: etcd, nodes: 3}
workload: {ycsb: workloadb}
load: {threads: 4, rate: 50%, duration: 60s}
`
	for _, tc := range []struct {
		name, section, wantErr string
	}{
		{"valid, defaults", `autoscale: {rules: [{when: "p99 > 20ms", for: 5s, then: add-node}, {when: "throughput < 30%", for: 10s, then: remove-node}]}`, ""},
		{"bad condition", `autoscale: {rules: [{when: "p99 >> 20ms", then: add-node}]}`, "autoscale.rules[0].when"},
		{"bad action", `autoscale: {rules: [{when: "p99 > 20ms", then: grow}]}`, `then "grow"`},
		{"no rules", `autoscale: {latency_target: 20ms}`, "no rules"},
		{"start outside the bounds", `autoscale: {rules: [{when: "p99 > 20ms", then: add-node}], min_nodes: 4, max_nodes: 5}`, "starts with 3 nodes"},
		{"unknown field", `autoscale: {rules: [{when: "p99 > 20ms", then: add-node}], cooldwn: 5s}`, "cooldwn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scenario.Parse([]byte(base+tc.section), "t.yaml", nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c, err := sc.Autoscale.Config(3)
			if err != nil {
				t.Fatal(err)
			}
			if c.MinNodes != 3 || c.MaxNodes != 4 || c.LatencyTarget != 20*time.Millisecond || c.Rules[1].Name != "remove-node-1" {
				t.Errorf("defaults: %+v", c)
			}
		})
	}
	// a percentage of capacity needs a calibrated capacity
	doc := strings.Replace(base, "rate: 50%", "rate: 500", 1) + `autoscale: {rules: [{when: "throughput < 30%", then: remove-node}], latency_target: 20ms}`
	if _, err := scenario.Parse([]byte(doc), "t.yaml", nil); err == nil || !strings.Contains(err.Error(), "load.rate as a percentage") {
		t.Errorf("percentage without calibration: err %v", err)
	}
}
