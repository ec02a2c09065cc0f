package report

import (
	"strings"
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

// TestCompareRefusesInvalid: compare refuses runs marked invalid, naming
// them and why, unless asked to include them; valid runs pass.
func TestCompareRefusesInvalid(t *testing.T) {
	valid := &Run{Name: "a", Analysis: &analyze.Report{}}
	bad := &Run{Name: "b", Analysis: &analyze.Report{Invalid: true, InvalidReasons: []string{"baseline 600 ops/s is 40.0 % below the offered 1000 ops/s"}}}
	if err := refuseInvalid([]*Run{valid, {Name: "c"}}, CompareOptions{}); err != nil {
		t.Errorf("valid runs refused: %v", err)
	}
	err := refuseInvalid([]*Run{valid, bad}, CompareOptions{})
	if err == nil || !strings.Contains(err.Error(), "b: baseline 600 ops/s") || !strings.Contains(err.Error(), "--include-invalid") {
		t.Errorf("invalid run: %v", err)
	}
	if err := refuseInvalid([]*Run{valid, bad}, CompareOptions{IncludeInvalid: true}); err != nil {
		t.Errorf("with IncludeInvalid: %v", err)
	}
	if got := validityCell(&source{Analysis: bad.Analysis}); !strings.HasPrefix(got, "INVALID: baseline 600") {
		t.Errorf("validity cell %q", got)
	}
}
