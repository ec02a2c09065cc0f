package measure

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/faultbench/faultbench/internal/outcome"
)

// t0 is the synthetic start of every test run.
func t0() time.Time { return time.Date(2024, 3, 1, 12, 0, 0, 123_000_000, time.UTC) }

// at returns t0 plus ms milliseconds.
func at(ms float64) time.Time { return t0().Add(time.Duration(ms * float64(time.Millisecond))) }

func testConfig(t testing.TB) Config {
	return Config{
		Dir:     t.TempDir(),
		Ops:     []string{"READ", "UPDATE"},
		Window:  100 * time.Millisecond,
		Start:   t0(),
		Workers: 2,
	}
}

// readBack returns c.Windows() after Close, failing the test on an error.
func readBack(t testing.TB, c *Collector) []WindowRow {
	t.Helper()
	rows, err := c.Windows()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func newCollector(t testing.TB, mod func(*Config)) *Collector {
	t.Helper()
	cfg := testConfig(t)
	if mod != nil {
		mod(&cfg)
	}
	c, err := NewCollector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ok returns a successful sample ending at endMs with the given latency
// (from the intended start) and service time, in ms.
func ok(op int, endMs, latMs, svcMs float64) Sample {
	end := at(endMs)
	return Sample{
		Op: op, Class: outcome.OK, Ended: end,
		Intended: end.Add(-time.Duration(latMs * float64(time.Millisecond))),
		Started:  end.Add(-time.Duration(svcMs * float64(time.Millisecond))),
	}
}

func failed(op int, class outcome.Class, endMs float64) Sample {
	s := ok(op, endMs, 1, 1)
	s.Class = class
	return s
}

func finish(t *testing.T, c *Collector, endMs float64) *Totals {
	t.Helper()
	tot, err := c.finish(at(endMs))
	if err != nil {
		t.Fatal(err)
	}
	return tot
}

// rowsOf returns the rows of op, in order.
func rowsOf(rows []WindowRow, op string) []WindowRow {
	var out []WindowRow
	for _, r := range rows {
		if r.Op == op {
			out = append(out, r)
		}
	}
	return out
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		want string // substring of the error; "" = valid
	}{
		{"valid", func(*Config) {}, ""},
		{"zero window means default", func(c *Config) { c.Window = 0 }, ""},
		{"ycsb op names", func(c *Config) { c.Ops = []string{"READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE", "DELETE"} }, ""},
		{"no dir", func(c *Config) { c.Dir = "" }, "Dir:"},
		{"no ops", func(c *Config) { c.Ops = nil }, "Ops:"},
		{"empty op", func(c *Config) { c.Ops = []string{"READ", ""} }, "Ops[1]: empty"},
		{"op named all", func(c *Config) { c.Ops = []string{"all"} }, "reserved"},
		{"op with comma", func(c *Config) { c.Ops = []string{"A,B"} }, "not allowed"},
		{"op with slash", func(c *Config) { c.Ops = []string{"a/b"} }, "not allowed"},
		{"duplicate op ignoring case", func(c *Config) { c.Ops = []string{"READ", "read"} }, "clashes"},
		{"op clashing with service log", func(c *Config) { c.Ops = []string{"READ", "READ-SERVICE"} }, "clashes"},
		{"window too short", func(c *Config) { c.Window = 5 * time.Millisecond }, "Window:"},
		{"window too long", func(c *Config) { c.Window = 2 * time.Hour }, "Window:"},
		{"window not whole µs", func(c *Config) { c.Window = 10*time.Millisecond + 1 }, "microseconds"},
		{"no start", func(c *Config) { c.Start = time.Time{} }, "Start:"},
		{"negative warmup", func(c *Config) { c.Warmup = -time.Second }, "Warmup:"},
		{"no workers", func(c *Config) { c.Workers = 0 }, "Workers:"},
		{"more clients than workers", func(c *Config) { c.Clients = 3 }, "Clients:"},
		{"negative clients", func(c *Config) { c.Clients = -1 }, "Clients:"},
		{"clients equal workers", func(c *Config) { c.Clients = 2 }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			tt.mod(&cfg)
			err := cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want != "" && err == nil:
				t.Fatalf("Validate() = nil, want error containing %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.want)
			}
		})
	}
}

func TestLatencyFromIntended(t *testing.T) {
	tests := []struct {
		name           string
		sample         Sample
		minMax, maxMax float64 // bounds of the ALL row's MaxUs
		svcP99         float64 // approximate service p99
	}{
		{"intended 2s before end, service 1ms", ok(0, 50, 2000, 1), 2_000_000, 2_002_000, 1000},
		{"on schedule", ok(0, 50, 3, 3), 3000, 3003, 3000},
		{"closed loop: zero intended means started", func() Sample { s := ok(0, 50, 0, 7); s.Intended = time.Time{}; return s }(), 7000, 7007, 7000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCollector(t, nil)
			c.Recorder(0).Record(tt.sample)
			tot := finish(t, c, 100)
			all := rowsOf(readBack(t, c), AllOps)
			if len(all) != 1 {
				t.Fatalf("got %d ALL rows, want 1", len(all))
			}
			r := all[0]
			if r.MaxUs < tt.minMax || r.MaxUs > tt.maxMax || r.P99Us < tt.minMax {
				t.Errorf("max %v µs, p99 %v µs; want max in [%v, %v] and p99 >= %v", r.MaxUs, r.P99Us, tt.minMax, tt.maxMax, tt.minMax)
			}
			if r.SvcP99Us < tt.svcP99 || r.SvcP99Us > tt.svcP99*1.001+1 {
				t.Errorf("service p99 %v µs, want ≈ %v", r.SvcP99Us, tt.svcP99)
			}
			if got := tot.All.Intended.Max(); float64(got) < tt.minMax {
				t.Errorf("totals intended max %d µs, want >= %v", got, tt.minMax)
			}
			if got := tot.Ops[0].Service.Max(); float64(got) > tt.svcP99*1.001+1 {
				t.Errorf("totals service max %d µs, want ≈ %v", got, tt.svcP99)
			}
		})
	}
}

