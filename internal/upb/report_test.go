package upb

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fixtureRun is a real UPB run (etcd, Kmax = 1, 500 ms windows, 3 s steady
// windows: `faultbench upb scenarios/upb-etcd.yaml --set upb.kmax=1 ...`,
// see env.json), trimmed to what the report reads: the top-level files and
// every probe's windows.csv (ALL rows only).
const fixtureRun = "testdata/runs/20261123T105412Z-upb-etcd"

// copyTree copies a directory tree into a fresh temporary directory.
func copyTree(t testing.TB, src string) string {
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

func readSummary(t testing.TB, dir string) *Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

var (
	rowRe  = regexp.MustCompile(`(?s)<tr[^>]*>(.*?)</tr>`)
	cellRe = regexp.MustCompile(`(?s)<t[dh][^>]*>(.*?)</t[dh]>`)
	tagRe  = regexp.MustCompile(`<[^>]*>`)
)

// htmlRows returns the text of every table row of a page, cells joined by
// " | ".
func htmlRows(page string) map[string]int {
	out := map[string]int{}
	for _, m := range rowRe.FindAllStringSubmatch(page, -1) {
		var cells []string
		for _, c := range cellRe.FindAllStringSubmatch(m[1], -1) {
			cells = append(cells, html.UnescapeString(tagRe.ReplaceAllString(c[1], "")))
		}
		out[strings.Join(cells, " | ")]++
	}
	return out
}

// svgs returns the inline charts of a page by id (without "chart-").
func svgs(page string) map[string]string {
	out := map[string]string{}
	const open = `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="chart-`
	for {
		i := strings.Index(page, open)
		if i < 0 {
			return out
		}
		page = page[i+len(open):]
		id := page[:strings.IndexByte(page, '"')]
		j := strings.Index(page, "</svg>")
		out[id] = page[:j]
		page = page[j:]
	}
}

// TestTablesUnchanged: the tables rebuilt from summary.json are the
// terminal's tables.txt of the run, byte for byte (the report shows the
// same cells).
func TestTablesUnchanged(t *testing.T) {
	sum := readSummary(t, fixtureRun)
	var b bytes.Buffer
	fmt.Fprintln(&b)
	WriteLcTable(&b, sum.Lc, sum.ClientThreads)
	fmt.Fprintln(&b)
	for _, rec := range sum.Searches {
		WriteBaselineTable(&b, rec)
		fmt.Fprintln(&b)
	}
	WriteMetricTables(&b, sum.Metrics, sum.LcOps)
	want, err := os.ReadFile(filepath.Join(fixtureRun, "tables.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.HasPrefix(string(want), got) {
		t.Errorf("tables differ from tables.txt:\n--- got\n%s\n--- tables.txt\n%s", got, want)
	}
}

// TestReport renders the fixture's report and checks its structure: every
// row of Tables IV–X as the terminal prints it, the T rows marked, one
// probe curve per search with a marker per probe, one small chart per
// probe with its measured window, the PNGs, and nothing fetched.
func TestReport(t *testing.T) {
	dir := copyTree(t, fixtureRun)
	if !IsRunDir(dir) {
		t.Fatal("IsRunDir(fixture) = false")
	}
	out, err := WriteReport(context.Background(), dir, true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out.HTML)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	rows := htmlRows(page)
	sum := readSummary(t, dir)

	t.Run("tables", func(t *testing.T) {
		tables := []TextTable{LcTable(sum.Lc, sum.ClientThreads)}
		for _, rec := range sum.Searches {
			tables = append(tables, BaselineTable(rec))
		}
		tables = append(tables, MetricTables(sum.Metrics, sum.LcOps)...)
		for _, tb := range tables {
			if !strings.Contains(page, html.EscapeString(tb.Title)) && !strings.Contains(page, tb.Title) {
				t.Errorf("no title %q", tb.Title)
			}
			for _, r := range tb.Rows {
				if rows[strings.Join(r, " | ")] == 0 {
					t.Errorf("%s: no row %q", tb.Title, strings.Join(r, " | "))
				}
			}
			for _, n := range tb.Notes {
				if !strings.Contains(html.UnescapeString(page), n) {
					t.Errorf("%s: no note %q", tb.Title, n)
				}
			}
		}
		for _, want := range []string{"D_T | 87.11 % |", "DF_1 | -65.972 %*", "K=1 and F=1 | 4219 | -65.972 %*"} {
			found := false
			for r := range rows {
				found = found || strings.HasPrefix(r, want)
			}
			if !found {
				t.Errorf("no row starting %q", want)
			}
		}
		// one T row per search and the L_c table
		if n := strings.Count(page, `<tr class="row-t">`); n != 1+len(sum.Searches) {
			t.Errorf("%d rows marked as T, want %d", n, 1+len(sum.Searches))
		}
	})

	charts := svgs(page)
	t.Run("probe curves", func(t *testing.T) {
		type search struct {
			id   string
			rows []Row
		}
		all := []search{{"lc", sum.Lc.Rows}}
		for _, s := range sum.Searches {
			all = append(all, search{fmt.Sprintf("k%d-f%d", s.K, s.F), s.Baseline.Rows})
		}
		for _, s := range all {
			svg, ok := charts["curve-"+s.id]
			if !ok {
				t.Errorf("no probe curve for %s", s.id)
				continue
			}
			var ok1, fail int
			for _, r := range s.rows {
				switch {
				case r.Hint:
				case r.Sustained:
					ok1++
				default:
					fail++
				}
			}
			if got := strings.Count(svg, `class="probe sustained`); got != ok1 {
				t.Errorf("%s: %d sustained markers, want %d", s.id, got, ok1)
			}
			if got := strings.Count(svg, `class="probe unsustained`); got != fail {
				t.Errorf("%s: %d unsustained markers, want %d", s.id, got, fail)
			}
			if got := strings.Count(svg, `class="probe sustained t"`); got != 1 {
				t.Errorf("%s: %d T markers, want 1", s.id, got)
			}
			if strings.Count(svg, `class="keepup"`) != 2 || !strings.Contains(svg, `class="hint"`) {
				t.Errorf("%s: keep-up lines or hint line missing", s.id)
			}
			for i, r := range s.rows {
				p, ok := charts[fmt.Sprintf("probe-%s-%02d", s.id, i+1)]
				if !ok {
					t.Errorf("%s: no chart for probe %d", s.id, i+1)
					continue
				}
				if !strings.Contains(p, `class="series"`) {
					t.Errorf("%s probe %d (%s): no throughput line", s.id, i+1, r.Dir)
				}
				if !strings.Contains(p, `class="measure-span"`) || !strings.Contains(p, `class="warmup-span"`) {
					t.Errorf("%s probe %d (%s): measured window or warm-up not shaded", s.id, i+1, r.Dir)
				}
			}
		}
		if !strings.Contains(page, "T(0,0) = 19726 ops/s") {
			t.Errorf("T(0,0) is not labelled on its curve")
		}
		for _, p := range out.Plots {
			if fi, err := os.Stat(p); err != nil || fi.Size() < 1000 {
				t.Errorf("plot %s: %v", p, err)
			}
		}
		if len(out.Plots) != 1+len(sum.Searches) {
			t.Errorf("%d plots, want %d", len(out.Plots), 1+len(sum.Searches))
		}
	})

	t.Run("self-contained", func(t *testing.T) {
		rest := strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")
		for _, bad := range []string{"http://", "https://", "<link", "<script src", "<img", "@import"} {
			if strings.Contains(rest, bad) {
				t.Errorf("page contains %q", bad)
			}
		}
		if len(b) > 400<<10 {
			t.Errorf("report.html is %d bytes", len(b))
		}
	})
}

// TestReportEscapes: text from the run directory (names, errors, reasons)
// is escaped in the page and in the charts.
func TestReportEscapes(t *testing.T) {
	dir := copyTree(t, fixtureRun)
	sum := readSummary(t, dir)
	evil := `<script>alert("x")</script>&`
	sum.Scenario = "upb-" + evil
	sum.Errors = append(sum.Errors, "error "+evil)
	sum.Searches[0].Baseline.Rows[len(sum.Searches[0].Baseline.Rows)-1].Reason = "reason " + evil
	sum.Searches[1].Failed = []string{"n1" + evil}
	b, _ := json.Marshal(sum)
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := WriteReport(context.Background(), dir, false)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(out.HTML)
	if bytes.Contains(page, []byte("<script>alert")) {
		t.Errorf("unescaped text in the page")
	}
	if n := bytes.Count(page, []byte("&lt;script&gt;alert(")); n < 4 {
		t.Errorf("%d escaped copies of the text, want at least 4 (title, note, reason, failed node)", n)
	}
}

// TestReportPartial: half-written and broken run directories give a
// report with notes or a clear error, never a panic.
func TestReportPartial(t *testing.T) {
	ctx := context.Background()
	t.Run("no summary yet", func(t *testing.T) {
		dir := t.TempDir()
		sc, _ := os.ReadFile(filepath.Join(fixtureRun, "scenario.yaml"))
		os.WriteFile(filepath.Join(dir, "scenario.yaml"), sc, 0o644)
		if !IsRunDir(dir) {
			t.Fatal("IsRunDir = false for a UPB dir without summary.json")
		}
		out, err := WriteReport(ctx, dir, true)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := os.ReadFile(out.HTML)
		if !bytes.Contains(page, []byte("summary.json is missing")) || !bytes.Contains(page, []byte("No T value measured yet")) {
			t.Errorf("partial report lacks its notes")
		}
	})
	t.Run("cut-off summary and missing probes", func(t *testing.T) {
		dir := copyTree(t, fixtureRun)
		os.RemoveAll(filepath.Join(dir, "k1-f1"))
		if _, err := WriteReport(ctx, dir, false); err != nil {
			t.Fatal(err)
		}
		page, _ := os.ReadFile(filepath.Join(dir, "report.html"))
		if !bytes.Contains(page, []byte("windows.csv is missing")) {
			t.Errorf("a probe without windows.csv is not noted")
		}
		b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
		os.WriteFile(filepath.Join(dir, "summary.json"), b[:len(b)/2], 0o644)
		if !IsRunDir(dir) {
			t.Fatal("IsRunDir = false for a cut-off summary.json with a UPB scenario.yaml")
		}
		if _, err := WriteReport(ctx, dir, false); err != nil {
			t.Fatal(err)
		}
		page, _ = os.ReadFile(filepath.Join(dir, "report.html"))
		if !bytes.Contains(page, []byte("summary.json is unreadable")) {
			t.Errorf("a cut-off summary.json is not noted")
		}
	})
	t.Run("not a UPB run", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "summary.json"), []byte(`{"scenario":"x","totals":{}}`), 0o644)
		if IsRunDir(dir) {
			t.Error("IsRunDir = true for a scenario run")
		}
		if _, err := WriteReport(ctx, t.TempDir(), false); err == nil || !strings.Contains(err.Error(), "not a UPB run directory") {
			t.Errorf("empty directory: %v", err)
		}
		if _, err := WriteReport(ctx, filepath.Join(dir, "nope"), false); err == nil {
			t.Error("missing directory: no error")
		}
	})
}
