package fault

import (
	"strings"
	"testing"
)

// TestCheckDisk: a disk fault on a cluster without the layer is refused
// before the run, naming the step; with the layer (or without disk
// faults) the schedule passes.
func TestCheckDisk(t *testing.T) {
	sched := Schedule{{Action: ActionKill, Node: "n1"}, {Action: ActionPowerLoss, Node: "n2"}, {Action: ActionDiskHeal, Node: "all"}}
	for _, tc := range []struct {
		name  string
		sched Schedule
		opts  map[string]string
		want  []string // substrings of the error; none: accepted
	}{
		{"no layer", sched, nil, []string{"schedule step 2 (at 0s: power-loss n2): power-loss needs", "schedule step 3", "disk: fuse"}},
		{"with the layer", sched, map[string]string{"disk": "fuse"}, nil},
		{"no disk fault", sched[:1], nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDisk(tc.sched, tc.opts)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "step 1") {
				t.Errorf("error names the kill step: %v", err)
			}
		})
	}
}