func TestWarmupExclusion(t *testing.T) {
	tests := []struct {
		name       string
		warmup     time.Duration
		wantWarmup int // warm-up windows among the 10
	}{
		{"no warm-up", 0, 0},
		{"two windows", 200 * time.Millisecond, 2},
		{"window straddling the end of warm-up is warm-up", 250 * time.Millisecond, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCollector(t, func(cfg *Config) { cfg.Warmup = tt.warmup })
			for w := range 10 {
				for worker := range 2 {
					c.Recorder(worker).Record(ok(0, float64(w*100+10), 1, 1))
					c.Recorder(worker).Record(failed(1, outcome.Timeout, float64(w*100+20)))
				}
			}
			tot := finish(t, c, 1000)
			all := rowsOf(readBack(t, c), AllOps)
			if len(all) != 10 {
				t.Fatalf("%d ALL rows, want 10", len(all))
			}
			for i, r := range all {
				want := PhaseRun
				if i < tt.wantWarmup {
					want = PhaseWarmup
				}
				if r.Phase != want {
					t.Errorf("window %d phase %q, want %q", i, r.Phase, want)
				}
				if r.OK != 2 {
					t.Errorf("window %d ok %d, want 2 (warm-up windows are written too)", i, r.OK)
				}
			}
			runWindows := int64(10 - tt.wantWarmup)
			if tot.All.OK != 2*runWindows || tot.Ops[0].OK != 2*runWindows || tot.Ops[1].Errors[outcome.Timeout] != 2*runWindows {
				t.Errorf("totals ok %d/%d, timeouts %d; want %d each", tot.All.OK, tot.Ops[0].OK, tot.Ops[1].Errors[outcome.Timeout], 2*runWindows)
			}
			if got := tot.All.Intended.TotalCount(); got != 2*runWindows {
				t.Errorf("totals histogram count %d, want %d", got, 2*runWindows)
			}
			if want := time.Duration(runWindows) * 100 * time.Millisecond; tot.Duration != want {
				t.Errorf("Duration %v, want %v", tot.Duration, want)
			}
			clients := readCSV(t, filepath.Join(c.cfg.Dir, ClientsFile))
			for _, rec := range clients {
				if rec["ok"] != strconv.FormatInt(runWindows, 10) || rec["errors"] != strconv.FormatInt(runWindows, 10) {
					t.Errorf("client %s: ok %s errors %s, want %d each", rec["client"], rec["ok"], rec["errors"], runWindows)
				}
			}
		})
	}
}

func TestEmptyWindowsWrittenAsZeroRows(t *testing.T) {
	c := newCollector(t, nil)
	r := c.Recorder(0)
	r.Record(ok(0, 50, 1, 1))  // window 0: READ
	r.Record(ok(1, 550, 1, 1)) // window 5: UPDATE first used
	c.flushUntil(at(300))      // windows 0..2 closed by the flusher
	tot := finish(t, c, 700)   // 3..6 by Close
	rows := readBack(t, c)

	want := []struct {
		index int
		ops   string
		ok    int64
	}{
		{0, "READ,ALL", 1}, {1, "READ,ALL", 0}, {2, "READ,ALL", 0}, {3, "READ,ALL", 0},
		{4, "READ,ALL", 0}, {5, "READ,UPDATE,ALL", 1}, {6, "READ,UPDATE,ALL", 0},
	}
	for _, w := range want {
		t.Run("window "+strconv.Itoa(w.index), func(t *testing.T) {
			var ops []string
			for _, row := range rows {
				if row.Index != w.index {
					continue
				}
				ops = append(ops, row.Op)
				if row.Op == AllOps && row.OK != w.ok {
					t.Errorf("ALL ok %d, want %d", row.OK, w.ok)
				}
				if row.Op != AllOps && row.Start != time.Duration(w.index)*100*time.Millisecond {
					t.Errorf("start %v", row.Start)
				}
			}
			if got := strings.Join(ops, ","); got != w.ops {
				t.Errorf("rows %s, want %s", got, w.ops)
			}
		})
	}
	if tot.All.OK != 2 {
		t.Errorf("totals ok %d, want 2", tot.All.OK)
	}
}

func TestLateSamples(t *testing.T) {
	tests := []struct {
		name       string
		flushMs    float64 // flushUntil before recording
		endMs      float64 // sample's Ended
		wantWindow int
		wantLate   int64
	}{
		{"on time", 100, 150, 1, 0},
		{"window already closed goes to earliest open", 200, 50, 2, 1},
		{"several windows late", 500, 120, 5, 1},
		{"before start goes to window 0", 0, -30, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCollector(t, nil)
			c.flushUntil(at(tt.flushMs))
			c.Recorder(1).Record(ok(0, tt.endMs, 1, 1))
			tot := finish(t, c, 1000)
			for _, r := range rowsOf(readBack(t, c), AllOps) {
				want := int64(0)
				if r.Index == tt.wantWindow {
					want = 1
				}
				if r.OK != want {
					t.Errorf("window %d ok %d, want %d", r.Index, r.OK, want)
				}
			}
			if tot.Late != tt.wantLate {
				t.Errorf("Late %d, want %d", tot.Late, tt.wantLate)
			}
		})
	}
}

