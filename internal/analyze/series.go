package analyze

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
)

// slot is one window of the run: its ALL row (read or synthesised from the
// per-op rows) and its per-op rows.
type slot struct {
	start, end time.Duration
	run        bool
	all        measure.WindowRow
	ops        map[string]measure.WindowRow
}

func (s slot) dur() time.Duration { return s.end - s.start }
func (s slot) mid() time.Duration { return s.start + (s.end-s.start)/2 }

// row returns the window's row for op (measure.AllOps for the aggregate).
func (s slot) row(op string) (measure.WindowRow, bool) {
	if op == measure.AllOps {
		return s.all, true
	}
	r, ok := s.ops[op]
	return r, ok
}

// rate is count per second over d, computed so that round numbers stay
// exact (count*1e9/ns rather than count/seconds).
func rate(count int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(count) * float64(time.Second) / float64(d)
}

// latWeight is the weight of a row's latency figures when windows are
// combined: its successful operations.
func latWeight(r measure.WindowRow) float64 { return float64(r.OK) }

// buildSlots groups rows into windows by start time, sorted by start. Rows
// with End <= Start are dropped. A window without an ALL row gets one
// synthesised from its per-op rows (counts summed, mean and percentiles
// weighted by successful operations, max the maximum). The notes say what
// was dropped or synthesised.
func buildSlots(rows []measure.WindowRow) ([]slot, []string) {
	var notes []string
	byStart := map[time.Duration]*slot{}
	hasAll := map[time.Duration]bool{}
	var starts []time.Duration
	bad := 0
	for _, r := range rows {
		if r.End <= r.Start {
			bad++
			continue
		}
		s := byStart[r.Start]
		if s == nil {
			s = &slot{start: r.Start, end: r.End, ops: map[string]measure.WindowRow{}}
			byStart[r.Start] = s
			starts = append(starts, r.Start)
		}
		if r.End > s.end {
			s.end = r.End
		}
		if r.Phase != measure.PhaseWarmup {
			s.run = true
		}
		if r.Op == measure.AllOps {
			s.all = r
			hasAll[r.Start] = true
		} else {
			s.ops[r.Op] = r
		}
	}
	if bad > 0 {
		notes = append(notes, fmt.Sprintf("%d window rows with end <= start ignored", bad))
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	out := make([]slot, 0, len(starts))
	synth := 0
	for _, st := range starts {
		s := byStart[st]
		if !hasAll[st] {
			s.all = synthesiseAll(*s)
			synth++
		}
		out = append(out, *s)
	}
	if synth > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d windows had no ALL row; synthesised from per-op rows (percentiles approximate)", synth, len(out)))
	}
	return out, notes
}

// synthesiseAll builds an ALL row from a window's per-op rows.
func synthesiseAll(s slot) measure.WindowRow {
	a := measure.WindowRow{Start: s.start, End: s.end, Op: measure.AllOps, Phase: measure.PhaseWarmup}
	if s.run {
		a.Phase = measure.PhaseRun
	}
	var w float64
	a.OKTimes = len(s.ops) > 0
	for _, r := range s.ops {
		a.Index = r.Index
		a.OKTimes = a.OKTimes && r.OKTimes
		if r.OK > 0 && r.OKTimes {
			if a.OK == 0 || r.FirstOK < a.FirstOK {
				a.FirstOK = r.FirstOK
			}
			if a.OK == 0 || r.LastOK > a.LastOK {
				a.LastOK = r.LastOK
			}
		}
		a.OK += r.OK
		a.Behind += r.Behind
		for c := range a.Errors {
			a.Errors[c] += r.Errors[c]
		}
		rw := latWeight(r)
		w += rw
		a.MeanUs += rw * r.MeanUs
		a.P50Us += rw * r.P50Us
		a.P90Us += rw * r.P90Us
		a.P95Us += rw * r.P95Us
		a.P99Us += rw * r.P99Us
		a.P999Us += rw * r.P999Us
		a.SvcMeanUs += rw * r.SvcMeanUs
		a.SvcP99Us += rw * r.SvcP99Us
		a.MaxUs = math.Max(a.MaxUs, r.MaxUs)
		a.FailMaxUs = math.Max(a.FailMaxUs, r.FailMaxUs)
	}
	if w > 0 {
		for _, p := range []*float64{&a.MeanUs, &a.P50Us, &a.P90Us, &a.P95Us, &a.P99Us, &a.P999Us, &a.SvcMeanUs, &a.SvcP99Us} {
			*p /= w
		}
	}
	return a
}

