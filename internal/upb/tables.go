package upb

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/texttable"
)

func ops(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }

func pct(v float64, decimals int) string { return strconv.FormatFloat(v, 'f', decimals, 64) + " %" }

func pctp(v *float64, decimals int) string {
	if v == nil {
		return "n/a"
	}
	s := pct(*v, decimals)
	if *v < 0 {
		s += "*"
	}
	return s
}

func opsp(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return ops(*v)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// TextTable is one of the paper's tables as text cells: what the terminal
// prints (tables.txt) and what report.html shows, from the same cells.
type TextTable struct {
	// Title is the caption line ("Table IV. ...").
	Title string
	// Rows are the cells; the first row is the header.
	Rows [][]string
	// LastLeft left-aligns the last column in text.
	LastLeft bool
	// RowClass classifies each data row (Rows[1:]) for the report:
	// "t" (the probe that gave T), "fail" (not sustained), "hint" or "".
	RowClass []string
	// Notes are the lines printed below the table.
	Notes []string
}

// write prints the table as text: the title, the aligned rows and the
// notes, indented.
func (t TextTable) write(w io.Writer) {
	fmt.Fprintln(w, t.Title)
	if len(t.Rows) > 1 {
		table(w, "  ", t.LastLeft, t.Rows)
	}
	for _, n := range t.Notes {
		fmt.Fprintln(w, "  "+n)
	}
}

// SortedProbes returns the probe rows in the order Tables IV and V list
// them: the hint first, then by offered load (the step column keeps the
// order they ran in).
func SortedProbes(rows []Row) []Row {
	s := append([]Row(nil), rows...)
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].Hint != s[j].Hint {
			return s[i].Hint
		}
		return s[i].Q < s[j].Q
	})
	return s
}

// IsT reports whether r is the probe whose achieved tps is b's T.
func (b *Baseline) IsT(r Row) bool {
	return b != nil && b.T > 0 && !r.Hint && r.Sustained && r.Q == b.QTotal && r.TPS == b.T
}

// probeRows renders probe rows sorted as SortedProbes, with a class per row
// (isT marks the row of T).
func probeRows(rows []Row, withClients bool, isT func(Row) bool) ([][]string, []string) {
	s := SortedProbes(rows)
	head := []string{"step"}
	if withClients {
		head = append(head, "clients", "Q_total (ops/s)")
	} else {
		head = append(head, "Q (ops/s)")
	}
	head = append(head, "achieved (ops/s)", "variation", "within φ", "steady", "verdict")
	out := [][]string{head}
	var classes []string
	for _, r := range s {
		line := []string{strconv.Itoa(r.Step)}
		if withClients {
			line = append(line, strconv.Itoa(r.Clients))
		}
		class := ""
		if r.Hint {
			line = append(line, "closed loop", ops(r.TPS), "-", pct(r.PhiFraction*100, 1), "-", "hint: places the first probe")
			class = "hint"
		} else {
			verdict := "sustained"
			if !r.Sustained {
				verdict = "not sustained: " + r.Reason
				class = "fail"
			} else if isT != nil && isT(r) {
				class = "t"
			}
			line = append(line, ops(r.Q), ops(r.TPS), pct(r.Variation, 1), pct(r.PhiFraction*100, 1), yesNo(r.Steady), verdict)
		}
		out = append(out, line)
		classes = append(classes, class)
	}
	return out, classes
}

// LcTable is Table IV: the probes of the L_c calibration and L_c.
func LcTable(res *LcResult, clientThreads int) TextTable {
	t := TextTable{LastLeft: true,
		Title: fmt.Sprintf("Table IV. Defining the workload limit per client (L_c): one client of %d threads, %s search", clientThreads, res.Mode)}
	t.Rows, t.RowClass = probeRows(res.Rows, false, func(r Row) bool { return res.Lc > 0 && r.Q == res.LastQ })
	if res.Lc > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("L_c = 0.9 × %s = %s ops/s (last Q sustained: %s ops/s)", ops(res.FailQ), ops(res.Lc), ops(res.LastQ)))
	}
	return t
}

// WriteLcTable writes Table IV: the probes of the L_c calibration and L_c.
func WriteLcTable(w io.Writer, res *LcResult, clientThreads int) {
	LcTable(res, clientThreads).write(w)
}