func TestErrorClassColumns(t *testing.T) {
	c := newCollector(t, nil)
	r := c.Recorder(0)
	counts := map[outcome.Class]int{outcome.OK: 1, outcome.Timeout: 2, outcome.Unavailable: 3, outcome.Conflict: 4, outcome.Rejected: 5, outcome.Other: 6}
	for cls, n := range counts {
		for range n {
			r.Record(failed(1, cls, 10))
		}
	}
	r.Record(failed(1, outcome.Class(200), 10)) // unknown class counts as other
	behind := ok(1, 20, 1, 1)
	behind.Behind = true
	r.Record(behind)
	counts[outcome.Other]++
	counts[outcome.OK]++
	tot := finish(t, c, 100)

	recs := readCSV(t, filepath.Join(c.cfg.Dir, WindowsFile))
	var upd map[string]string
	for _, rec := range recs {
		if rec["op"] == "UPDATE" {
			upd = rec
		}
	}
	if upd == nil {
		t.Fatal("no UPDATE row in windows.csv")
	}
	columns := map[outcome.Class]string{outcome.OK: "ok", outcome.Timeout: "err_timeout", outcome.Unavailable: "err_unavailable",
		outcome.Conflict: "err_conflict", outcome.Rejected: "err_rejected", outcome.Other: "err_other"}
	for cls, col := range columns {
		t.Run(cls.String(), func(t *testing.T) {
			want := strconv.Itoa(counts[cls])
			if upd[col] != want {
				t.Errorf("column %s = %s, want %s", col, upd[col], want)
			}
			got := tot.Ops[1].OK
			if cls != outcome.OK {
				got = tot.Ops[1].Errors[cls]
			}
			if got != int64(counts[cls]) {
				t.Errorf("totals %d, want %d", got, counts[cls])
			}
		})
	}
	if upd["behind"] != "1" {
		t.Errorf("behind = %s, want 1", upd["behind"])
	}
	if tot.Ops[1].Errors[outcome.OK] != 0 {
		t.Errorf("Errors[OK] = %d, want 0", tot.Ops[1].Errors[outcome.OK])
	}
}

func TestClamp(t *testing.T) {
	tests := []struct {
		name    string
		sample  Sample
		wantMax int64 // µs, histogram-equivalent lower bound
	}{
		{"latency over an hour", ok(0, 10, float64(2*time.Hour/time.Millisecond), 1), HighestUs},
		{"ended before intended", func() Sample { s := ok(0, 10, 1, 1); s.Intended = s.Ended.Add(time.Second); return s }(), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCollector(t, nil)
			c.Recorder(0).Record(tt.sample)
			tot := finish(t, c, 100)
			if tot.Clamped != 1 {
				t.Errorf("Clamped %d, want 1", tot.Clamped)
			}
			if tot.All.OK != 1 || tot.All.Intended.TotalCount() != 1 {
				t.Errorf("ok %d, histogram count %d; want 1, 1", tot.All.OK, tot.All.Intended.TotalCount())
			}
			if got := tot.All.Intended.Max(); got < tt.wantMax || (tt.wantMax == 0 && got != 0) {
				t.Errorf("max %d µs, want %d", got, tt.wantMax)
			}
		})
	}
}

func TestPartialLastWindow(t *testing.T) {
	tests := []struct {
		name      string
		endMs     float64
		wantLast  int
		wantEnd   time.Duration
		partial   bool
		wantTotal time.Duration
	}{
		{"mid-window", 345.5, 3, 345500 * time.Microsecond, true, 345500 * time.Microsecond},
		{"on a boundary", 400, 3, 400 * time.Millisecond, false, 400 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCollector(t, nil)
			var rows []WindowRow
			c.OnWindow(func(r []WindowRow) { rows = append(rows, r...) })
			c.Recorder(0).Record(ok(0, 340, 1, 1))
			tot := finish(t, c, tt.endMs)
			last := rows[len(rows)-1]
			if last.Index != tt.wantLast || last.End != tt.wantEnd || last.Partial != tt.partial {
				t.Fatalf("last row index %d end %v partial %v, want %d %v %v", last.Index, last.End, last.Partial, tt.wantLast, tt.wantEnd, tt.partial)
			}
			if tot.Duration != tt.wantTotal {
				t.Errorf("Duration %v, want %v", tot.Duration, tt.wantTotal)
			}
			back, err := ReadWindows(filepath.Join(c.cfg.Dir, WindowsFile))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, rows) {
				t.Errorf("ReadWindows differs from the rows written:\n%+v\n%+v", back[len(back)-1], last)
			}
		})
	}
}

