package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/runfile"
)

// The verdicts of the checkers over a run's history (docs/checks.md):
// summary.json's checks.<checker> and, for a check made after the run
// (`faultbench check RUN_DIR`), checks/<checker>.json. report.html has a
// section per checker and draws each explained anomaly's time on the time
// charts; compare has a row per checker; the terminal a line per checker.

// ChecksDir is the directory of a run where `faultbench check` writes a
// checker's verdict (<checker>.json) and its drawings.
const ChecksDir = "checks"

// summaryChecksKey is summary.json's key of the verdicts.
const summaryChecksKey = "checks"

// SummaryVerdicts returns the verdicts summary.json holds under checks,
// by checker name; nil when it holds none.
func SummaryVerdicts(sum *rundir.Summary) (map[string]*verdict.Verdict, error) {
	if sum == nil {
		return nil, nil
	}
	raw, ok := sum.Sections[summaryChecksKey]
	if !ok {
		// summary.json's checks as the summary writes them, whichever
		// field of rundir.Summary holds them
		b, err := json.Marshal(sum)
		if err != nil {
			return nil, fmt.Errorf("summary: %w", err)
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(b, &keys); err != nil {
			return nil, fmt.Errorf("summary: %w", err)
		}
		if raw, ok = keys[summaryChecksKey]; !ok {
			return nil, nil
		}
	}
	var out map[string]*verdict.Verdict
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("summary.json checks: %w", err)
	}
	for name, v := range out {
		if v == nil {
			delete(out, name)
			continue
		}
		if v.Checker == "" {
			v.Checker = name
		}
	}
	return out, nil
}

// loadVerdicts reads a run directory's verdicts: summary.json's, and
// checks/<checker>.json for a checker the summary does not have (a check
// made after the run). What cannot be read is returned as notes.
func loadVerdicts(dir string, sum *rundir.Summary) (map[string]*verdict.Verdict, []string) {
	var notes []string
	out, err := SummaryVerdicts(sum)
	if err != nil {
		notes = append(notes, err.Error())
	}
	files, err := runfile.Glob(filepath.Join(dir, ChecksDir, "*.json"))
	if err != nil {
		return out, notes
	}
	slices.Sort(files)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if out[name] != nil {
			continue // the run's own verdict wins
		}
		b, err := runfile.ReadFile(f)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				notes = append(notes, fmt.Sprintf("%s/%s: %v", ChecksDir, filepath.Base(f), err))
			}
			continue
		}
		var v verdict.Verdict
		if err := json.Unmarshal(b, &v); err != nil {
			notes = append(notes, fmt.Sprintf("%s/%s is not a verdict: %v", ChecksDir, filepath.Base(f), err))
			continue
		}
		if v.Checker == "" {
			v.Checker = name
		}
		if out == nil {
			out = map[string]*verdict.Verdict{}
		}
		out[name] = &v
	}
	return out, notes
}

// validWord is a verdict as the report, the terminal and compare word it:
// PASS, FAIL or NOT JUDGED (unknown is never a pass), with its CSS class.
func validWord(v verdict.Valid) (word, class string) {
	switch v {
	case verdict.True:
		return "PASS", "pass"
	case verdict.False:
		return "FAIL", "fail"
	}
	return "NOT JUDGED", "unknown"
}

// notJudgedWhy says why a verdict is unknown: no operations, undecided
// parts, or the checker's notes; "" for a verdict that is not unknown.
func notJudgedWhy(v *verdict.Verdict) string {
	if v.Valid != verdict.Unknown {
		return ""
	}
	switch {
	case v.Operations == 0:
		return "no operations were checked: the history holds none"
	case v.Undecided > 0:
		return fmt.Sprintf("%d undecided (linearizable: keys whose time limit ran out); no forbidden anomaly was found in the rest", v.Undecided)
	case len(v.Notes) > 0:
		return strings.Join(v.Notes, "; ")
	}
	return "the checker could not decide"
}

// foundNames are the anomaly names v counted at least once, sorted.
func foundNames(v *verdict.Verdict) []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(v.AnomalyCounts)) {
		if v.AnomalyCounts[n] > 0 {
			out = append(out, n)
		}
	}
	return out
}

