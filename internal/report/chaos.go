package report

import (
	"fmt"
	"io"
	"strconv"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/texttable"
)

// writeChaos prints a chaos run's per-kind distributions (analyze's
// Report.Chaos): per fault kind and figure n, mean, p50, p90, max in ms and
// how many cycles never reached it; nothing for a run without chaos.
func writeChaos(w io.Writer, a *analyze.Report) {
	if a == nil || a.Chaos == nil {
		return
	}
	c := a.Chaos
	fmt.Fprintf(w, "\nchaos (docs/metrics.md, Chaos): %d cycles", len(c.Cycles))
	if c.Spec != "" {
		fmt.Fprintf(w, " of %s", c.Spec)
	}
	fmt.Fprintf(w, "; latency target %gx the p99 before each cycle\n", c.LatencyFactor)
	if len(c.ByKind) == 0 {
		fmt.Fprintln(w, "  no fault was injected")
		return
	}
	grid := [][]string{{"kind (cycles)", "figure, ms", "n", "mean", "p50", "p90", "max", "never"}}
	for _, kd := range c.ChaosKinds() {
		k := c.ByKind[kd]
		for i, f := range []struct {
			name string
			d    analyze.ChaosDist
		}{{"downtime", k.DowntimeMs}, {"longest gap", k.LongestGapMs}, {"first success", k.FirstSuccessMs}, {"back under latency target", k.LatencyBackMs}} {
			label := ""
			if i == 0 {
				label = fmt.Sprintf("%s (%d)", kd, k.Cycles)
			}
			row := []string{label, f.name, strconv.Itoa(f.d.N), "-", "-", "-", "-", strconv.Itoa(f.d.Never)}
			if f.d.N > 0 {
				row[3], row[4], row[5], row[6] = chaosMs(f.d.Mean), chaosMs(f.d.P50), chaosMs(f.d.P90), chaosMs(f.d.Max)
			}
			grid = append(grid, row)
		}
	}
	fmt.Fprint(w, texttable.Format(grid, texttable.Options{Indent: "  "}))
}

// chaosMs writes milliseconds without a fraction.
func chaosMs(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