func TestReadWindowsRoundTrip(t *testing.T) {
	c := newCollector(t, func(cfg *Config) { cfg.Warmup = 200 * time.Millisecond; cfg.Ops = []string{"READ", "UPDATE", "SCAN"} })
	var want []WindowRow
	c.OnWindow(func(r []WindowRow) { want = append(want, r...) })
	for w := range 8 {
		for i := range 50 {
			end := float64(w*100) + float64(i)*1.9
			c.Recorder(i % 2).Record(ok(i%3, end, 0.1+float64(i*i%97)*0.37, 0.05+float64(i%13)*0.11))
			if i%7 == 0 {
				c.Recorder(i % 2).Record(failed(i%2, outcome.ErrorClasses()[i%5], end))
			}
		}
		c.flushUntil(at(float64(w*100 + 100)))
	}
	finish(t, c, 812.25)
	got, err := ReadWindows(filepath.Join(c.cfg.Dir, WindowsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows read, %d written", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if !want[len(want)-1].Partial {
		t.Error("last window not partial")
	}
}

// TestOKTimes: every window records when its first and last success
// completed (per op and for ALL), and reading a windows.csv of the format
// before those columns gives rows without them.
func TestOKTimes(t *testing.T) {
	c := newCollector(t, func(cfg *Config) { cfg.Ops = []string{"READ", "UPDATE"} })
	rec := c.Recorder(0)
	rec.Record(ok(0, 12.5, 1, 1))
	rec.Record(ok(1, 30, 1, 1))
	rec.Record(ok(0, 87.25, 1, 1))
	rec.Record(failed(0, outcome.Timeout, 95)) // a failure does not count
	c.Recorder(1).Record(ok(1, 8, 1, 1))
	rec.Record(failed(0, outcome.Timeout, 150)) // window 1: failures only
	finish(t, c, 200)
	rows := readBack(t, c)
	type want struct {
		ok          int64
		first, last time.Duration
	}
	wants := map[string]want{
		"0/READ":   {2, 12500 * time.Microsecond, 87250 * time.Microsecond},
		"0/UPDATE": {2, 8 * time.Millisecond, 30 * time.Millisecond},
		"0/ALL":    {4, 8 * time.Millisecond, 87250 * time.Microsecond},
		"1/READ":   {0, 0, 0},
		"1/ALL":    {0, 0, 0},
	}
	for _, r := range rows {
		key := fmt.Sprintf("%d/%s", r.Index, r.Op)
		w, found := wants[key]
		if !found {
			continue
		}
		delete(wants, key)
		if !r.OKTimes || r.OK != w.ok || r.FirstOK != w.first || r.LastOK != w.last {
			t.Errorf("%s: ok %d first %v last %v (OKTimes %v), want %d %v %v", key, r.OK, r.FirstOK, r.LastOK, r.OKTimes, w.ok, w.first, w.last)
		}
	}
	if len(wants) != 0 {
		t.Errorf("rows missing: %v", wants)
	}

	t.Run("old format", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "windows.csv")
		old := windowsHeaderV1 + "\n0,100,run,ALL,3,0,0,0,0,0,0,1,1,1,1,1,1,1,1,1\n"
		if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadWindows(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].OK != 3 || got[0].OKTimes {
			t.Errorf("old-format rows %+v, want one row with OK 3 and no success times", got)
		}
	})
	t.Run("before err_not_found", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "windows.csv")
		old := windowsHeaderV3 + "\n0,100,run,ALL,3,1,2,3,4,5,6,1,1,1,1,1,1,1,1,1,10,90,7,8,9,10\n"
		if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadWindows(path)
		if err != nil {
			t.Fatal(err)
		}
		want := [outcome.NumClasses]int64{outcome.Timeout: 1, outcome.Unavailable: 2, outcome.Conflict: 3, outcome.Rejected: 4, outcome.Other: 5}
		if len(got) != 1 || got[0].Errors != want || got[0].Behind != 6 || got[0].LastOK != 90*time.Millisecond || got[0].WakeN != 7 || got[0].WakeMaxUs != 10 {
			t.Errorf("rows %+v, want errors %v, not found 0, behind 6, last_ok 90 ms, wake 7..10", got, want)
		}
	})
	t.Run("not found column", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "windows.csv")
		row := WindowRow{Start: 0, End: 100 * time.Millisecond, Phase: PhaseRun, Op: AllOps, OK: 2, OKTimes: true,
			FirstOK: 10 * time.Millisecond, LastOK: 20 * time.Millisecond}
		row.Errors[outcome.Other] = 1
		row.Errors[outcome.NotFound] = 4
		if err := os.WriteFile(path, appendRow([]byte(WindowsHeader+"\n"), &row), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadWindows(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Errors != row.Errors || got[0].ErrorCount() != 5 || got[0].FailureCount() != 1 {
			t.Errorf("rows %+v, want errors %v (5 errors, 1 failure)", got, row.Errors)
		}
	})
}