// allowed reports whether v's model allows the anomaly name (counted,
// not forbidden).
func allowed(v *verdict.Verdict, name string) bool {
	return v.Forbidden != nil && !slices.Contains(v.Forbidden, name)
}

// countsText is v's anomalies found as "G-single 2, G2-item 1 (allowed)",
// "none" when none was found.
func countsText(v *verdict.Verdict) string {
	var parts []string
	for _, n := range foundNames(v) {
		s := n + " " + strconv.Itoa(v.AnomalyCounts[n])
		if allowed(v, n) {
			s += " (allowed)"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// verdictCell is a checker's cell of compare: the verdict and the
// anomalies found ("FAIL: G-single 2, G2-item 1 (allowed)"), or why it was
// not judged.
func verdictCell(v *verdict.Verdict) string {
	word, _ := validWord(v.Valid)
	if v.Valid == verdict.Unknown {
		s := word + " (" + notJudgedShort(v) + ")"
		if len(foundNames(v)) > 0 {
			s += ": " + countsText(v)
		}
		return s
	}
	found := countsText(v)
	if found == "none" {
		return word
	}
	return word + ": " + found
}

// notJudgedShort is notJudgedWhy in a few words, for a table cell.
func notJudgedShort(v *verdict.Verdict) string {
	switch {
	case v.Operations == 0:
		return "no operations"
	case v.Undecided > 0:
		return fmt.Sprintf("%d undecided", v.Undecided)
	}
	return "undecided"
}

// VerdictLine is a verdict's terminal line: the checker's line
// (verdict.Line) after its word, and why it was not judged.
func VerdictLine(v *verdict.Verdict) string {
	word, _ := validWord(v.Valid)
	s := fmt.Sprintf("%s verdict: %s — %s", v.Checker, word, v.Line())
	if why := notJudgedWhy(v); why != "" {
		s += " — not judged: " + why
	}
	return s
}

// WriteVerdicts prints one line per checker, in name order (VerdictLine).
func WriteVerdicts(w io.Writer, vs map[string]*verdict.Verdict) {
	for _, name := range slices.Sorted(maps.Keys(vs)) {
		fmt.Fprintf(w, "\n%s\n", VerdictLine(vs[name]))
	}
}

// anomalyID is the HTML id of the i-th explained anomaly of checker.
func anomalyID(checker string, i int) string {
	return fmt.Sprintf("anomaly-%s-%d", fileSafe(checker), i+1)
}

// anomalyMarks are the explained anomalies of r's verdicts as marks on the
// time charts, each linked to its explanation in report.html. An anomaly
// without a time (t_ns 0) is not drawn.
func anomalyMarks(r *Run) []markSpec {
	var out []markSpec
	for _, name := range slices.Sorted(maps.Keys(r.Verdicts)) {
		v := r.Verdicts[name]
		for i, a := range v.Anomalies {
			if a.TimeNs <= 0 {
				continue
			}
			t := time.Duration(a.TimeNs)
			title := fmt.Sprintf("%s s  %s anomaly %s", fnum(t.Seconds(), 3), v.Checker, a.Name)
			if rel := relativeToFaults(r.RunFaults(), t, r.End); rel != "" {
				title += " (" + rel + ")"
			}
			out = append(out, markSpec{At: t.Seconds(), Title: title, Color: colAnomaly.solid(), Href: "#" + anomalyID(v.Checker, i)})
		}
	}
	return out
}

// relativeToFaults places t among the run's faults: during which fault
// and how long after its injection, or how long after the last fault's
// restore, or "before the first fault"; "" for a run without faults.
func relativeToFaults(faults []analyze.Fault, t, end time.Duration) string {
	if len(faults) == 0 {
		return ""
	}
	last := -1
	for i, f := range faults {
		if f.At <= t {
			last = i
		}
	}
	if last < 0 {
		return fmt.Sprintf("%s s before fault 1 (%s)", fnum((faults[0].At-t).Seconds(), 3), faultLabel(faults[0]))
	}
	f := faults[last]
	restoredBefore := f.Restored() && f.RestoreAt <= t && f.RestoreAt <= end
	if !restoredBefore {
		return fmt.Sprintf("during fault %d (%s), %s s after its injection", last+1, faultLabel(f), fnum((t-f.At).Seconds(), 3))
	}
	return fmt.Sprintf("%s s after fault %d (%s) was restored", fnum((t-f.RestoreAt).Seconds(), 3), last+1, faultLabel(f))
}

// verdictView is a checker's section of report.html.
type verdictView struct {
	ID, Checker   string
	Word, Class   string // PASS, FAIL or NOT JUDGED, and its CSS class
	Why           string // why it was not judged ("" unless unknown)
	Facts, Counts table
	Anomalies     []anomalyView
	Unexplained   string // says how many anomalies counted are not explained
	Files         []cell
	Notes         []string
}

// anomalyView is one explained anomaly.
type anomalyView struct {
	ID, Name, Time, Relative, Ops string
	Head                          string   // the explanation's first line
	Lines                         []string // its other lines, edges excepted
	Edges                         table    // a cycle's edges: from, type, to, why
}

// edgeLine is a cycle's edge in an isolation explanation:
// "  T1 -rw-> T0: why".
var edgeLine = regexp.MustCompile(`^\s*(\S+) -([a-z]+)-> (\S+): (.*)$`)

// explanationParts splits an explanation into its first line, its other
// lines and the edges of a cycle.
func explanationParts(text string) (head string, lines []string, edges table) {
	all := strings.Split(strings.TrimRight(text, "\n"), "\n")
	head = all[0]
	for _, l := range all[1:] {
		if m := edgeLine.FindStringSubmatch(l); m != nil {
			if edges.Head == nil {
				edges.Head = []string{"from", "edge", "to", "why the edge exists"}
			}
			edges.Rows = append(edges.Rows, tableRow{Cells: []cell{{Text: m[1]}, {Text: m[2], Class: "text"}, {Text: m[3], Class: "text"}, {Text: m[4], Class: "text"}}})
			continue
		}
		lines = append(lines, strings.TrimSpace(l))
	}
	return head, lines, edges
}

// verdictViews are the sections of r's verdicts, in checker name order.
func verdictViews(r *Run) []verdictView {
	var out []verdictView
	for _, name := range slices.Sorted(maps.Keys(r.Verdicts)) {
		v := r.Verdicts[name]
		vv := verdictView{ID: "verdict-" + fileSafe(v.Checker), Checker: v.Checker, Why: notJudgedWhy(v), Notes: v.Notes}
		vv.Word, vv.Class = validWord(v.Valid)
		model := v.Model
		if model == "" {
			model = "-"
		}
		for _, kv := range [][2]string{
			{"valid", v.Valid.String()},
			{"model", model},
			{"operations checked", strconv.Itoa(v.Operations)},
			{"checker time (s)", fnum(v.ElapsedMs/1000, 3)},
		} {
			vv.Facts.Rows = append(vv.Facts.Rows, tableRow{Cells: []cell{{Text: kv[0]}, {Text: kv[1], Class: "text"}}})
		}
		if v.Undecided > 0 {
			vv.Facts.Rows = append(vv.Facts.Rows, tableRow{Cells: []cell{{Text: "undecided"}, {Text: strconv.Itoa(v.Undecided), Class: "text"}}})
		}
		if len(v.Forbidden) > 0 {
			vv.Facts.Rows = append(vv.Facts.Rows, tableRow{Cells: []cell{{Text: "forbidden by the model"}, {Text: strings.Join(v.Forbidden, ", "), Class: "text"}}})
		}
		for _, k := range slices.Sorted(maps.Keys(v.Measures)) {
			vv.Facts.Rows = append(vv.Facts.Rows, tableRow{Cells: []cell{{Text: k}, {Text: fnum(v.Measures[k], 3), Class: "text"}}})
		}
		if len(v.AnomalyCounts) > 0 {
			vv.Counts.Head = []string{"anomaly", "count", "the model"}
			for _, n := range slices.Sorted(maps.Keys(v.AnomalyCounts)) {
				judge := "forbids it"
				if allowed(v, n) {
					judge = "allows it"
				}
				row := tableRow{Cells: []cell{{Text: n}, {Text: strconv.Itoa(v.AnomalyCounts[n])}, {Text: judge, Class: "text"}}}
				if v.AnomalyCounts[n] > 0 && !allowed(v, n) {
					row.Class = "fail"
				}
				vv.Counts.Rows = append(vv.Counts.Rows, row)
			}
		}
		total := 0
		for _, c := range v.AnomalyCounts {
			total += c
		}
		switch more := total - len(v.Anomalies); {
		case more <= 0:
		case len(v.Anomalies) == 0:
			vv.Unexplained = fmt.Sprintf("%d counted, none explained by the checker.", total)
		default:
			vv.Unexplained = fmt.Sprintf("%d more counted, not explained here (a few examples of each anomaly are kept).", more)
		}
		for i, a := range v.Anomalies {
			av := anomalyView{ID: anomalyID(v.Checker, i), Name: a.Name, Time: "time not recorded"}
			if a.TimeNs > 0 {
				t := time.Duration(a.TimeNs)
				av.Time = "t = " + fnum(t.Seconds(), 3) + " s"
				av.Relative = relativeToFaults(r.RunFaults(), t, r.End)
			}
			if len(a.Ops) > 0 {
				ops := make([]string, len(a.Ops))
				for k, o := range a.Ops {
					ops[k] = strconv.Itoa(o)
				}
				av.Ops = strings.Join(ops, ", ")
			}
			av.Head, av.Lines, av.Edges = explanationParts(a.Explanation)
			vv.Anomalies = append(vv.Anomalies, av)
		}
		for _, f := range v.Files {
			vv.Files = append(vv.Files, fileLink(r, f))
		}
		out = append(out, vv)
	}
	return out
}

// fileLink links a file a checker wrote, relative to the run directory
// when it is one of the run's files; else its name, unlinked.
func fileLink(r *Run, path string) cell {
	slash := filepath.ToSlash(path)
	cands := []string{slash, ChecksDir + "/" + filepath.Base(path), filepath.Base(path)}
	if rel, err := filepath.Rel(r.Dir, path); err == nil && !strings.HasPrefix(rel, "..") {
		cands = append([]string{filepath.ToSlash(rel)}, cands...)
	}
	if absDir, err := filepath.Abs(r.Dir); err == nil {
		if absPath, err := filepath.Abs(path); err == nil {
			if rel, err := filepath.Rel(absDir, absPath); err == nil && !strings.HasPrefix(rel, "..") {
				cands = append([]string{filepath.ToSlash(rel)}, cands...)
			}
		}
	}
	for _, c := range cands {
		if slices.Contains(r.Files, c) {
			return cell{Text: c, Href: c}
		}
	}
	return cell{Text: path + " (not in the run directory)"}
}

// verdictRows are the rows of the checkers' verdicts in compare: one per
// checker any of the runs has, its cell the run's verdict and the
// anomalies found (verdictCell), "-" for a run without that checker (its
// checks_passed for a run that has only that). workloadRows leaves these
// names out.
func verdictRows(runs []source) []metricRow {
	var rows []metricRow
	for _, name := range slices.Sorted(maps.Keys(verdictNames(runs))) {
		rows = append(rows, metricRow{Section: sectionVerdicts, Label: name + " verdict",
			Cell: func(s *source) string {
				if v := s.Verdicts[name]; v != nil {
					return verdictCell(v)
				}
				if ok, ran := checksPassed(s)[name]; ran { // a run before verdicts were kept
					return passFail(ok)
				}
				return "-"
			}})
	}
	return rows
}

// checksPassed is the run's summary.json checks_passed (nil without).
func checksPassed(s *source) map[string]bool {
	if s.Summary == nil {
		return nil
	}
	return s.Summary.Checks
}

// verdictNames are the checkers any of the runs has a verdict of.
func verdictNames(runs []source) map[string]bool {
	names := map[string]bool{}
	for _, r := range runs {
		for n := range r.Verdicts {
			names[n] = true
		}
	}
	return names
}
