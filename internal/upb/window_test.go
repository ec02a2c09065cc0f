package upb

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
)

// rowsOf builds ALL rows of 1 s windows: warm windows of warm-up, then the
// given successful counts (each a 1 s run window).
func rowsOf(warm int, ok ...int64) []measure.WindowRow {
	var rows []measure.WindowRow
	for i := 0; i < warm+len(ok); i++ {
		r := measure.WindowRow{Index: i, Start: time.Duration(i) * time.Second, End: time.Duration(i+1) * time.Second, Op: measure.AllOps, Phase: measure.PhaseWarmup, OK: 1}
		if i >= warm {
			r.Phase, r.OK = measure.PhaseRun, ok[i-warm]
		}
		// a per-operation row, to be ignored
		rows = append(rows, measure.WindowRow{Index: i, Start: r.Start, End: r.End, Op: "READ", Phase: r.Phase, OK: 99999})
		rows = append(rows, r)
	}
	return rows
}

func repeat(v int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestSteadinessFirst: with the ±2 % rule off (the paper's acceptance) the
// measurement window is the first Measure after warm-up whatever its
// samples do; whether they stayed within ±2 % is recorded.
func TestSteadinessFirst(t *testing.T) {
	st := Steadiness{Sample: 2 * time.Second, Window: time.Second, Tol: 0.02, Measure: 6 * time.Second}
	for _, tc := range []struct {
		name         string
		rows         []measure.WindowRow
		have, steady bool
		from, to     time.Duration
		ok           int64
	}{
		{name: "steady", rows: rowsOf(2, repeat(1000, 7)...), have: true, steady: true, from: 2 * time.Second, to: 8 * time.Second, ok: 6000},
		{name: "an unsteady start is measured, not skipped", rows: rowsOf(0, 500, 500, 1000, 1000, 1000, 1000, 1000, 1000), have: true, from: 0, to: 6 * time.Second, ok: 5000},
		{name: "beyond ±2 %", rows: rowsOf(0, 1030, 1030, 970, 970, 1000, 1000), have: true, from: 0, to: 6 * time.Second, ok: 6000},
		{name: "too short: what there is", rows: rowsOf(0, 1000, 1000, 1000, 1000), steady: true, from: 0, to: 4 * time.Second, ok: 4000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to, ok, _, have, steady := st.First(tc.rows)
			if have != tc.have || steady != tc.steady || from != tc.from || to != tc.to || ok != tc.ok {
				t.Errorf("First = [%v, %v) %d ops, have %v, steady %v; want [%v, %v) %d, %v, %v", from, to, ok, have, steady, tc.from, tc.to, tc.ok, tc.have, tc.steady)
			}
		})
	}
}

func TestSteadinessFind(t *testing.T) {
	st := Steadiness{Sample: 2 * time.Second, Window: time.Second, Tol: 0.02, Measure: 6 * time.Second}
	for _, tc := range []struct {
		name     string
		rows     []measure.WindowRow
		found    bool
		from, to time.Duration
		ok       int64
	}{
		{name: "steady at once", rows: rowsOf(2, repeat(1000, 6)...), found: true, from: 2 * time.Second, to: 8 * time.Second, ok: 6000},
		{name: "warm-up windows are not measured", rows: rowsOf(3, 1000, 1000, 1000, 1000, 1000), found: false},
		{name: "a dip and its catch-up inside one sample are steady", rows: rowsOf(0, 700, 1300, 1000, 1000, 1000, 1000), found: true, from: 0, to: 6 * time.Second, ok: 6000},
		{name: "an unsteady start is skipped, sample by sample", rows: rowsOf(0, 500, 500, 1000, 1000, 1000, 1000, 1000, 1000), found: true, from: 2 * time.Second, to: 8 * time.Second, ok: 6000},
		{name: "within ±2 %", rows: rowsOf(0, 1020, 1020, 980, 980, 1000, 1000), found: true, from: 0, to: 6 * time.Second, ok: 6000},
		{name: "beyond ±2 %", rows: rowsOf(0, 1030, 1030, 970, 970, 1000, 1000), found: false},
		{name: "too short", rows: rowsOf(0, 1000, 1000, 1000, 1000), found: false},
		{name: "an incomplete last sample is not used", rows: rowsOf(0, 1000, 1000, 1000, 1000, 1000), found: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to, ok, _, found := st.Find(tc.rows)
			if found != tc.found {
				t.Fatalf("found = %v, want %v", found, tc.found)
			}
			if found && (from != tc.from || to != tc.to || ok != tc.ok) {
				t.Errorf("window [%v, %v) with %d ops, want [%v, %v) with %d", from, to, ok, tc.from, tc.to, tc.ok)
			}
		})
	}
	t.Run("partial last window ignored", func(t *testing.T) {
		rows := rowsOf(0, repeat(1000, 6)...)
		rows = append(rows, measure.WindowRow{Start: 6 * time.Second, End: 6*time.Second + 300*time.Millisecond, Op: measure.AllOps, Phase: measure.PhaseRun, OK: 5, Partial: true})
		if _, to, _, _, found := st.Find(rows); !found || to != 6*time.Second {
			t.Errorf("found %v, to %v", found, to)
		}
	})
	t.Run("errors are counted", func(t *testing.T) {
		rows := rowsOf(0, repeat(1000, 6)...)
		rows[1].Errors[outcome.Timeout] = 7
		rows[3].Errors[outcome.Unavailable] = 3
		if _, _, _, errs, _ := st.Find(rows); errs != 10 {
			t.Errorf("errors %d, want 10", errs)
		}
	})
	t.Run("spread note", func(t *testing.T) {
		if s := st.spread(rowsOf(0, 500, 500, 1000, 1000)); !strings.Contains(s, "2 samples of 2s: 500..1000 ops/s around 750") {
			t.Errorf("spread = %q", s)
		}
	})
}

