package upb

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// table renders rows as aligned text columns: the first column left-aligned,
// the others right-aligned, except the last when left is set.
func table(w io.Writer, indent string, lastLeft bool, rows [][]string) {
	var width []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			left := i == 0 || (lastLeft && i == len(r)-1)
			if i > 0 {
				b.WriteString("  ")
			}
			if left {
				b.WriteString(c)
				if i < len(r)-1 {
					b.WriteString(pad)
				}
			} else {
				b.WriteString(pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

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

// probeRows renders probe rows sorted by offered load (the hint first), as
// the paper lists them; the step column gives the order they ran in.
func probeRows(rows []Row, withClients bool) [][]string {
	s := append([]Row(nil), rows...)
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].Hint != s[j].Hint {
			return s[i].Hint
		}
		return s[i].Q < s[j].Q
	})
	head := []string{"step"}
	if withClients {
		head = append(head, "clients", "Q_total (ops/s)")
	} else {
		head = append(head, "Q (ops/s)")
	}
	head = append(head, "achieved (ops/s)", "variation", "within φ", "steady", "verdict")
	out := [][]string{head}
	for _, r := range s {
		line := []string{strconv.Itoa(r.Step)}
		if withClients {
			line = append(line, strconv.Itoa(r.Clients))
		}
		if r.Hint {
			line = append(line, "closed loop", ops(r.TPS), "-", pct(r.PhiFraction*100, 1), "-", "hint: places the first probe")
		} else {
			verdict := "sustained"
			if !r.Sustained {
				verdict = "not sustained: " + r.Reason
			}
			line = append(line, ops(r.Q), ops(r.TPS), pct(r.Variation, 1), pct(r.PhiFraction*100, 1), yesNo(r.Steady), verdict)
		}
		out = append(out, line)
	}
	return out
}

// WriteLcTable writes Table IV: the probes of the L_c calibration and L_c.
func WriteLcTable(w io.Writer, res *LcResult, clientThreads int) {
	fmt.Fprintf(w, "Table IV. Defining the workload limit per client (L_c): one client of %d threads, %s search\n", clientThreads, res.Mode)
	table(w, "  ", true, probeRows(res.Rows, false))
	if res.Lc > 0 {
		fmt.Fprintf(w, "  L_c = 0.9 × %s = %s ops/s (last Q sustained: %s ops/s)\n", ops(res.FailQ), ops(res.Lc), ops(res.LastQ))
	}
}

// WriteBaselineTable writes Table V for one (K, F): the probes of
// Algorithm 1 and T(K,F).
func WriteBaselineTable(w io.Writer, rec *SearchRecord) {
	fmt.Fprintf(w, "Table V. Runs to determine T(%d,%d) (K=%d, F=%d; %s", rec.K, rec.F, rec.K, rec.F, Describe(rec.Kind, rec.Nodes, rec.Replicas))
	if len(rec.Failed) > 0 {
		fmt.Fprintf(w, "; failed: %s", strings.Join(rec.Failed, ", "))
	}
	fmt.Fprintln(w, ")")
	b := rec.Baseline
	if b != nil && len(b.Rows) > 0 {
		table(w, "  ", true, probeRows(b.Rows, true))
	}
	switch {
	case rec.Error != "":
		fmt.Fprintf(w, "  no T(%d,%d): %s\n", rec.K, rec.F, rec.Error)
	case b != nil:
		fmt.Fprintf(w, "  T(%d,%d) = %s ops/s, measured at Q_total = %s ops/s with %s", rec.K, rec.F, ops(b.T), ops(b.QTotal), plural(b.Clients, "client"))
		if b.LimitReached {
			fmt.Fprintf(w, "; every one of the %d clients ran at L_c and the cluster kept up, so T is a lower bound (raise upb.max_clients)\n", b.Clients)
		} else {
			fmt.Fprintf(w, "; the next step, Q_total = %s ops/s, was not sustained\n", ops(b.FailQTotal))
		}
	}
}

// WriteMetricTables writes Tables VI (T(0,0) and, if known, L_c) and VII–X.
func WriteMetricTables(w io.Writer, m *Metrics, lc float64) {
	negative := false
	note := func(v *float64) {
		if v != nil && *v < 0 {
			negative = true
		}
	}
	fmt.Fprintln(w, "Table VI. Parameters")
	rows := [][]string{{"parameter", "value"}}
	if lc > 0 {
		rows = append(rows, []string{"L_c", ops(lc) + " ops/s"})
	}
	rows = append(rows, []string{"T(0,0)", opsp(m.T00) + " ops/s"})
	table(w, "  ", false, rows)

	fmt.Fprintln(w, "\nTable VII. Performance degradation with the fault tolerance mechanism")
	rows = [][]string{{"environment", "T(K,0) (ops/s)", "D(K,0)"}, {"K=0", opsp(m.T00), "-"}}
	for _, k := range m.Ks {
		rows = append(rows, []string{fmt.Sprintf("K=%d", k.K), opsp(k.T), pctp(k.D, 2)})
		note(k.D)
	}
	table(w, "  ", false, rows)

	fmt.Fprintln(w, "\nTable VIII. Performance in a faulty environment (degradation against the same K without failures)")
	rows = [][]string{{"environment", "T(K,F) (ops/s)", "D(K,F)"}}
	for _, k := range m.Ks {
		for _, f := range k.Fs {
			rows = append(rows, []string{fmt.Sprintf("K=%d and F=%d", k.K, f.F), opsp(f.T), pctp(f.D, 3)})
			note(f.D)
		}
	}
	table(w, "  ", false, rows)

	fmt.Fprintln(w, "\nTable IX. Performance degradation during failures, weighted by 1/F")
	rows = [][]string{{"metric", "value"}}
	for _, k := range m.Ks {
		rows = append(rows, []string{fmt.Sprintf("DF_%d", k.K), pctp(k.DFK, 3)})
		note(k.DFK)
	}
	table(w, "  ", false, rows)

	fmt.Fprintln(w, "\nTable X. Overall metrics")
	rows = [][]string{{"metric", "value", "meaning"},
		{"D_T", pctp(m.DT, 2), fmt.Sprintf("mean of D(K,0), K=1..%d: degradation with fault tolerance", m.KMax)},
		{"D_F", pctp(m.DF, 2), fmt.Sprintf("mean of DF_K, K=1..%d: degradation during failures", m.KMax)}}
	note(m.DT)
	note(m.DF)
	table(w, "  ", true, rows)
	if negative {
		fmt.Fprintln(w, "  * a negative value means a performance increase, no degradation")
	}
	if len(m.Missing) > 0 {
		fmt.Fprintf(w, "  missing T values: %s (metrics that need them are n/a)\n", strings.Join(m.Missing, ", "))
	}
}
