package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/rundir"
)

// verdictFixtures holds hand-written verdicts (the JSON of summary.json's
// checks.<checker>, docs/checks.md) and the golden renderings of them.
const verdictFixtures = "testdata/verdicts"

// withVerdicts copies the run directory src and writes the verdict
// fixtures named (testdata/verdicts/<name>.json) into its summary.json's
// checks, each under its checker's name. RUNDIR in a fixture is the
// copy's path; a file a fixture names is created.
func withVerdicts(t testing.TB, src string, fixtures ...string) string {
	t.Helper()
	dir := copyRun(t, src)
	sumPath := filepath.Join(dir, "summary.json")
	var sum map[string]json.RawMessage
	b, err := os.ReadFile(sumPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	checks := map[string]json.RawMessage{}
	for _, name := range fixtures {
		v := readFixture(t, name, dir)
		for _, f := range v.Files {
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte("<html></html>\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		checks[v.Checker] = raw
	}
	if sum["checks"], err = json.Marshal(checks); err != nil {
		t.Fatal(err)
	}
	if b, err = json.MarshalIndent(sum, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sumPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readFixture reads testdata/verdicts/<name>.json, RUNDIR replaced by dir.
func readFixture(t testing.TB, name, dir string) *verdict.Verdict {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(verdictFixtures, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("RUNDIR"), []byte(filepath.ToSlash(dir)))
	var v verdict.Verdict
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &v
}

// renderHTML loads and renders dir without PNGs and returns report.html.
func renderHTML(t testing.TB, dir string) (*Run, string) {
	t.Helper()
	r, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := render(context.Background(), r, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out.HTML)
	if err != nil {
		t.Fatal(err)
	}
	return r, string(b)
}

// sectionOf returns the page's <section id="id"> ("" when absent).
func sectionOf(html, id string) string {
	i := strings.Index(html, `<section id="`+id+`">`)
	if i < 0 {
		return ""
	}
	j := strings.Index(html[i:], "</section>")
	if j < 0 {
		return html[i:]
	}
	return html[i : i+j+len("</section>")]
}

// cardOf returns the text of the page's card labelled label.
func cardOf(html, label string) string {
	i := strings.Index(html, `<div class="l">`+label+`</div>`)
	if i < 0 {
		return ""
	}
	j := strings.LastIndex(html[:i], `<div class="card`)
	return html[j:i]
}

// TestVerdictSectionGolden renders a run with a failed isolation verdict,
// an unknown linearizable one and a passed set one, and compares its
// Verdicts section with testdata/verdicts/report-section.html.
func TestVerdictSectionGolden(t *testing.T) {
	dir := withVerdicts(t, runKillPause, "isolation-false", "linearizable-unknown", "set-true")
	_, html := renderHTML(t, dir)
	got := sectionOf(html, "verdicts")
	if got == "" {
		t.Fatal("no verdicts section")
	}
	golden := filepath.Join(verdictFixtures, "report-section.html")
	if *update {
		if err := os.WriteFile(golden, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got+"\n" != string(want) {
		t.Errorf("verdicts section differs from %s (run with -update if intended):\n%s", golden, firstDiff(got+"\n", string(want)))
	}
	if !strings.Contains(html, `<a href="#verdicts">Verdicts</a>`) {
		t.Error("no nav link to the verdicts")
	}
}

// TestVerdictRendering is the negative control of the report: a false
// verdict renders its anomalies and never reads PASS; an unknown one reads
// not judged with why, never PASS; a true one (the positive control, so
// that the test can tell them apart) reads PASS.
func TestVerdictRendering(t *testing.T) {
	tests := []struct {
		fixture, checker string
		word             string
		want             []string
		wantNot          []string
	}{
		{"isolation-false", "isolation", "FAIL",
			[]string{"G-single", "G2-item", `id="anomaly-isolation-1"`, "t = 12.5 s", "during fault 1 (kill n1), 1.489 s after its injection",
				"T17 did not see T42&#39;s append", "<td>T17</td><td class=\"text\">rw</td><td class=\"text\">T42</td>",
				"T17 = operation 17 of the history", "operations (positions in history.jsonl): 17, 42", "serializable",
				"forbids it", "2 more counted, not explained here", "a torn last line was skipped", "1.234"},
			[]string{"PASS", "NOT JUDGED"}},
		{"linearizable-unknown", "linearizable", "NOT JUDGED",
			[]string{"Not judged: 2 undecided", "key reg1: undecided after 10s", "20.01"},
			[]string{"PASS", "FAIL"}},
		{"bank-empty", "bank", "NOT JUDGED",
			[]string{"Not judged: no operations were checked"},
			[]string{"PASS", "FAIL"}},
		{"linearizable-false", "linearizable", "FAIL",
			[]string{"nonlinearizable-key", `<a href="checks/linearizable-reg0.html">checks/linearizable-reg0.html</a>`, "cannot be placed"},
			[]string{"PASS", "not in the run directory"}},
		{"set-true", "set", "PASS",
			[]string{"stale-read", "allows it", "stable_latency_p99_ms", "41.5"},
			[]string{"FAIL", "NOT JUDGED"}},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			_, html := renderHTML(t, withVerdicts(t, runKillPause, tc.fixture))
			sec := sectionOf(html, "verdicts")
			if !strings.Contains(sec, `<h3 id="verdict-`+tc.checker+`">`+tc.checker+`: <span class="`) || !strings.Contains(sec, ">"+tc.word+"</span></h3>") {
				t.Errorf("section heading does not read %s", tc.word)
			}
			card := cardOf(html, tc.checker+" verdict")
			if !strings.Contains(card, ">"+tc.word+"<") {
				t.Errorf("card %q does not read %s", card, tc.word)
			}
			for _, w := range tc.want {
				if !strings.Contains(sec, w) {
					t.Errorf("section lacks %q", w)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(sec, w) || strings.Contains(card, w) {
					t.Errorf("section or card says %q", w)
				}
			}
		})
	}
}

// TestAnomalyMarks checks that each explained anomaly is drawn on the
// overview and on the zoomed figure of the fault it happened in, linked to
// its explanation, and that a run without verdicts has no marks.
func TestAnomalyMarks(t *testing.T) {
	_, html := renderHTML(t, withVerdicts(t, runKillPause, "isolation-false"))
	charts := chartsOf(html)
	over := charts["overview"]
	for _, id := range []string{"anomaly-isolation-1", "anomaly-isolation-2"} {
		if !strings.Contains(over, `<a href="#`+id+`">`) {
			t.Errorf("overview: no mark linked to %s", id)
		}
	}
	if n := strings.Count(over, `<g class="anomaly">`); n != 2 {
		t.Errorf("overview: %d anomaly marks, want 2", n)
	}
	if !strings.Contains(over, "12.5 s  isolation anomaly G-single (during fault 1 (kill n1), 1.489 s after its injection)") {
		t.Error("overview: the G-single mark's title does not place it in fault 1")
	}
	if !strings.Contains(charts["fault-1"], `href="#anomaly-isolation-1"`) {
		t.Error("fault 1's figure lacks the anomaly at 12.5 s")
	}
	_, plain := renderHTML(t, copyRun(t, runKillPause))
	if strings.Contains(plain, `class="anomaly"`) || sectionOf(plain, "verdicts") != "" {
		t.Error("a run without verdicts has anomaly marks or a verdicts section")
	}
}

// TestVerdictPNG draws the charts of a run with anomalies as PNGs (links
// and groups are SVG-only).
func TestVerdictPNG(t *testing.T) {
	r, err := Load(context.Background(), withVerdicts(t, runKillPause, "isolation-false"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := render(context.Background(), r, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Plots) == 0 {
		t.Fatal("no plots")
	}
}

// TestLoadVerdicts checks where verdicts are read from: summary.json's
// checks, checks/<checker>.json for a check made after the run (the run's
// own verdict wins), and a note for a file that is not a verdict.
func TestLoadVerdicts(t *testing.T) {
	dir := withVerdicts(t, runKillPause, "isolation-false")
	if err := os.MkdirAll(filepath.Join(dir, ChecksDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"isolation.json": `{"checker":"isolation","valid":true,"operations":1,"anomaly_counts":{}}`,
		"set.json":       `{"valid":true,"operations":5,"anomaly_counts":{}}`,
		"bad.json":       `{"valid":"maybe"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, ChecksDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if v := r.Verdicts["isolation"]; v == nil || v.Valid != verdict.False {
		t.Errorf("isolation: %+v, want the summary's false verdict", v)
	}
	if v := r.Verdicts["set"]; v == nil || v.Valid != verdict.True || v.Checker != "set" {
		t.Errorf("set: %+v, want checks/set.json's verdict named set", v)
	}
	if r.Verdicts["bad"] != nil {
		t.Error("a file that is not a verdict was read as one")
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "checks/bad.json is not a verdict") {
		t.Errorf("notes %q lack the bad file", r.Notes)
	}
}

func TestRelativeToFaults(t *testing.T) {
	f1 := analyze.Fault{Action: "kill", Node: "n1", At: 10 * time.Second, RestoreAt: 20 * time.Second, RestoreAction: "start"}
	f2 := analyze.Fault{Action: "partition", Node: "n2", At: 30 * time.Second, RestoreAt: -1}
	faults := []analyze.Fault{f1, f2}
	tests := []struct {
		name string
		t    time.Duration
		want string
	}{
		{"before the first", 4 * time.Second, "6 s before fault 1 (kill n1)"},
		{"during the first", 12500 * time.Millisecond, "during fault 1 (kill n1), 2.5 s after its injection"},
		{"after a restore", 21 * time.Second, "1 s after fault 1 (kill n1) was restored"},
		{"during one never restored", 45 * time.Second, "during fault 2 (partition n2), 15 s after its injection"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := relativeToFaults(faults, tc.t, time.Minute); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if got := relativeToFaults(nil, time.Second, time.Minute); got != "" {
		t.Errorf("no faults: %q", got)
	}
}

func TestVerdictWords(t *testing.T) {
	tests := []struct {
		fixture  string
		cell     string
		lineHead string
	}{
		{"isolation-false", "FAIL: G-single 3, G2-item 1", "isolation verdict: FAIL — isolation (serializable): valid=false, 4000 operations; anomalies: G-single 3, G2-item 1"},
		{"linearizable-unknown", "NOT JUDGED (2 undecided)", "linearizable verdict: NOT JUDGED — linearizable (register): valid=unknown, 500 operations; 2 undecided — not judged: 2 undecided"},
		{"bank-empty", "NOT JUDGED (no operations)", "bank verdict: NOT JUDGED — bank: valid=unknown, 0 operations — not judged: no operations were checked"},
		{"set-true", "PASS: stale-read 2 (allowed)", "set verdict: PASS — set: valid=true, 2500 operations; anomalies: stale-read 2 (allowed)"},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			v := readFixture(t, tc.fixture, "")
			if got := verdictCell(v); got != tc.cell {
				t.Errorf("cell %q, want %q", got, tc.cell)
			}
			if got := VerdictLine(v); !strings.HasPrefix(got, tc.lineHead) {
				t.Errorf("line %q\nwant %q...", got, tc.lineHead)
			}
		})
	}
}

// TestCompareVerdicts puts two runs whose verdicts differ side by side: a
// row per checker, the failed run's cell naming its anomalies, the
// unknown one not judged, a run without a checker "-" (golden
// testdata/verdicts/compare.text and .md; the HTML has the same rows).
func TestCompareVerdicts(t *testing.T) {
	a := withVerdicts(t, runKillPause, "isolation-false", "set-true")
	b := withVerdicts(t, runPauseLeader, "isolation-true", "linearizable-unknown")
	var runs []*Run
	for _, d := range []string{a, b} {
		r, err := Load(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	// a history checker's verdict is also in checks_passed (unknown is not
	// passed): shown once, as the verdict
	runs[1].Summary.Checks = map[string]bool{"linearizable": false, "isolation": true}
	for _, f := range []Format{FormatText, FormatMarkdown} {
		t.Run(string(f), func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteCompare(&buf, runs, CompareOptions{Format: f}); err != nil {
				t.Fatal(err)
			}
			// the verdict rows and the section's heading, golden
			var got strings.Builder
			for _, l := range strings.Split(buf.String(), "\n") {
				if strings.Contains(l, "verdicts") || strings.Contains(l, " check ") || strings.Contains(l, " verdict ") {
					got.WriteString(l + "\n")
				}
			}
			golden := filepath.Join(verdictFixtures, "compare."+string(f))
			if *update {
				if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got.String() != string(want) {
				t.Errorf("verdict rows differ from %s (run with -update if intended):\n%s", golden, firstDiff(got.String(), string(want)))
			}
		})
	}
	var buf bytes.Buffer
	if err := WriteCompare(&buf, runs, CompareOptions{Format: FormatHTML}); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, w := range []string{`<td colspan="3">verdicts</td>`, "<td>isolation verdict</td><td>FAIL: G-single 3, G2-item 1</td><td>PASS</td>",
		"<td>linearizable verdict</td><td>-</td><td>NOT JUDGED (2 undecided)</td>"} {
		if !strings.Contains(html, w) {
			t.Errorf("compare HTML lacks %q", w)
		}
	}
}

// TestScenarioSummaryVerdicts checks the terminal's verdict lines: one per
// checker, FAIL and NOT JUDGED never printed as PASS, and a workload check
// of the same name not printed twice.
func TestScenarioSummaryVerdicts(t *testing.T) {
	dir := withVerdicts(t, runKillPause, "isolation-false", "linearizable-unknown", "set-true")
	var sum rundir.Summary
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	sum.Checks = map[string]bool{"linearizable": true, "tpcc-consistency": true}
	var out bytes.Buffer
	WriteScenarioSummary(&out, &sum, nil)
	text := out.String()
	for _, w := range []string{
		"\nisolation verdict: FAIL — isolation (serializable): valid=false, 4000 operations; anomalies: G-single 3, G2-item 1\n",
		"\nlinearizable verdict: NOT JUDGED — linearizable (register): valid=unknown, 500 operations; 2 undecided — not judged: 2 undecided",
		"\nset verdict: PASS — set: valid=true, 2500 operations; anomalies: stale-read 2 (allowed)\n",
		"\ntpcc-consistency check: PASS\n",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("summary lacks %q:\n%s", w, text)
		}
	}
	if n, m := strings.Count(text, "linearizable verdict:"), strings.Count(text, "linearizable check:"); n != 1 || m != 0 {
		t.Errorf("linearizable printed as a verdict %d times and as a workload check %d times, want once and never", n, m)
	}
}

// setIsolation writes isolation into the run directory's env.json, as a
// run with sqldb.isolation records it.
func setIsolation(t testing.TB, dir, level string) {
	t.Helper()
	p := filepath.Join(dir, "env.json")
	var env map[string]json.RawMessage
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	env["isolation"], _ = json.Marshal(level)
	b, _ = json.Marshal(env)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestVerdictTable renders the results table of issue 24 from two runs
// (golden testdata/verdicts/table.md): a row per run and checker, the
// failed isolation verdict naming its anomalies and never PASS, the
// unknown one not judged, sorted by target, isolation level and fault.
func TestVerdictTable(t *testing.T) {
	a := withVerdicts(t, runKillPause, "isolation-false", "linearizable-unknown")
	setIsolation(t, a, "repeatable-read")
	b := withVerdicts(t, runPauseLeader, "isolation-true")
	var buf bytes.Buffer
	if err := WriteVerdictTable(context.Background(), &buf, []string{a, b}); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	golden := filepath.Join(verdictFixtures, "table.md")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("table differs from %s (run with -update if intended):\n%s", golden, firstDiff(got, string(want)))
	}
	for _, l := range strings.Split(got, "\n") {
		if strings.Contains(l, "G-single 3") && strings.Contains(l, "PASS") || strings.Contains(l, "undecided") && strings.Contains(l, "| PASS") {
			t.Errorf("a failed or unknown verdict reads PASS: %s", l)
		}
	}
}

// TestVerdictTableErrors is the wrong input of the verdict table: no
// directories, a directory that is not a run, a run without verdicts.
func TestVerdictTableErrors(t *testing.T) {
	tests := []struct {
		name string
		dirs []string
		want string
	}{
		{"no directories", nil, "no run directories"},
		{"missing directory", []string{filepath.Join(t.TempDir(), "nope")}, "run directory"},
		{"not a run", []string{t.TempDir()}, "not a readable run directory"},
		{"no verdicts", []string{copyRun(t, runYCSB)}, "no checker's verdict"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteVerdictTable(context.Background(), &buf, tc.dirs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if buf.Len() > 0 {
				t.Errorf("wrote %q on an error", buf.String())
			}
		})
	}
}