// TestWakeLagColumns: samples whose worker waited for their intended start
// give the ALL row's wake-up lag columns, which read back; others do not
// count.
func TestWakeLagColumns(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	c, err := NewCollector(Config{Dir: dir, Ops: []string{"READ"}, Window: time.Second, Start: start, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	rec := c.Recorder(0)
	for i, lag := range []time.Duration{10 * time.Microsecond, 20 * time.Microsecond, 40 * time.Microsecond, 5 * time.Millisecond} {
		at := start.Add(time.Duration(i+1) * 10 * time.Millisecond)
		rec.Record(Sample{Op: 0, Intended: at, Started: at.Add(lag), Ended: at.Add(lag + time.Millisecond), Woke: true})
	}
	// behind schedule: a late start that is backlog, not wake-up lag
	at := start.Add(100 * time.Millisecond)
	rec.Record(Sample{Op: 0, Intended: at, Started: at.Add(50 * time.Millisecond), Ended: at.Add(51 * time.Millisecond), Behind: true})
	tot, err := c.finish(start.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ReadWindows(filepath.Join(dir, WindowsFile))
	if err != nil {
		t.Fatal(err)
	}
	var all *WindowRow
	for i := range rows {
		if rows[i].Op == AllOps {
			all = &rows[i]
		}
	}
	if all == nil || all.WakeN != 4 || all.WakeP50Us < 19 || all.WakeP50Us > 21 || all.WakeMaxUs < 4990 || all.WakeMaxUs > 5010 {
		t.Errorf("ALL row wake columns %+v, want 4 samples, p50 20, max 5000", all)
	}
	if tot.All.Wake == nil || tot.All.Wake.TotalCount() != 4 {
		t.Errorf("totals wake histogram %v, want 4 samples", tot.All.Wake)
	}
}

// TestFailMaxColumn: the longest failed operation of a window (from its
// intended start) is in fail_max_us of its op and ALL rows, reads back, is
// empty without failures, and a not-found answer is no failure; files
// written before the column still read (FailMaxUs 0).
func TestFailMaxColumn(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	c, err := NewCollector(Config{Dir: dir, Ops: []string{"READ", "UPDATE"}, Window: time.Second, Start: start, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	rec := c.Recorder(0)
	at := start.Add(-2 * time.Second) // intended 2 s before the run: it waited that long
	rec.Record(Sample{Op: 1, Class: outcome.Timeout, Intended: at, Ended: start.Add(500 * time.Millisecond)})
	rec.Record(Sample{Op: 1, Class: outcome.Unavailable, Intended: start, Ended: start.Add(600 * time.Millisecond)})
	rec.Record(Sample{Op: 0, Class: outcome.NotFound, Intended: at, Ended: start.Add(700 * time.Millisecond)})
	rec.Record(Sample{Op: 0, Intended: start, Ended: start.Add(10 * time.Millisecond)})
	rec.Record(Sample{Op: 0, Intended: start.Add(time.Second), Ended: start.Add(1010 * time.Millisecond)})
	if _, err := c.finish(start.Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadWindows(filepath.Join(dir, WindowsFile))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range rows {
		got[fmt.Sprintf("%d %s", r.Index, r.Op)] = r.FailMaxUs
	}
	want := map[string]float64{"0 ALL": 2.5e6, "0 UPDATE": 2.5e6, "0 READ": 0, "1 ALL": 0, "1 READ": 0}
	for k, w := range want {
		if g, ok := got[k]; !ok || math.Abs(g-w) > w/100 {
			t.Errorf("fail_max_us of %s = %v (present %v), want %v", k, g, ok, w)
		}
	}
	t.Run("before fail_max_us", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "windows.csv")
		old := windowsHeaderV4 + "\n0,100,run,ALL,3,1,0,0,0,0,0,0,1,1,1,1,1,1,1,1,1,10,90,,,,\n"
		if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		rows, err := ReadWindows(path)
		if err != nil || len(rows) != 1 || rows[0].FailMaxUs != 0 || rows[0].Errors[outcome.Timeout] != 1 {
			t.Errorf("old rows %+v, %v", rows, err)
		}
	})
}

func TestReadWindowsErrors(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"empty", "", "no header"},
		{"wrong header", "a,b\n", "header"},
		{"short row", WindowsHeader + "\n0,100,run,ALL\n", "line 2"},
		{"bad number", WindowsHeader + "\n0,100,run,ALL,x,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,,,,,,,\n", "column 5"},
		{"bad phase", WindowsHeader + "\n0,100,later,ALL,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1,2,,,,,\n", "phase"},
		{"successes without times", WindowsHeader + "\n0,100,run,ALL,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,,,,,,,\n", "column 22"},
		{"last before first", WindowsHeader + "\n0,100,run,ALL,2,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,50,40,,,,,\n", "last_ok_ms before first_ok_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "windows.csv")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadWindows(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadWindows = %v, want error containing %q", err, tt.want)
			}
		})
	}
}

func TestHlogMatchesWindows(t *testing.T) {
	c := newCollector(t, nil)
	for w := range 5 {
		if w == 2 {
			continue // an empty window
		}
		for i := range 10 * (w + 1) {
			op := 0
			if w >= 3 && i%2 == 1 {
				op = 1 // UPDATE first used in window 3
			}
			c.Recorder(i % 2).Record(ok(op, float64(w*100+i), float64(i+1), 0.5))
		}
	}
	tot := finish(t, c, 500)
	rows := readBack(t, c)
	files := []struct{ file, op string }{
		{"read.hlog", "READ"}, {"read-service.hlog", "READ"}, {"update.hlog", "UPDATE"},
		{"update-service.hlog", "UPDATE"}, {"all.hlog", AllOps}, {"all-service.hlog", AllOps},
	}
	for _, f := range files {
		t.Run(f.file, func(t *testing.T) {
			path := filepath.Join(c.cfg.Dir, HistDir, f.file)
			hists := readHlog(t, path)
			want := rowsOf(rows, f.op)
			if len(hists) != len(want) {
				t.Fatalf("%d intervals, %d rows", len(hists), len(want))
			}
			for i, h := range hists {
				if h.TotalCount() != want[i].OK {
					t.Errorf("interval %d: count %d, windows.csv ok %d", i, h.TotalCount(), want[i].OK)
				}
				startMs := t0().Add(want[i].Start).UnixMilli()
				if d := h.StartTimeMs() - startMs; d < -1 || d > 1 {
					t.Errorf("interval %d: start %d ms, want %d", i, h.StartTimeMs(), startMs)
				}
				if d := h.EndTimeMs() - h.StartTimeMs() - want[i].End.Milliseconds() + want[i].Start.Milliseconds(); d < -1 || d > 1 {
					t.Errorf("interval %d: length %d ms, want %v", i, h.EndTimeMs()-h.StartTimeMs(), want[i].End-want[i].Start)
				}
				if !strings.Contains(f.file, "service") && h.TotalCount() > 0 && float64(h.Max()) != want[i].MaxUs {
					t.Errorf("interval %d: max %d µs, windows.csv %v", i, h.Max(), want[i].MaxUs)
				}
			}
			head, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range []string{"#[Histogram log format version 1.3]", "#[StartTime: 1709294400.123 (seconds since epoch), 2024-03-01T12:00:00.123Z]", "#[BaseTime: 1709294400.123 (seconds since epoch)]", `"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"`} {
				if !strings.Contains(string(head), line+"\n") {
					t.Errorf("header line %q missing", line)
				}
			}
		})
	}
	if tot.All.OK != 10+20+40+50 {
		t.Errorf("totals ok %d", tot.All.OK)
	}
}

