package analyze

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
)

// rowHists rebuilds each window's histogram from its row: of its n
// successes, half at p50, up to the 99th percentile at p99, the rest at
// max. For the test data of the report package, whose run directory has
// no hist/ (the rows are all that is left of it).
type rowHists struct{ rows map[string]measure.WindowRow }

func (h rowHists) MergeWindow(op string, start time.Duration, into *hdrhistogram.Histogram) bool {
	r, ok := h.rows[op+"@"+start.String()]
	if !ok {
		return false
	}
	n := r.OK
	half := (n + 1) / 2
	p99 := int64(math.Ceil(0.99 * float64(n)))
	_ = into.RecordValues(int64(r.P50Us), half)
	if p99 > half {
		_ = into.RecordValues(int64(r.P99Us), p99-half)
	}
	if n > p99 {
		_ = into.RecordValues(int64(r.MaxUs), n-p99)
	}
	return true
}

// TestSpanPercentilesPauseLeader is issue 11's case from the report test
// data (etcd, leader paused for 8 s): the fault span has 36 successes, 29
// at 12-31 ms, 3 at 1.8 s and 4 at 7.02 s. Averaging the windows'
// percentiles reported p50 938 ms and p99 955 ms; the span's real p50 is
// 31 ms and its p99 7.02 s.
func TestSpanPercentilesPauseLeader(t *testing.T) {
	dir := filepath.Join("..", "report", "testdata", "runs", "20261122T025537Z-etcd-pause-leader")
	rows, err := measure.ReadWindows(filepath.Join(dir, measure.WindowsFile))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := event.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	h := rowHists{rows: map[string]measure.WindowRow{}}
	for _, r := range rows {
		h.rows[r.Op+"@"+r.Start.String()] = r
	}
	for _, tc := range []struct {
		name          string
		hists         Histograms
		exact         bool
		p50Lo, p50Hi  float64
		p99Lo, p99Hi  float64
		wantDuringOKs int64
	}{
		{"window averages (old)", nil, false, 900_000, 1_000_000, 900_000, 1_000_000, 36},
		{"merged histograms", h, true, 12_000, 32_000, 7_000_000, 7_030_000, 36},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.Hists = tc.hists
			rep, err := Analyze(rows, evs, p)
			if err != nil {
				t.Fatal(err)
			}
			d := rep.Faults[0].During
			if d.OKCount != tc.wantDuringOKs {
				t.Fatalf("fault span successes %d, want %d", d.OKCount, tc.wantDuringOKs)
			}
			if d.P50Us < tc.p50Lo || d.P50Us > tc.p50Hi || d.P99Us < tc.p99Lo || d.P99Us > tc.p99Hi {
				t.Errorf("during p50 %.0f µs p99 %.0f µs; want p50 in [%.0f, %.0f], p99 in [%.0f, %.0f]", d.P50Us, d.P99Us, tc.p50Lo, tc.p50Hi, tc.p99Lo, tc.p99Hi)
			}
			if rep.PercentilesExact != tc.exact {
				t.Errorf("percentiles_exact %v, want %v (notes %q)", rep.PercentilesExact, tc.exact, rep.Notes)
			}
			t.Logf("during p50 %.0f µs, p99 %.0f µs", d.P50Us, d.P99Us)
		})
	}
}

// TestSpanPercentilesFromHlog is issue 11's synthetic case, through real
// hist/*.hlog files: 29 windows of 1,000 operations with p99 5 ms and one
// window where 500 of 1,000 waited 2 s. The span's p99 is 2 s; the
// average of the window p99s was 71.5 ms.
func TestSpanPercentilesFromHlog(t *testing.T) {
	dir := t.TempDir()
	start := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	col, err := measure.NewCollector(measure.Config{Dir: dir, Ops: []string{"READ"}, Window: time.Second, Start: start, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	col.EndAt(start.Add(30 * time.Second))
	rec := col.Recorder(0)
	for w := 0; w < 30; w++ {
		for i := 0; i < 1000; i++ {
			end := start.Add(time.Duration(w)*time.Second + time.Duration(i)*time.Millisecond)
			lat := time.Millisecond
			switch {
			case w == 29 && i >= 500:
				lat = 2 * time.Second
			case w < 29 && i >= 980:
				lat = 5 * time.Millisecond
			}
			rec.Record(measure.Sample{Op: 0, Class: outcome.OK, Intended: end.Add(-lat), Started: end.Add(-lat), Ended: end})
		}
	}
	if _, err := col.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := measure.ReadWindows(filepath.Join(dir, measure.WindowsFile))
	if err != nil {
		t.Fatal(err)
	}
	hl, err := measure.ReadHistLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		hists  Histograms
		lo, hi float64
	}{
		{"window averages (old)", nil, 71_000, 72_000},
		{"merged hist/*.hlog", hl, 1_999_000, 2_002_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.Hists = tc.hists
			rep, err := Analyze(rows, nil, p)
			if err != nil {
				t.Fatal(err)
			}
			ph := rep.Phases[0]
			if ph.OKCount != 30000 || ph.P99Us < tc.lo || ph.P99Us > tc.hi {
				t.Errorf("%d ops, p99 %.0f µs; want 30000 and p99 in [%.0f, %.0f]", ph.OKCount, ph.P99Us, tc.lo, tc.hi)
			}
			t.Logf("p99 %.0f µs", ph.P99Us)
		})
	}
}

// TestDroppedPerPhase: open-loop operations that never started are
// reported where they were due (per phase, per fault span, in total) next
// to the offered rate. Before, only `faultbench run` printed a total.
func TestDroppedPerPhase(t *testing.T) {
	var rows []measure.WindowRow
	for w := 0; w < 20; w++ {
		r := measure.WindowRow{Index: w, Start: time.Duration(w) * sec, End: time.Duration(w+1) * sec, Phase: measure.PhaseRun, Op: measure.AllOps, OK: 100}
		if w >= 15 {
			r.Dropped = 10
		}
		rows = append(rows, r)
	}
	evs := []event.Event{{T: int64(10 * sec), Kind: event.FaultInject, Node: "n1", Detail: "pause n1"}}
	p := DefaultParams()
	p.OfferedOps = 110
	rep, err := Analyze(rows, evs, p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.DroppedOps != 50 || rep.OfferedOps != 110 {
		t.Errorf("report dropped %d offered %v, want 50 and 110", rep.DroppedOps, rep.OfferedOps)
	}
	if got := rep.Faults[0].During.DroppedCount; got != 50 {
		t.Errorf("fault span dropped %d, want 50", got)
	}
	want := map[string]int64{"before": 0, "pause n1": 50, "final": 40}
	for _, ph := range rep.Phases {
		if ph.DroppedCount != want[ph.Name] || ph.OfferedOps != 110 {
			t.Errorf("phase %s: dropped %d offered %v, want %d and 110", ph.Name, ph.DroppedCount, ph.OfferedOps, want[ph.Name])
		}
	}
}
