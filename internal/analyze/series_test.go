package analyze

import (
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
)

func TestStatsWeighting(t *testing.T) {
	row := func(i int, op string, ok int64, p99, maxUs float64) measure.WindowRow {
		r := measure.WindowRow{Index: i, Start: time.Duration(i) * sec, End: time.Duration(i+1) * sec,
			Phase: measure.PhaseRun, Op: op, OK: ok, MeanUs: p99 / 2, P50Us: p99 / 4, P95Us: p99, P99Us: p99, MaxUs: maxUs}
		r.Errors[outcome.Unavailable] = 2
		return r
	}
	s, notes := buildSlots([]measure.WindowRow{
		row(0, measure.AllOps, 100, 1000, 5000),
		row(1, measure.AllOps, 300, 3000, 4000),
		row(2, measure.AllOps, 0, 0, 0), // no success: latency unknown, weight 0
		// window 3 has only per-op rows: ALL is synthesised.
		row(3, "read", 100, 1000, 1500),
		row(3, "update", 300, 5000, 9000),
	})
	if len(s) != 4 || len(notes) != 1 {
		t.Fatalf("slots %d, notes %v", len(s), notes)
	}
	t.Run("weighted by successful operations", func(t *testing.T) {
		st := stats(s, []int{0, 1, 2}, measure.AllOps)
		eq(t, "P99Us", st.P99Us, 2500)
		eq(t, "MeanUs", st.MeanUs, 1250)
		eq(t, "MaxUs", st.MaxUs, 5000)
		eq(t, "Ops", st.Ops, 400.0/3)
		eq(t, "DurationMs", st.DurationMs, 3000)
		if st.OKCount != 400 || st.ErrorCount != 6 {
			t.Errorf("counts %d %d", st.OKCount, st.ErrorCount)
		}
	})
	t.Run("synthesised ALL", func(t *testing.T) {
		a := s[3].all
		if a.OK != 400 || a.Errors[outcome.Unavailable] != 4 || a.Op != measure.AllOps || a.Phase != measure.PhaseRun {
			t.Errorf("ALL row %+v", a)
		}
		eq(t, "P99Us", a.P99Us, 4000)
		eq(t, "MaxUs", a.MaxUs, 9000)
	})
	t.Run("per op", func(t *testing.T) {
		st := stats(s, []int{0, 1, 2, 3}, "read")
		eq(t, "Ops", st.Ops, 100) // only window 3 has read rows
		eq(t, "P99Us", st.P99Us, 1000)
	})
	t.Run("empty", func(t *testing.T) {
		if st := stats(s, nil, measure.AllOps); st != (LatencyStats{}) {
			t.Errorf("stats of nothing %+v", st)
		}
	})
}
