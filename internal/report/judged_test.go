package report

import (
	"testing"

	"github.com/faultbench/faultbench/internal/analyze"
)

// TestJudgedCells: a figure the analysis did not judge shows "not judged
// (why)" instead of its value, and a censored peak is shown as a lower
// bound.
func TestJudgedCells(t *testing.T) {
	m := analyze.FaultMetrics{PeakLatencyMs: 24.6, NotJudged: map[string]string{"peak_latency_ms": "3 completions"}}
	if got := judged(m, "peak_latency_ms", peakCell(m)); got != "not judged (3 completions)" {
		t.Errorf("not judged peak: %q", got)
	}
	if got := judged(m, "failed_count", "7"); got != "7" {
		t.Errorf("judged count: %q", got)
	}
	m = analyze.FaultMetrics{PeakLatencyMs: 10000, PeakCensored: true}
	if got := peakCell(m); got != "≥ 10000.0" {
		t.Errorf("censored peak: %q", got)
	}
}