// BaselineTable is Table V for one (K, F): the probes of Algorithm 1 and
// T(K,F).
func BaselineTable(rec *SearchRecord) TextTable {
	title := fmt.Sprintf("Table V. Runs to determine T(%d,%d) (K=%d, F=%d; %s", rec.K, rec.F, rec.K, rec.F, describe(rec))
	if len(rec.Failed) > 0 {
		title += fmt.Sprintf("; failed: %s", strings.Join(rec.Failed, ", "))
	}
	t := TextTable{Title: title + ")", LastLeft: true}
	b := rec.Baseline
	if b != nil && len(b.Rows) > 0 {
		t.Rows, t.RowClass = probeRows(b.Rows, true, b.IsT)
	}
	switch {
	case rec.Error != "":
		t.Notes = append(t.Notes, fmt.Sprintf("no T(%d,%d): %s", rec.K, rec.F, rec.Error))
	case b != nil:
		n := fmt.Sprintf("T(%d,%d) = %s ops/s, measured at Q_total = %s ops/s with %s", rec.K, rec.F, ops(b.T), ops(b.QTotal), plural(b.Clients, "client"))
		if b.LimitReached {
			n += fmt.Sprintf("; every one of the %d clients ran at L_c and the cluster kept up, so T is a lower bound (raise upb.max_clients)", b.Clients)
		} else {
			n += fmt.Sprintf("; the next step, Q_total = %s ops/s, was not sustained", ops(b.FailQTotal))
		}
		t.Notes = append(t.Notes, n)
	}
	return t
}

// WriteBaselineTable writes Table V for one (K, F): the probes of
// Algorithm 1 and T(K,F).
func WriteBaselineTable(w io.Writer, rec *SearchRecord) {
	BaselineTable(rec).write(w)
}

// MetricTables are Tables VI (T(0,0) and, if known, L_c) and VII–X, in
// order; the notes of Table X say what a negative value means and which T
// values are missing.
func MetricTables(m *Metrics, lc float64) []TextTable {
	negative := false
	note := func(v *float64) {
		if v != nil && *v < 0 {
			negative = true
		}
	}
	vi := TextTable{Title: "Table VI. Parameters", Rows: [][]string{{"parameter", "value"}}}
	if lc > 0 {
		vi.Rows = append(vi.Rows, []string{"L_c", ops(lc) + " ops/s"})
	}
	vi.Rows = append(vi.Rows, []string{"T(0,0)", opsp(m.T00) + " ops/s"})

	vii := TextTable{Title: "Table VII. Performance degradation with the fault tolerance mechanism",
		Rows: [][]string{{"environment", "T(K,0) (ops/s)", "D(K,0)"}, {"K=0", opsp(m.T00), "-"}}}
	for _, k := range m.Ks {
		vii.Rows = append(vii.Rows, []string{fmt.Sprintf("K=%d", k.K), opsp(k.T), pctp(k.D, 2)})
		note(k.D)
	}

	viii := TextTable{Title: "Table VIII. Performance in a faulty environment (degradation against the same K without failures)",
		Rows: [][]string{{"environment", "T(K,F) (ops/s)", "D(K,F)"}}}
	for _, k := range m.Ks {
		for _, f := range k.Fs {
			viii.Rows = append(viii.Rows, []string{fmt.Sprintf("K=%d and F=%d", k.K, f.F), opsp(f.T), pctp(f.D, 3)})
			note(f.D)
		}
	}

	ix := TextTable{Title: "Table IX. Performance degradation during failures, weighted by 1/F", Rows: [][]string{{"metric", "value"}}}
	for _, k := range m.Ks {
		ix.Rows = append(ix.Rows, []string{fmt.Sprintf("DF_%d", k.K), pctp(k.DFK, 3)})
		note(k.DFK)
	}

	x := TextTable{Title: "Table X. Overall metrics", LastLeft: true, Rows: [][]string{{"metric", "value", "meaning"},
		{"D_T", pctp(m.DT, 2), fmt.Sprintf("mean of D(K,0), K=1..%d: degradation with fault tolerance", m.KMax)},
		{"D_F", pctp(m.DF, 2), fmt.Sprintf("mean of DF_K, K=1..%d: degradation during failures", m.KMax)}}}
	note(m.DT)
	note(m.DF)
	if negative {
		x.Notes = append(x.Notes, "* a negative value means a performance increase, no degradation")
	}
	if len(m.Missing) > 0 {
		x.Notes = append(x.Notes, fmt.Sprintf("missing T values: %s (metrics that need them are n/a)", strings.Join(m.Missing, ", ")))
	}
	return []TextTable{vi, vii, viii, ix, x}
}

// WriteMetricTables writes Tables VI (T(0,0) and, if known, L_c) and VII–X.
func WriteMetricTables(w io.Writer, m *Metrics, lc float64) {
	for i, t := range MetricTables(m, lc) {
		if i > 0 {
			fmt.Fprintln(w)
		}
		t.write(w)
	}
}

// table writes rows as aligned text columns (texttable.Format).
func table(w io.Writer, indent string, lastLeft bool, rows [][]string) {
	_, _ = io.WriteString(w, texttable.Format(rows, texttable.Options{Indent: indent, LastLeft: lastLeft}))
}