func TestParseWindowsCSV(t *testing.T) {
	in := measure.WindowsHeader + "\n" +
		"0,1000,warmup,READ,10,0,0,0,0,0,0,1,1,1,1,1,1,1,1,1\n" +
		"0,1000,warmup,ALL,10,0,0,0,0,0,0,1,1,1,1,1,1,1,1,1\n" +
		"1000,2000,run,ALL,20,1,2,0,0,3,0,1,1,1,1,1,1,1,1,1\n" +
		"2000,3000,run,ALL,30,0,0,0,0,0,0,1,1,1,1,1,1,1,1,1\n" +
		"3000,4000,run,ALL,4" // being written
	rows := parseWindowsCSV([]byte(in))
	if len(rows) != 3 {
		t.Fatalf("%d rows, want the 3 complete ALL rows: %+v", len(rows), rows)
	}
	if r := rows[1]; r.Start != time.Second || r.End != 2*time.Second || r.Phase != measure.PhaseRun || r.OK != 20 || r.ErrorCount() != 6 {
		t.Errorf("row %+v", r)
	}
	if rows := parseWindowsCSV([]byte("start_ms,end")); rows != nil {
		t.Errorf("a file without a complete line gave %v", rows)
	}
}

// hlogLine returns one interval line of an HdrHistogram log.
func hlogLine(t *testing.T, startSec float64, values ...int64) string {
	t.Helper()
	h := hdrhistogram.New(measure.LowestUs, measure.HighestUs, measure.SigFigs)
	for _, v := range values {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%.6f,1.000000,%.6f,%s\n", startSec, float64(h.Max())/1e6, b)
}

func TestPhi(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "hist"), 0o755); err != nil {
		t.Fatal(err)
	}
	log := "#[faultbench test]\n#[StartTime: 1.000 (seconds since epoch)]\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n" +
		hlogLine(t, 0, 5_000_000, 5_000_000) + // warm-up: slow, outside the window
		hlogLine(t, 1, 1000, 2000, 999_000) +
		hlogLine(t, 2, 1_500_000, 3000) +
		hlogLine(t, 3, 10, 20, 30, 40) // after the window
	if err := os.WriteFile(filepath.Join(dir, "hist", "all.hlog"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		from, to time.Duration
		errs     int64
		want     float64
	}{
		{name: "window of two intervals", from: time.Second, to: 3 * time.Second, want: 4.0 / 5},
		{name: "failed operations count as slow", from: time.Second, to: 3 * time.Second, errs: 5, want: 4.0 / 10},
		{name: "one interval", from: 3 * time.Second, to: 4 * time.Second, want: 1},
		{name: "warm-up interval only", from: 0, to: time.Second, want: 0},
		{name: "empty window", from: 10 * time.Second, to: 11 * time.Second, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := phiOf(dir, tc.from, tc.to, time.Second, tc.errs)
			if err != nil {
				t.Fatal(err)
			}
			if !near(got, tc.want, 1e-9) {
				t.Errorf("φ fraction %g, want %g", got, tc.want)
			}
		})
	}
	t.Run("missing log", func(t *testing.T) {
		if _, err := phiOf(t.TempDir(), 0, time.Second, time.Second, 0); err == nil || !strings.Contains(err.Error(), "φ") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("corrupt interval", func(t *testing.T) {
		d := t.TempDir()
		_ = os.Mkdir(filepath.Join(d, "hist"), 0o755)
		_ = os.WriteFile(filepath.Join(d, "hist", "all.hlog"), []byte("1.0,1.0,0.1,NOTBASE64\n"), 0o644)
		if _, err := phiOf(d, 0, 5*time.Second, time.Second, 0); err == nil || !strings.Contains(err.Error(), "decoding interval") {
			t.Errorf("error %v", err)
		}
	})
}

func TestClientTPS(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clients.csv")
	csv := "client,ok,errors,mean_us,p50_us,p95_us,p99_us,max_us,throughput_ops\n" +
		"0,10,0,1,1,1,1,1,10.5\n1,10,0,1,1,1,1,1,9.5\n2,10,0,1,1,1,1,1,7\n3,10,0,1,1,1,1,1,8\n4,10,0,1,1,1,1,1,1\n"
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := clientTPS(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != 20 || got[1] != 15 || got[2] != 1 {
		t.Errorf("per-client tps %v, want [20 15 1] (threads 0-1, 2-3, 4)", got)
	}
}