func readHlog(t *testing.T, path string) []*hdrhistogram.Histogram {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := hdrhistogram.NewHistogramLogReader(bufio.NewReader(f))
	var out []*hdrhistogram.Histogram
	for {
		h, err := rd.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			return out
		}
		out = append(out, h)
	}
}

// readCSV returns a CSV file's rows as column→value maps.
func readCSV(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := csv.NewReader(f)
	head, err := rd.Read()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for {
		rec, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for i, h := range head {
			m[h] = rec[i]
		}
		out = append(out, m)
	}
}

func TestClientsCSV(t *testing.T) {
	c := newCollector(t, func(cfg *Config) { cfg.Workers = 3 })
	// worker 0: 10 fast reads; worker 1: 4 slow updates and 2 errors; worker 2: idle.
	for i := range 10 {
		c.Recorder(0).Record(ok(0, float64(i*10), 1, 1))
	}
	for i := range 4 {
		c.Recorder(1).Record(ok(1, float64(i*10+500), 100, 1))
	}
	c.Recorder(1).Record(failed(1, outcome.Unavailable, 600))
	c.Recorder(1).Record(failed(0, outcome.Timeout, 700))
	finish(t, c, 1000)
	head, err := os.ReadFile(filepath.Join(c.cfg.Dir, ClientsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(head), ClientsHeader+"\n") {
		t.Fatalf("clients.csv header: %q", strings.SplitN(string(head), "\n", 2)[0])
	}
	recs := readCSV(t, filepath.Join(c.cfg.Dir, ClientsFile))
	want := []map[string]string{
		{"client": "0", "ok": "10", "errors": "0", "mean_us": "1000", "p50_us": "1000", "p95_us": "1000", "p99_us": "1000", "max_us": "1000", "throughput_ops": "10"},
		{"client": "1", "ok": "4", "errors": "2", "p99_us": "100031", "throughput_ops": "4"},
		{"client": "2", "ok": "0", "errors": "0", "mean_us": "0", "max_us": "0", "throughput_ops": "0"},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d client rows, want %d", len(recs), len(want))
	}
	for i, w := range want {
		t.Run("client "+w["client"], func(t *testing.T) {
			for col, v := range w {
				if recs[i][col] != v {
					t.Errorf("%s = %s, want %s", col, recs[i][col], v)
				}
			}
		})
	}
}

func TestClientOf(t *testing.T) {
	tests := []struct {
		name             string
		workers, clients int
		want             []int
	}{
		{"one client per worker by default", 3, 0, []int{0, 1, 2}},
		{"as many clients as workers", 3, 3, []int{0, 1, 2}},
		{"even split", 4, 2, []int{0, 0, 1, 1}},
		{"uneven split: sizes differ by one", 5, 2, []int{0, 0, 0, 1, 1}},
		{"one client", 3, 1, []int{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int
			for i := range tt.workers {
				got = append(got, ClientOf(i, tt.workers, tt.clients))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ClientOf over %d workers, %d clients = %v, want %v", tt.workers, tt.clients, got, tt.want)
			}
		})
	}
}

// TestClientGroups checks that the workers of one client group are summed
// into one clients.csv row and one Totals.Clients entry, per operation too.
func TestClientGroups(t *testing.T) {
	c := newCollector(t, func(cfg *Config) { cfg.Workers, cfg.Clients = 4, 2 })
	// client 0 = workers 0, 1: 3 + 2 reads at 1 ms; client 1 = workers 2, 3: 4 updates at 100 ms, 1 error
	for i := range 3 {
		c.Recorder(0).Record(ok(0, float64(i*10), 1, 1))
	}
	for i := range 2 {
		c.Recorder(1).Record(ok(0, float64(i*10+5), 1, 1))
	}
	for i := range 4 {
		c.Recorder(2 + i%2).Record(ok(1, float64(i*10+500), 100, 1))
	}
	c.Recorder(3).Record(failed(1, outcome.Timeout, 700))
	tot := finish(t, c, 1000)
	recs := readCSV(t, filepath.Join(c.cfg.Dir, ClientsFile))
	if len(recs) != 2 {
		t.Fatalf("%d client rows, want 2", len(recs))
	}
	if recs[0]["ok"] != "5" || recs[1]["ok"] != "4" || recs[1]["errors"] != "1" {
		t.Errorf("clients.csv rows %v", recs)
	}
	if len(tot.Clients) != 2 {
		t.Fatalf("%d Totals.Clients, want 2", len(tot.Clients))
	}
	tests := []struct {
		name                     string
		client                   int
		workers                  int
		ok, errs, readN, updateN int64
	}{
		{"client 0", 0, 2, 5, 0, 5, 0},
		{"client 1", 1, 2, 4, 1, 0, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct := tot.Clients[tt.client]
			if ct.Workers != tt.workers || ct.OK != tt.ok || ct.Errors != tt.errs {
				t.Errorf("workers/ok/errors = %d/%d/%d, want %d/%d/%d", ct.Workers, ct.OK, ct.Errors, tt.workers, tt.ok, tt.errs)
			}
			if n := ct.Ops[0].TotalCount(); n != tt.readN {
				t.Errorf("READ histogram holds %d, want %d", n, tt.readN)
			}
			if n := ct.Ops[1].TotalCount(); n != tt.updateN {
				t.Errorf("UPDATE histogram holds %d, want %d", n, tt.updateN)
			}
			if n := ct.All.TotalCount(); n != tt.ok {
				t.Errorf("all-ops histogram holds %d, want %d", n, tt.ok)
			}
		})
	}
}

