package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/faultbench/faultbench/internal/metastable"
	"github.com/faultbench/faultbench/internal/rundir"
)

// The metastability verdict (docs/metrics.md, Metastability): summary.json's
// metastable section, a line on the terminal, a section of report.html and
// the cells of a sweep's recovery map.

// SummaryMetastable returns summary.json's metastability verdict; nil when
// the run was not judged.
func SummaryMetastable(sum *rundir.Summary) (*metastable.Verdict, error) {
	if sum == nil {
		return nil, nil
	}
	raw, ok := sum.Sections[metastable.SummaryKey]
	if !ok {
		return nil, nil
	}
	var v metastable.Verdict
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("summary.json metastable: %w", err)
	}
	return &v, nil
}

// writeMetastable prints the verdict's lines for the terminal.
func writeMetastable(w io.Writer, sum *rundir.Summary) {
	v, err := SummaryMetastable(sum)
	if err != nil {
		fmt.Fprintf(w, "\nmetastability: %v\n", err)
		return
	}
	if v == nil {
		return
	}
	word := v.Verdict
	if v.Verdict == metastable.Recovered && v.TimeToRecoverMs != nil {
		word = fmt.Sprintf("RECOVERED in %.1f s", *v.TimeToRecoverMs/1000)
	} else if v.Verdict == metastable.Metastable {
		word = "METASTABLE"
	}
	fmt.Fprintf(w, "\nmetastability (docs/metrics.md): %s after %s [%.1f s, %.1f s]: %s\n", word, triggerText(v), v.TriggerStartMs/1000, v.TriggerEndMs/1000, v.Reason)
	if v.RetriesBeforeOps > 0 || v.RetriesAfterOps > 0 {
		fmt.Fprintf(w, "  client retries: %.1f/s before the trigger, %.1f/s after it\n", v.RetriesBeforeOps, v.RetriesAfterOps)
	}
}

func triggerText(v *metastable.Verdict) string {
	t := v.Trigger.Kind
	if t == "" {
		t = "no trigger"
	}
	if v.Trigger.What != "" {
		t += " (" + v.Trigger.What + ")"
	}
	return t
}

// metastableView is report.html's metastability section.
type metastableView struct {
	Word, Class, Reason string
	Facts               table
}

func metastableSection(r *Run) (*metastableView, []string) {
	v, err := SummaryMetastable(r.Summary)
	if err != nil {
		return nil, []string{err.Error()}
	}
	if v == nil {
		return nil, nil
	}
	mv := &metastableView{Word: v.Short(), Reason: v.Reason}
	switch v.Verdict {
	case metastable.Recovered:
		mv.Class = "pass"
	case metastable.Metastable:
		mv.Class = "fail"
	default:
		mv.Class = "unknown"
	}
	mv.Facts.Head = []string{"figure", "value"}
	add := func(k, val string) { mv.Facts.add("", k, val) }
	add("trigger", fmt.Sprintf("%s, %.1f s .. %.1f s", triggerText(v), v.TriggerStartMs/1000, v.TriggerEndMs/1000))
	add("pre-trigger goodput", fmt.Sprintf("%.1f ops/s over %d windows", v.BaselineGoodputOps, v.BaselineWindows))
	add("pre-trigger p99", fmtUs(v.BaselineP99Us))
	add("recovery conditions", fmt.Sprintf("goodput >= %.1f ops/s and p99 <= %s, held %.1f s", v.GoodputFloorOps, fmtUs(v.LatencyTargetUs), v.HoldMs/1000))
	if v.TimeToRecoverMs != nil {
		add("time to recover", fmt.Sprintf("%.1f s after the trigger's end", *v.TimeToRecoverMs/1000))
	}
	add("windows after the trigger", fmt.Sprintf("%d, %d of them degraded", v.AfterWindows, v.DegradedWindows))
	add("at the end", fmt.Sprintf("goodput %.1f ops/s, p99 %s", v.FinalGoodputOps, fmtUs(v.FinalP99Us)))
	add("client retries", fmt.Sprintf("%.1f/s before, %.1f/s after the trigger", v.RetriesBeforeOps, v.RetriesAfterOps))
	return mv, nil
}

func fmtUs(us float64) string {
	if us >= 1000 {
		return fmt.Sprintf("%.1f ms", us/1000)
	}
	return fmt.Sprintf("%.0f µs", us)
}
