package report

import (
	"bytes"
	"context"
	"flag"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// The run directories under testdata/runs are real runs made with
// `faultbench scenario` (two etcd failover scenarios: kill -9 and restart
// of the leader then SIGSTOP/SIGCONT of a follower; SIGSTOP/SIGCONT of the
// leader) and `faultbench run` (YCSB workload B, no faults), trimmed to the
// files a report reads (hist/ and cluster/ left out).
const (
	runKillPause   = "testdata/runs/20261122T025454Z-etcd-kill-pause"
	runPauseLeader = "testdata/runs/20261122T025537Z-etcd-pause-leader"
	runYCSB        = "testdata/runs/20261122T025622Z-ycsb-b"
)

// copyRun copies a run directory into a temp dir (reports are written into
// the run directory) and returns the copy's path.
func copyRun(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name, dir    string
		title        string
		ops          []string
		window       time.Duration
		warmup       time.Duration
		faults       int
		lostWrites   bool
		clients      int
		scenarioFile bool
	}{
		{"kill and pause", runKillPause, "etcd-kill-pause", []string{"READ", "UPDATE"}, 100 * time.Millisecond, 3 * time.Second, 2, true, 8, true},
		{"pause leader", runPauseLeader, "etcd-pause-leader", []string{"READ", "UPDATE"}, 100 * time.Millisecond, 3 * time.Second, 1, true, 8, true},
		{"ycsb run", runYCSB, "run etcd", []string{"READ", "UPDATE"}, time.Second, 2 * time.Second, 0, false, 4, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Load(context.Background(), tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			if r.Title() != tc.title {
				t.Errorf("title %q, want %q", r.Title(), tc.title)
			}
			if strings.Join(r.Ops, ",") != strings.Join(tc.ops, ",") {
				t.Errorf("ops %v, want %v", r.Ops, tc.ops)
			}
			if r.Window != tc.window || r.Warmup != tc.warmup {
				t.Errorf("window %v warm-up %v, want %v %v", r.Window, r.Warmup, tc.window, tc.warmup)
			}
			if got := len(r.RunFaults()); got != tc.faults {
				t.Errorf("%d faults, want %d", got, tc.faults)
			}
			if r.Analysis == nil {
				t.Error("no analysis")
			}
			if got := r.Summary != nil && r.Summary.LostWrites != nil; got != tc.lostWrites {
				t.Errorf("lost-write result present %v, want %v", got, tc.lostWrites)
			}
			if len(r.Clients) != tc.clients {
				t.Errorf("%d clients, want %d", len(r.Clients), tc.clients)
			}
			if (r.Scenario != "") != tc.scenarioFile || (r.Properties == "") {
				t.Errorf("scenario %t properties %t", r.Scenario != "", r.Properties != "")
			}
			for _, e := range r.RunEvents() {
				if e.Since() < 0 || e.Since() > r.End || e.Wall.Before(r.Start0()) {
					t.Errorf("event outside the run: %+v", e)
				}
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	empty := t.TempDir()
	header := t.TempDir()
	if err := os.WriteFile(filepath.Join(header, "windows.csv"), []byte("start_ms,end_ms,phase,op,ok,err_timeout,err_unavailable,err_conflict,err_rejected,err_other,behind,mean_us,p50_us,p90_us,p95_us,p99_us,p999_us,max_us,svc_mean_us,svc_p99_us\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, dir, want string }{
		{"missing directory", filepath.Join(empty, "nope"), "run directory"},
		{"no windows.csv", empty, "not a readable run directory"},
		{"no windows", header, "no windows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(context.Background(), tc.dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// TestLoadPartialRun: a run killed halfway (no summary.json, clients.csv,
// env.json; a torn last event line) still gets a report, with the
// analysis computed from the windows and events.
func TestLoadPartialRun(t *testing.T) {
	dir := copyRun(t, runKillPause)
	for _, f := range []string{"summary.json", "clients.csv", "env.json"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(ev, `{"t_ns":1,"wall":"2026-11`)
	ev.Close()
	r, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Analysis == nil || len(r.RunFaults()) != 2 {
		t.Fatalf("analysis %v, faults %d: want an analysis with 2 faults", r.Analysis != nil, len(r.RunFaults()))
	}
	joined := strings.Join(r.Notes, "\n")
	for _, want := range []string{"summary.json is missing", "clients.csv is missing", "env.json is missing", "events.jsonl"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes lack %q:\n%s", want, joined)
		}
	}
	out, err := render(context.Background(), r, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out.HTML); err != nil {
		t.Error(err)
	}
}

// TestRender renders every test run and checks the files: report.html is
// self-contained (no external resource) and carries one fault span per
// fault in every full-run chart; every PNG decodes and is not blank. The
// PNGs of one run are enough (they are slow under the race detector).
func TestRender(t *testing.T) {
	tests := []struct {
		src  string
		pngs bool
	}{{runKillPause, true}, {runPauseLeader, false}, {runYCSB, false}}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.src), func(t *testing.T) {
			dir := copyRun(t, tc.src)
			r, err := Load(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			out, err := render(context.Background(), r, tc.pngs)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(out.HTML)
			if err != nil {
				t.Fatal(err)
			}
			html := string(b)
			for _, bad := range []string{"http://", "https://", "<link", "<script src", "@import", "url("} {
				for _, line := range strings.Split(html, "\n") {
					// the SVG namespace is an identifier, not a fetch
					if strings.Contains(line, bad) && !strings.Contains(line, `xmlns="http://www.w3.org/2000/svg"`) {
						t.Errorf("report.html refers to an external resource (%q): %.200s", bad, line)
						break
					}
				}
			}
			nf := len(r.RunFaults())
			for id, svg := range chartsOf(html) {
				got := strings.Count(svg, `class="fault-span"`)
				if strings.HasPrefix(id, "fault-") {
					if got < 1 {
						t.Errorf("chart %s: no fault span", id)
					}
					continue
				}
				if got != nf {
					t.Errorf("chart %s: %d fault spans, want %d", id, got, nf)
				}
			}
			if !tc.pngs {
				return
			}
			for _, p := range out.Plots {
				if n := distinctColours(t, p); n < 20 {
					t.Errorf("%s: %d distinct colours: blank?", p, n)
				}
			}
			if len(out.Plots) != 4+len(r.Ops)+nf {
				t.Errorf("%d plots, want %d", len(out.Plots), 4+len(r.Ops)+nf)
			}
		})
	}
}

// chartsOf returns the inline SVG charts of a page by id.
func chartsOf(html string) map[string]string {
	out := map[string]string{}
	for {
		i := strings.Index(html, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="chart-`)
		if i < 0 {
			return out
		}
		html = html[i:]
		j := strings.Index(html, "</svg>")
		if j < 0 {
			return out
		}
		rest := html[len(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="chart-`):]
		id := rest[:strings.IndexByte(rest, '"')]
		out[id] = html[:j]
		html = html[j:]
	}
}

func distinctColours(t testing.TB, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	seen := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[(r>>8)<<16|(g>>8)<<8|bl>>8] = true
		}
	}
	return len(seen)
}

func TestDownsample(t *testing.T) {
	ident := func(v float64) float64 { return v }
	tests := []struct {
		name   string
		n      int
		width  float64
		gapAt  int // index of a NaN, -1 for none
		maxPts int
		segs   int
	}{
		{"fewer points than pixels", 50, 100, -1, 50, 1},
		{"many points per pixel", 100000, 100, -1, 4 * 101, 1},
		{"a gap splits the line", 1000, 100, 500, 4 * 102, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			xs, ys := make([]float64, tc.n), make([]float64, tc.n)
			lo, hi := math.Inf(1), math.Inf(-1)
			for i := range xs {
				xs[i] = float64(i) / float64(tc.n) * tc.width
				ys[i] = math.Sin(float64(i)*0.37) * float64(i%17)
				if i == tc.gapAt {
					ys[i] = math.NaN()
					continue
				}
				lo, hi = min(lo, ys[i]), max(hi, ys[i])
			}
			segs := downsample(xs, ys, 0, tc.width, ident, ident)
			if len(segs) != tc.segs {
				t.Fatalf("%d segments, want %d", len(segs), tc.segs)
			}
			pts := 0
			glo, ghi := math.Inf(1), math.Inf(-1)
			for _, s := range segs {
				pts += len(s) / 2
				for i := 1; i < len(s); i += 2 {
					glo, ghi = min(glo, s[i]), max(ghi, s[i])
				}
			}
			if pts > tc.maxPts {
				t.Errorf("%d points, want at most %d", pts, tc.maxPts)
			}
			// extremes are kept (to the drawing's 0.1 px rounding)
			if math.Abs(glo-lo) > 0.051 || math.Abs(ghi-hi) > 0.051 {
				t.Errorf("range %v..%v, want %v..%v", glo, ghi, lo, hi)
			}
		})
	}
}

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi float64
		n      int
		want   string
	}{
		{"seconds", 0, 39, 10, "0 5 10 15 20 25 30 35"},
		{"throughput", 0, 2496, 5, "0 500 1000 1500 2000"},
		{"negative start", -11, 28, 8, "-10 -5 0 5 10 15 20 25"},
		{"small", 0, 0.9, 4, "0 0.25 0.5 0.75"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s []string
			for _, v := range niceTicks(tc.lo, tc.hi, tc.n) {
				s = append(s, fnum(v, 6))
			}
			if got := strings.Join(s, " "); got != tc.want {
				t.Errorf("ticks %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCompareGolden checks compare's output in every format against
// testdata/compare.*; run `go test ./internal/report -run TestCompareGolden
// -update` to rewrite them after an intended change.
func TestCompareGolden(t *testing.T) {
	var runs []*Run
	for _, d := range []string{runKillPause, runPauseLeader, runYCSB} {
		r, err := Load(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	for _, f := range Formats() {
		t.Run(string(f), func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteCompare(&b, runs, CompareOptions{Format: f, LinkBase: "testdata"}); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "compare."+string(f))
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("output differs from %s (run with -update if intended):\n%s", golden, firstDiff(b.String(), string(want)))
			}
		})
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "line " + strings.TrimSpace(fnum(float64(i+1), 0)) + ":\n got: " + trunc(a) + "\nwant: " + trunc(b)
		}
	}
	return ""
}

func trunc(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

func TestParseFormat(t *testing.T) {
	tests := []struct {
		in   string
		want Format
		err  bool
	}{
		{"text", FormatText, false}, {"md", FormatMarkdown, false}, {"markdown", FormatMarkdown, false},
		{"CSV", FormatCSV, false}, {"html", FormatHTML, false}, {"pdf", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseFormat(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("ParseFormat(%q) = %q, %v", tc.in, got, err)
			}
		})
	}
}

func TestFinish(t *testing.T) {
	tests := []struct {
		name     string
		dir      func(t *testing.T) string
		out, err string
	}{
		{"a run", func(t *testing.T) string { return copyRun(t, runYCSB) }, "report: ", ""},
		{"not a run", func(t *testing.T) string { return t.TempDir() }, "", "warning: report not written"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, warn bytes.Buffer
			Finish(context.Background(), tc.dir(t), &out, &warn)
			if !strings.HasPrefix(out.String(), tc.out) || (tc.out == "") != (out.Len() == 0) {
				t.Errorf("out %q, want prefix %q", out.String(), tc.out)
			}
			if !strings.HasPrefix(warn.String(), tc.err) || (tc.err == "") != (warn.Len() == 0) {
				t.Errorf("warning %q, want prefix %q", warn.String(), tc.err)
			}
		})
	}
}