func TestLiveAndOnWindow(t *testing.T) {
	c := newCollector(t, nil)
	var calls [][]WindowRow
	c.OnWindow(func(rows []WindowRow) { calls = append(calls, rows) })
	for i := range 20 {
		c.Recorder(0).Record(ok(0, float64(i*10), 2, 1))
	}
	c.Recorder(1).Record(failed(1, outcome.Conflict, 150))
	c.flushUntil(at(199))
	l := c.Live()
	if l.Windows != 1 || l.OK != 10 || l.Errors != 0 || l.LastOpsPerSec != 100 {
		t.Errorf("after window 0: %+v", l)
	}
	c.flushUntil(at(200))
	l = c.Live()
	if l.Windows != 2 || l.OK != 20 || l.Errors != 1 || l.LastP99Us < 2000 || l.LastP99Us > 2002 {
		t.Errorf("after window 1: %+v", l)
	}
	finish(t, c, 200)
	if len(calls) != 2 {
		t.Fatalf("%d OnWindow calls, want 2", len(calls))
	}
	if ops := []string{calls[1][0].Op, calls[1][1].Op, calls[1][2].Op}; !reflect.DeepEqual(ops, []string{"READ", "UPDATE", AllOps}) || len(calls[1]) != 3 {
		t.Errorf("window 1 rows %v", ops)
	}
}

func TestCloseTwice(t *testing.T) {
	c := newCollector(t, nil)
	finish(t, c, 100)
	if _, err := c.Close(); err == nil {
		t.Fatal("second Close succeeded")
	}
}

// TestConcurrentRecordAndFlush records from many goroutines while another
// closes windows; every sample must be counted exactly once.
func TestConcurrentRecordAndFlush(t *testing.T) {
	const workers, perWorker, windows = 8, 2000, 40
	c := newCollector(t, func(cfg *Config) { cfg.Workers = workers })
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := c.Recorder(w)
			for i := range perWorker {
				end := float64(i) * windows * 100 / perWorker
				if i%10 == 9 {
					r.Record(failed(i%2, outcome.Timeout, end))
				} else {
					r.Record(ok(i%2, end, 1+float64(i%50), 0.5))
				}
			}
		})
	}
	wg.Go(func() {
		for w := range windows {
			c.flushUntil(at(float64(w * 100)))
		}
	})
	wg.Wait()
	tot := finish(t, c, windows*100)
	var okSum, errSum int64
	for _, r := range rowsOf(readBack(t, c), AllOps) {
		okSum += r.OK
		errSum += r.ErrorCount()
	}
	if want := int64(workers * perWorker * 9 / 10); okSum != want || tot.All.OK != want || tot.All.Intended.TotalCount() != want {
		t.Errorf("ok: rows %d, totals %d, histogram %d; want %d", okSum, tot.All.OK, tot.All.Intended.TotalCount(), want)
	}
	if want := int64(workers * perWorker / 10); errSum != want {
		t.Errorf("errors %d, want %d", errSum, want)
	}
	if all := rowsOf(readBack(t, c), AllOps); len(all) != windows {
		t.Errorf("%d windows, want %d", len(all), windows)
	}
}