// LatencyStats summarises a set of windows for one operation (or ALL).
// Counts, throughput, mean and max are exact; the percentiles are those of
// the windows' merged histograms when the analysis has them
// (Params.Hists), else the windows' percentiles weighted by their
// successful operations (an approximation: Report.PercentilesExact is
// false). All zero when the set is empty.
type LatencyStats struct {
	DurationMs float64 `json:"duration_ms"`    // total length of the windows
	Ops        float64 `json:"throughput_ops"` // successful operations per second
	OKCount    int64   `json:"ok_count"`       // successful operations
	ErrorCount int64   `json:"error_count"`    // failed operations: every failure class (not found excluded)
	// NotFoundCount counts operations answered "not found" (a read of a
	// missing key): neither a success nor a failure (docs/metrics.md).
	NotFoundCount int64   `json:"not_found_count,omitempty"`
	MeanUs        float64 `json:"mean_us"`
	P50Us         float64 `json:"p50_us"`
	P95Us         float64 `json:"p95_us"`
	P99Us         float64 `json:"p99_us"`
	MaxUs         float64 `json:"max_us"`
	// FailedMaxUs is the longest failed operation's latency (from its
	// intended start, censored at its duration: windows.csv fail_max_us);
	// absent without failures or for windows.csv files without the column.
	FailedMaxUs float64 `json:"failed_max_us,omitempty"`
	// DroppedCount counts the open-loop operations due in these windows
	// that never started (ALL only: a dropped operation has no type).
	DroppedCount int64 `json:"dropped_count,omitempty"`
}

// stats summarises the windows idx for op; windows without a row for op
// are skipped.
func stats(s []slot, idx []int, op string) LatencyStats {
	var st LatencyStats
	var d time.Duration
	var w float64
	for _, i := range idx {
		r, ok := s[i].row(op)
		if !ok {
			continue
		}
		d += s[i].dur()
		if op == measure.AllOps {
			st.DroppedCount += r.Dropped
		}
		st.OKCount += r.OK
		st.ErrorCount += r.FailureCount()
		st.NotFoundCount += r.Errors[outcome.NotFound]
		rw := latWeight(r)
		w += rw
		st.MeanUs += rw * r.MeanUs
		st.P50Us += rw * r.P50Us
		st.P95Us += rw * r.P95Us
		st.P99Us += rw * r.P99Us
		st.MaxUs = math.Max(st.MaxUs, r.MaxUs)
		st.FailedMaxUs = math.Max(st.FailedMaxUs, r.FailMaxUs)
	}
	if w > 0 {
		st.MeanUs /= w
		st.P50Us /= w
		st.P95Us /= w
		st.P99Us /= w
	}
	st.DurationMs = ms(d)
	st.Ops = rate(st.OKCount, d)
	return st
}

// stats is stats with exact percentiles from the merged window histograms
// when the analysis has them; otherwise (or when a window's histogram is
// missing or disagrees with its row) it records why in a.inexact.
func (a *analyzer) stats(idx []int, op string) LatencyStats {
	st := stats(a.s, idx, op)
	if st.OKCount == 0 {
		return st
	}
	if a.p.Hists == nil {
		a.inexact = "no per-window histograms (hist/*.hlog)"
		return st
	}
	h := measure.NewLatencyHistogram()
	for _, i := range idx {
		r, ok := a.s[i].row(op)
		if !ok || r.OK == 0 {
			continue
		}
		if !a.p.Hists.MergeWindow(op, a.s[i].start, h) {
			a.inexact = fmt.Sprintf("no %s histogram for the window at %v", op, a.s[i].start)
			return st
		}
	}
	if h.TotalCount() != st.OKCount {
		a.inexact = fmt.Sprintf("%s histograms hold %d operations, the windows %d", op, h.TotalCount(), st.OKCount)
		return st
	}
	st.P50Us = float64(h.ValueAtQuantile(50))
	st.P95Us = float64(h.ValueAtQuantile(95))
	st.P99Us = float64(h.ValueAtQuantile(99))
	return st
}

// errorsByClass sums the ALL rows' errors of windows idx by class name;
// classes with no errors are left out.
func errorsByClass(s []slot, idx []int) map[string]int64 {
	out := map[string]int64{}
	for _, i := range idx {
		for _, c := range outcome.ErrorClasses() {
			if n := s[i].all.Errors[c]; n != 0 {
				out[c.String()] += n
			}
		}
	}
	return out
}

// meanOps is the throughput over windows idx: their successful operations
// divided by their total length.
func meanOps(s []slot, idx []int) float64 {
	var ok int64
	var d time.Duration
	for _, i := range idx {
		ok += s[i].all.OK
		d += s[i].dur()
	}
	return rate(ok, d)
}

// tp is the throughput of window i.
func tp(s []slot, i int) float64 { return rate(s[i].all.OK, s[i].dur()) }

// medianWindow is the median window length.
func medianWindow(s []slot) time.Duration {
	if len(s) == 0 {
		return 0
	}
	d := make([]time.Duration, len(s))
	for i := range s {
		d[i] = s[i].dur()
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}
