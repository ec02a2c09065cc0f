package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/stats"
)

func TestWriteChaos(t *testing.T) {
	d := func(n int, mean, p50, p90, mx float64, never int) analyze.ChaosDist {
		return analyze.ChaosDist{Summary: stats.Summary{N: n, Mean: mean, P50: p50, P90: p90, Max: mx}, Never: never}
	}
	for _, tc := range []struct {
		name string
		a    *analyze.Report
		want []string
	}{
		{"no chaos: nothing", &analyze.Report{}, nil},
		{"per kind and figure", &analyze.Report{Chaos: &analyze.ChaosReport{Spec: "faults kill/pause every 1m0s..2m0s", LatencyFactor: 2,
			Cycles: make([]analyze.ChaosCycle, 3),
			ByKind: map[string]analyze.ChaosKind{
				"kill":  {Cycles: 2, DowntimeMs: d(2, 1500, 1500, 2700, 3000, 0), LongestGapMs: d(2, 1500, 1500, 2700, 3000, 0), FirstSuccessMs: d(2, 1, 1, 1, 1, 0), LatencyBackMs: d(1, 2500, 2500, 2500, 2500, 1)},
				"pause": {Cycles: 1, DowntimeMs: d(1, 500, 500, 500, 500, 0)},
			}}},
			[]string{"chaos (docs/metrics.md, Chaos): 3 cycles of faults kill/pause every 1m0s..2m0s; latency target 2x",
				"kill (2)", "downtime", "1500  1500  2700  3000", "back under latency target", "pause (1)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			writeChaos(&b, tc.a)
			if tc.want == nil && b.Len() > 0 {
				t.Fatalf("wrote %q", b.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("missing %q in\n%s", w, b.String())
				}
			}
			if strings.Index(b.String(), "kill (2)") > strings.Index(b.String(), "pause (1)") {
				t.Errorf("kinds not sorted:\n%s", b.String())
			}
		})
	}
}
