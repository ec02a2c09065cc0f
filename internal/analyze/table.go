package analyze

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/texttable"
)

// ResultsTable lays reports out like the NoSQL failover study's results table: one row per
// metric, one column per run (names[i] heads reports[i]; a missing name is
// "run N", a nil report shows "-"). Per-fault rows are grouped under a
// "fault N" header row naming each run's fault; runs with fewer faults show
// "-". A -1 time-until metric (recovery, stabilisation, reconfiguration)
// prints as "never" (recovery of a fault restored before it recovered:
// "not before restore"), a -1 duration (downtime, gap, failover: not
// computable) and the restore metrics of a fault not restored before the
// run's end as "n/a".
// The result is plain text, columns aligned with spaces, one line per row,
// ending in a newline.
func ResultsTable(names []string, reports []*Report) string {
	header := []string{"metric"}
	for i := range reports {
		name := fmt.Sprintf("run %d", i+1)
		if i < len(names) && names[i] != "" {
			name = names[i]
		}
		header = append(header, name)
	}
	rows := [][]string{header}
	add := func(label string, cell func(r *Report) string) {
		row := []string{label}
		for _, r := range reports {
			if r == nil {
				row = append(row, "-")
			} else {
				row = append(row, cell(r))
			}
		}
		rows = append(rows, row)
	}
	add("baseline throughput (ops/s)", func(r *Report) string {
		s := num(r.BaselineOps, 0)
		if !r.BaselineSteady {
			s += " (not steady)"
		}
		return s
	})
	nf := 0
	for _, r := range reports {
		if r != nil {
			nf = max(nf, len(r.Faults))
		}
	}
	for k := range nf {
		fm := func(cell func(r *Report, m FaultMetrics) string) func(r *Report) string {
			return func(r *Report) string {
				if k >= len(r.Faults) {
					return "-"
				}
				return cell(r, r.Faults[k])
			}
		}
		restored := func(cell func(m FaultMetrics) string) func(r *Report) string {
			return fm(func(r *Report, m FaultMetrics) string {
				if !m.Fault.Restored() || ms(m.Fault.RestoreAt) >= r.RunToMs {
					return "n/a"
				}
				return cell(m)
			})
		}
		injected := func(cell func(m FaultMetrics) string) func(r *Report) string {
			return fm(func(_ *Report, m FaultMetrics) string {
				if m.Fault.RestoreOnly() {
					return "n/a"
				}
				return cell(m)
			})
		}
		add(fmt.Sprintf("fault %d", k+1), fm(func(_ *Report, m FaultMetrics) string {
			s := strings.TrimSpace(m.Fault.Action + " " + m.Fault.Node)
			return s + " @" + num(m.Fault.At.Seconds(), 1) + "s"
		}))
		add("  downtime (ms)", injected(DowntimeCell))
		add("  longest gap (ms)", injected(func(m FaultMetrics) string { return NACell(m.LongestGapMs) }))
		add("  failover time (ms)", injected(FailoverCell))
		add("  recovery time (ms)", injected(func(m FaultMetrics) string { return RecoveryCell(m, m.RecoveryMs) }))
		add("  recovery after downtime (ms)", injected(func(m FaultMetrics) string { return RecoveryCell(m, m.RecoveryAfterDowntimeMs) }))
		add("  node down throughput (ops/s)", injected(func(m FaultMetrics) string {
			if m.RecoveryMs < 0 {
				return "-"
			}
			return num(m.NodeDownOps, 0)
		}))
		add("  node down vs baseline (%)", fm(func(_ *Report, m FaultMetrics) string { return PctCell(m.ChangePct, "node_down_vs_baseline_pct") }))
		add("  restore downtime (ms)", restored(func(m FaultMetrics) string { return NACell(m.RestoreDowntimeMs) }))
		add("  time to stabilise on node up (ms)", restored(func(m FaultMetrics) string { return TimeCell(m.StabiliseMs) }))
		add("  reconfiguration time (ms)", injected(func(m FaultMetrics) string { return TimeCell(m.ReconfigurationMs) }))
		add("  peak latency (ms)", injected(func(m FaultMetrics) string { return num(m.PeakLatencyMs, 1) }))
		add("  failed ops in reconfiguration", injected(func(m FaultMetrics) string { return strconv.FormatInt(m.FailedOps, 10) }))
		add("  aborted ops in reconfiguration", injected(func(m FaultMetrics) string { return strconv.FormatInt(m.AbortedOps, 10) }))
		add("  latency after vs before (%)", injected(func(m FaultMetrics) string {
			if m.LatencyAfterVsBeforePct == nil {
				return "-"
			}
			return signed(*m.LatencyAfterVsBeforePct)
		}))
		add("  dropped ops in fault span", injected(func(m FaultMetrics) string { return strconv.FormatInt(m.During.DroppedCount, 10) }))
	}
	add("final throughput (ops/s)", func(r *Report) string { return num(r.FinalOps, 0) })
	add("final vs baseline (%)", func(r *Report) string {
		if r.BaselineOps <= 0 {
			return "-"
		}
		return signed((r.FinalOps/r.BaselineOps - 1) * 100)
	})
	add("offered load (ops/s)", OfferedCell)
	add("dropped ops (never started)", func(r *Report) string { return strconv.FormatInt(r.DroppedOps, 10) })
	return texttable.Format(rows, texttable.Options{})
}

// DowntimeCell formats m's downtime: NACell, with "+ (still down)" when
// the fault span ended down (the NoSQL failover study reports it as ∞).
func DowntimeCell(m FaultMetrics) string {
	s := NACell(m.DowntimeMs)
	if m.DownAtSpanEnd && m.DowntimeMs >= 0 {
		s += "+ (still down)"
	}
	return s
}

// FailoverCell formats m's failover time: NACell, with "+ (still down)"
// when the first downtime stretch lasted to the span's end: the failover
// then did not end, and the value is only the span's length.
func FailoverCell(m FaultMetrics) string {
	s := NACell(m.FailoverMs)
	if m.FailoverOpen && m.FailoverMs >= 0 {
		s += "+ (still down)"
	}
	return s
}

// OfferedCell formats the offered open-loop rate of r, "closed loop" when
// there was none.
func OfferedCell(r *Report) string {
	if r.OfferedOps <= 0 {
		return "closed loop"
	}
	return num(r.OfferedOps, 0)
}

// TimeCell formats a "time until" metric in ms; negative (-1) is "never".
func TimeCell(v float64) string {
	if v < 0 {
		return "never"
	}
	return num(v, 0)
}

// RecoveryCell formats a recovery metric of m: like TimeCell, but a fault
// whose restore came before the cluster recovered (a killed node started
// again while throughput was still down) reads "not before restore"; its
// recovery is then the restore's "time to stabilise on node up".
func RecoveryCell(m FaultMetrics, v float64) string {
	if v < 0 && m.Fault.Restored() {
		return "not before restore"
	}
	return TimeCell(v)
}

// NACell formats a duration metric in ms; negative (-1: not computable)
// is "n/a".
func NACell(v float64) string {
	if v < 0 {
		return "n/a"
	}
	return num(v, 0)
}

// PctCell formats key of m as a signed percentage, "-" when absent.
func PctCell(m map[string]float64, key string) string {
	v, ok := m[key]
	if !ok {
		return "-"
	}
	return signed(v)
}

// signed formats a percentage with a sign and one decimal.
func signed(v float64) string { return fmt.Sprintf("%+.1f", v) }

// num formats v with the given decimals.
func num(v float64, decimals int) string { return strconv.FormatFloat(v, 'f', decimals, 64) }