// TestRunWithClock runs the real flusher; it asserts only counts and the
// shape of the rows, never timings.
func TestRunWithClock(t *testing.T) {
	c := newCollector(t, func(cfg *Config) { cfg.Window = 10 * time.Millisecond; cfg.Start = time.Now() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	var wg sync.WaitGroup
	const n = 300
	for w := range 2 {
		wg.Go(func() {
			r := c.Recorder(w)
			for range n {
				start := time.Now()
				time.Sleep(100 * time.Microsecond)
				r.Record(Sample{Op: w, Class: outcome.OK, Intended: start, Started: start, Ended: time.Now()})
			}
		})
	}
	wg.Wait()
	cancel()
	<-done
	tot, err := c.Close()
	if err != nil {
		t.Fatal(err)
	}
	if tot.All.OK != 2*n {
		t.Errorf("totals ok %d, want %d", tot.All.OK, 2*n)
	}
	all := rowsOf(readBack(t, c), AllOps)
	var sum int64
	for i, r := range all {
		if r.Index != i {
			t.Fatalf("ALL row %d has index %d", i, r.Index)
		}
		sum += r.OK
	}
	if sum != 2*n {
		t.Errorf("rows ok %d, want %d", sum, 2*n)
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	c := newCollector(t, func(cfg *Config) { cfg.Workers = 1 })
	r := c.Recorder(0)
	lat := func(i int) float64 { return 0.2 + float64(i%64)*0.05 }
	// A few windows so that the recorder's slots and histograms exist.
	for w := range 4 {
		for i := range 64 {
			r.Record(ok(i%2, float64(w*100+i), lat(i), lat(i)/2))
		}
		c.flushUntil(at(float64(w*100 + 100)))
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		r.Record(ok(i%2, 450, lat(i), lat(i)/2))
		i++
	})
	if allocs != 0 {
		t.Errorf("Record allocates %.2f times per call, want 0", allocs)
	}
}

// TestManyWindows simulates a 10-minute run with 100 ms windows, 32
// workers and 2 ops using synthetic timestamps: every window must be
// written and the recorders' memory must not grow with the run.
func TestManyWindows(t *testing.T) {
	const workers = 32
	windows := 6000
	if raceEnabled || testing.Short() {
		windows = 300 // same logic, fewer windows: hlog encoding dominates
	}
	c := newCollector(t, func(cfg *Config) { cfg.Workers = workers; cfg.Warmup = 10 * time.Second })
	for w := range windows {
		if w%100 != 99 { // some empty windows
			for worker := range workers {
				r := c.Recorder(worker)
				base := float64(w * 100)
				r.Record(ok(0, base+float64(worker), 0.3+float64(worker)*0.01, 0.2))
				r.Record(ok(1, base+50+float64(worker), 1+float64(w%7), 0.8))
			}
		}
		c.flushUntil(at(float64(w*100 + 100)))
	}
	tot := finish(t, c, float64(windows*100))
	rows := readBack(t, c)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("%d windows: heap in use after GC %.1f MiB (rows %d)", windows, float64(ms.HeapInuse)/(1<<20), len(rows))
	if len(rows) != windows*3 {
		t.Fatalf("%d rows, want %d", len(rows), windows*3)
	}
	for i, r := range rowsOf(rows, AllOps) {
		if r.Index != i {
			t.Fatalf("ALL row %d has index %d", i, r.Index)
		}
	}
	for i, r := range c.recs {
		if n := r.slots(); n > 3 {
			t.Errorf("recorder %d holds %d slots, want <= 3", i, n)
		}
	}
	if len(c.pool) > workers+1 {
		t.Errorf("pool holds %d slots", len(c.pool))
	}
	runWindows := int64(windows - 100)     // 10 s warm-up
	runWindows -= int64(windows-100) / 100 // empty windows after warm-up
	if want := runWindows * workers * 2; tot.All.OK != want {
		t.Errorf("totals ok %d, want %d", tot.All.OK, want)
	}
	if got, want := tot.Duration, time.Duration(windows-100)*100*time.Millisecond; got != want {
		t.Errorf("Duration %v, want %v", got, want)
	}
}

func TestRecordBadOpPanics(t *testing.T) {
	tests := []struct {
		name string
		op   int
	}{{"negative", -1}, {"past the end", 2}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCollector(t, nil)
			defer finish(t, c, 100)
			defer func() {
				if recover() == nil {
					t.Error("Record did not panic")
				}
			}()
			c.Recorder(0).Record(ok(tt.op, 10, 1, 1))
		})
	}
}

// TestRecordPart: parts of other operations go into Totals.Parts only, and
// only after warm-up; windows, ALL, Ops and clients.csv count the
// operations themselves.
func TestRecordPart(t *testing.T) {
	c := newCollector(t, func(cfg *Config) { cfg.Warmup = 200 * time.Millisecond })
	r := c.Recorder(0)
	r.RecordPart(ok(0, 150, 2, 1))                 // warm-up: not counted
	r.RecordPart(ok(0, 250, 2, 1))                 // READ part
	r.RecordPart(ok(1, 260, 5, 3))                 // UPDATE part
	r.RecordPart(failed(1, outcome.Timeout, 270))  // failed UPDATE part
	r.RecordPart(failed(0, outcome.NotFound, 280)) // not-found READ part
	r.Record(ok(0, 260, 5, 5))                     // the operation itself
	tot := finish(t, c, 400)
	rd, up := tot.Parts[0], tot.Parts[1]
	if rd.Name != "READ" || rd.OK != 1 || rd.Errors[outcome.NotFound] != 1 || up.OK != 1 || up.Errors[outcome.Timeout] != 1 {
		t.Errorf("parts READ %+v UPDATE %+v, want 1 ok + 1 not found, 1 ok + 1 timeout", rd, up)
	}
	if !up.Intended.ValuesAreEquivalent(up.Intended.Max(), 5000) || !up.Service.ValuesAreEquivalent(up.Service.Max(), 3000) {
		t.Errorf("UPDATE part latency max %d, service max %d, want 5000, 3000 µs", up.Intended.Max(), up.Service.Max())
	}
	if tot.All.OK != 1 || tot.All.Errors != ([outcome.NumClasses]int64{}) || tot.Ops[1].OK != 0 {
		t.Errorf("ALL ok %d errors %v, UPDATE ok %d: want only the recorded operation", tot.All.OK, tot.All.Errors, tot.Ops[1].OK)
	}
	for _, row := range readBack(t, c) {
		if row.Op == "UPDATE" && row.OK+row.ErrorCount() > 0 {
			t.Errorf("a part reached windows.csv: %+v", row)
		}
	}
}
