package report

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/check"
	"github.com/faultbench/faultbench/internal/rundir"
)

//go:embed assets/report.html assets/report.css assets/report.js
var assets embed.FS

// File names Render writes into the run directory.
const (
	HTMLFile = "report.html"
	PlotsDir = "plots"
)

// Output is what Render wrote.
type Output struct {
	HTML  string   // path of report.html
	Plots []string // paths of plots/*.png
}

// Render reads the run directory dir and writes dir/report.html (one
// self-contained file: inline SVG charts, inline CSS and optional inline
// JavaScript, no network) and dir/plots/*.png (the same charts, rendered in
// Go). It is what `faultbench report` and the end of every run call.
func Render(ctx context.Context, dir string) (*Output, error) {
	if sum, err := readTrials(dir); err != nil {
		return nil, err
	} else if sum != nil {
		return RenderTrials(ctx, dir, sum) // the parent of a run with trials
	}
	r, err := Load(ctx, dir)
	if err != nil {
		return nil, err
	}
	return RenderRun(ctx, r)
}

// RenderRun writes report.html and plots/*.png for a loaded run into its
// directory.
func RenderRun(ctx context.Context, r *Run) (*Output, error) {
	return render(ctx, r, true)
}

// render writes report.html and, with pngs, plots/*.png.
func render(ctx context.Context, r *Run, pngs bool) (*Output, error) {
	return renderRows(ctx, r, pngs, metricRows())
}

// renderRows is render with the metric rows defs.
func renderRows(ctx context.Context, r *Run, pngs bool, defs []metricRow) (*Output, error) {
	f, err := newFonts()
	if err != nil {
		return nil, err
	}
	figs := figures(r)
	canvases := make([]*canvas, len(figs))
	for i, fg := range figs {
		canvases[i] = layout(fg.spec, f.measure)
	}
	page, err := buildPage(r, figs, canvases, defs)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := page.execute(&buf); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	names := make([]string, len(figs))
	for i := range figs {
		names[i] = figs[i].png
	}
	if !pngs {
		canvases = nil
	}
	return writeOutputs(ctx, r.Dir, buf.Bytes(), names, canvases)
}

// writeOutputs writes the PNGs of canvases (named by names) into dir's
// plots/, then html as dir's report.html, and returns their paths.
// With no canvases it writes report.html only.
func writeOutputs(ctx context.Context, dir string, html []byte, names []string, canvases []*canvas) (*Output, error) {
	out := &Output{HTML: filepath.Join(dir, HTMLFile)}
	if len(canvases) > 0 {
		plots := filepath.Join(dir, PlotsDir)
		if err := os.MkdirAll(plots, 0o755); err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		paths := make([]string, len(canvases))
		for i := range canvases {
			paths[i] = filepath.Join(plots, names[i])
		}
		if err := writePNGs(ctx, paths, canvases); err != nil {
			return nil, err
		}
		out.Plots = paths
	}
	if err := rundir.WriteFile(out.HTML, html); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return out, nil
}

// writePNGs rasterizes and writes the canvases, one worker per CPU (each
// with fonts of its own: faces are not safe for concurrent use).
func writePNGs(ctx context.Context, paths []string, cs []*canvas) error {
	errs := make([]error, len(cs))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(cs)) {
		wg.Go(func() {
			f, err := newFonts()
			for i := range jobs {
				if err != nil {
					errs[i] = err
					continue
				}
				if werr := writePNGFile(paths[i], cs[i], f); werr != nil {
					errs[i] = fmt.Errorf("report: %s: %w", paths[i], werr)
				}
			}
		})
	}
	var cerr error
	for i := range cs {
		if cerr = ctx.Err(); cerr != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return errors.Join(append(errs, cerr)...)
}

// cell is one table cell.
type cell struct {
	Text  string
	Class string
	Href  string
	Span  int
}

// tableRow is one table row.
type tableRow struct {
	Class string
	Cells []cell
}

// table is a table of the page.
type table struct {
	Head []string
	Rows []tableRow
}

func (t *table) add(class string, cells ...string) {
	row := tableRow{Class: class}
	for _, c := range cells {
		row.Cells = append(row.Cells, cell{Text: c})
	}
	t.Rows = append(t.Rows, row)
}

type navItem struct{ ID, Title string }

type card struct{ Label, Value, Class string }

type figView struct {
	ID, Caption, PNG string
	SVG              template.HTML
}

type faultView struct {
	ID, Title, Error string
	Figure           figView
	Table            table
	Notes            []string
}

type lostView struct {
	Verdict, Class, Text string
	Examples             table
}

// page is the data of the report template.
type page struct {
	Title, Subtitle, WindowText string
	CSS                         template.CSS
	JS                          template.JS
	Nav                         []navItem
	Cards                       []card
	Overview, PerOp, Errors     []figView
	Faults                      []faultView
	Phases, Availability        table
	Elasticity                  table
	ElasticityNotes             []string
	Lost                        *lostView
	Verdicts                    []verdictView   // the checkers' verdicts over the history, one section each
	Metastable                  *metastableView // the metastability verdict (metastable.go)
	Autoscale                   *autoscaleView  // the autoscaling decisions, EB2 (autoscale.go)
	Clients                     table
	ClientSpread                string
	ClientOps                   table // per-operation latency spread across clients (summary.json per_client)
	Events                      table
	Scenario, Properties        string
	Env                         table
	Files                       []string
	Notes                       []string
	Failures                    []string // the run did not do what it was asked: a banner
	tmpl                        *template.Template
}

func (p *page) execute(b *bytes.Buffer) error {
	if err := p.tmpl.Execute(b, p); err != nil {
		return fmt.Errorf("report: template: %w", err)
	}
	return nil
}

func buildPage(r *Run, figs []figure, cs []*canvas, defs []metricRow) (*page, error) {
	src, err := assets.ReadFile("assets/report.html")
	if err != nil {
		return nil, err
	}
	css, _ := assets.ReadFile("assets/report.css")
	js, _ := assets.ReadFile("assets/report.js")
	tmpl, err := template.New("report").Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("report: template: %w", err)
	}
	p := &page{tmpl: tmpl, Title: r.Title(), CSS: template.CSS(css), JS: template.JS(js),
		Scenario: r.Scenario, Properties: r.Properties}
	p.Subtitle = subtitle(r)
	p.WindowText = fmt.Sprintf("%s windows of %s", strconv.Itoa(countWindows(r)), r.Window)
	p.Nav = []navItem{{"overview", "Throughput & latency"}}
	if len(r.RunFaults()) > 0 {
		p.Nav = append(p.Nav, navItem{"faults", "Faults"})
	}
	p.Nav = append(p.Nav, navItem{"operations", "Per operation"}, navItem{"errors", "Errors"},
		navItem{"availability", "Availability"})
	if r.Analysis != nil && len(r.Analysis.Elasticity) > 0 {
		p.Nav = append(p.Nav, navItem{"elasticity", "Elasticity"})
	}
	if len(r.Verdicts) > 0 {
		p.Nav = append(p.Nav, navItem{"verdicts", "Verdicts"})
	}
	var msNotes []string
	if p.Metastable, msNotes = metastableSection(r); p.Metastable != nil {
		p.Nav = append(p.Nav, navItem{"metastability", "Metastability"})
	}
	var asNotes []string
	if p.Autoscale, asNotes = autoscaleSection(r); p.Autoscale != nil {
		p.Nav = append(p.Nav, navItem{"autoscaling", "Autoscaling"})
	}
	msNotes = append(msNotes, asNotes...)
	p.Nav = append(p.Nav, navItem{"checks", "Lost writes"}, navItem{"clients", "Clients"},
		navItem{"events", "Events"}, navItem{"setup", "Scenario & environment"}, navItem{"files", "Raw files"})

	views := make(map[string]figView, len(figs))
	for i, fg := range figs {
		var b strings.Builder
		writeSVG(&b, cs[i])
		views[fg.spec.ID] = figView{ID: fg.spec.ID, Caption: fg.spec.Title, PNG: fg.png, SVG: template.HTML(b.String())}
	}
	p.Overview = []figView{views["overview"]}
	p.PerOp = []figView{views["throughput"]}
	for _, op := range r.Ops {
		p.PerOp = append(p.PerOp, views["latency-"+fileSafe(op)])
	}
	p.Errors = []figView{views["errors"], views["behind"]}

	p.Cards = cards(r)
	p.Faults = faultViews(r, views)
	p.Phases = phasesTable(r)
	p.Availability = availabilityTable(r, defs)
	p.Elasticity, p.ElasticityNotes = elasticityTable(r), elasticityNotes(r)
	p.Lost = lostWrites(r)
	p.Verdicts = verdictViews(r)
	p.Clients, p.ClientSpread = clientsTable(r)
	p.ClientOps = clientOpsTable(r)
	p.Events = eventsTable(r)
	p.Env = envTable(r)
	p.Files = withOutputs(r.Files, figs)
	p.Notes = append(p.Notes, r.Notes...)
	p.Notes = append(p.Notes, msNotes...)
	if r.Summary != nil {
		for _, e := range r.Summary.Errors {
			p.Notes = append(p.Notes, "error: "+e)
		}
		if r.Summary.Failed {
			p.Failures = append(p.Failures, r.Summary.Failures...)
		}
		for _, c := range r.Summary.ChecksSkipped {
			p.Notes = append(p.Notes, "check "+c)
		}
	}
	if r.Analysis != nil {
		for _, n := range r.Analysis.Notes {
			p.Notes = append(p.Notes, "analysis: "+n)
		}
	}
	return p, nil
}

// withOutputs adds report.html and the plots (not written yet on a run's
// first rendering) to the file list.
func withOutputs(files []string, figs []figure) []string {
	seen := map[string]bool{}
	var out []string
	add := func(f string) {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for _, f := range files {
		add(f)
	}
	add(HTMLFile)
	for _, fg := range figs {
		add(PlotsDir + "/" + fg.png)
	}
	sort.Strings(out)
	return out
}

func countWindows(r *Run) int {
	if len(r.Windows) == 0 {
		return 0
	}
	return r.Windows[len(r.Windows)-1].Index + 1
}

func subtitle(r *Run) string {
	parts := []string{r.Name}
	if s := r.Summary; s != nil {
		t := s.Target
		if s.Nodes > 0 {
			t += fmt.Sprintf(" (%d nodes)", s.Nodes)
		}
		parts = append(parts, t)
		if s.TargetOps > 0 {
			parts = append(parts, fmt.Sprintf("%s ops/s target", num(s.TargetOps, 0)))
		} else {
			parts = append(parts, "closed loop")
		}
		if s.Threads > 0 {
			parts = append(parts, fmt.Sprintf("%d threads", s.Threads))
		}
	}
	if t0 := r.Start0(); !t0.IsZero() {
		parts = append(parts, "started "+t0.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	if r.Env != nil && r.Env.Faultbench != "" {
		parts = append(parts, "faultbench "+r.Env.Faultbench)
	}
	return strings.Join(parts, " · ")
}

func cards(r *Run) []card {
	var out []card
	if s := r.Summary; s != nil {
		out = append(out, card{Label: "throughput (ops/s, successful)", Value: num(s.Totals.All.ThroughputOp, 0)})
		out = append(out, card{Label: "operations", Value: strconv.FormatInt(s.Totals.Operations, 10)})
		failed := s.Totals.Operations - s.Totals.OK
		c := card{Label: "failed operations", Value: strconv.FormatInt(failed, 10)}
		if failed > 0 {
			c.Class = "bad"
		}
		out = append(out, c)
		if s.Totals.All.Latency.Count > 0 {
			out = append(out, card{Label: "p99 latency (ms)", Value: msCell(float64(s.Totals.All.Latency.P99))})
		}
		if l := s.Totals.WakeLag; l != nil && l.Count > 0 {
			// how much of that latency is the harness's own
			out = append(out, card{Label: "harness wake-up lag p99 (µs)", Value: strconv.FormatInt(l.P99, 10)})
		}
	}
	if a := r.Analysis; a != nil {
		for i, m := range a.Faults {
			if i == 3 || m.Fault.RestoreOnly() {
				break
			}
			v := naCell(m.DowntimeMs)
			if m.DownAtSpanEnd {
				v += "+"
			}
			out = append(out, card{Label: fmt.Sprintf("downtime (ms), %s", faultLabel(m.Fault)), Value: v})
		}
	}
	if s := r.Summary; s != nil && s.LostWrites != nil {
		if s.LostWrites.OK() {
			out = append(out, card{Label: "lost-writes check", Value: "PASS", Class: "good"})
		} else {
			out = append(out, card{Label: "lost-writes check", Value: "FAIL", Class: "bad"})
		}
	}
	for _, vv := range verdictViews(r) {
		c := card{Label: vv.Checker + " verdict", Value: vv.Word}
		switch vv.Class {
		case "pass":
			c.Class = "good"
		case "fail":
			c.Class = "bad"
		default:
			c.Class = "unknown"
		}
		out = append(out, c)
	}
	return out
}

func faultViews(r *Run, views map[string]figView) []faultView {
	if r.Analysis == nil {
		return nil
	}
	var out []faultView
	i := 0
	for _, m := range r.Analysis.Faults {
		if m.Fault.RestoreOnly() {
			continue
		}
		id := fmt.Sprintf("fault-%d", i+1)
		fv := faultView{ID: "sec-" + id, Title: faultTitle(i, m.Fault, r.End), Error: m.Fault.Error,
			Figure: views[id], Notes: m.Notes}
		fv.Table.Head = []string{"operation", "span", "duration (s)", "throughput (ops/s)", "ok", "failed",
			"mean (ms)", "p50 (ms)", "p95 (ms)", "p99 (ms)", "max (ms)"}
		addStats := func(op string, l analyze.OpLatency) {
			for j, s := range []analyze.LatencyStats{l.Before, l.During, l.After} {
				name := [...]string{"before", "during", "after"}[j]
				label := ""
				if j == 0 {
					label = op
				}
				if s.DurationMs <= 0 {
					fv.Table.add("", label, name, "-", "-", "-", "-", "-", "-", "-", "-", "-")
					continue
				}
				fv.Table.add("", label, name, num(s.DurationMs/1000, 1), num(s.Ops, 0), strconv.FormatInt(s.OKCount, 10),
					strconv.FormatInt(s.ErrorCount, 10), msCell(s.MeanUs), msCell(s.P50Us), msCell(s.P95Us), msCell(s.P99Us), msCell(s.MaxUs))
			}
		}
		addStats("ALL", analyze.OpLatency{Before: m.Before, During: m.During, After: m.After})
		for _, op := range slices.Sorted(maps.Keys(m.PerOp)) {
			addStats(op, m.PerOp[op])
		}
		out = append(out, fv)
		i++
	}
	return out
}

func phasesTable(r *Run) table {
	var t table
	if r.Analysis == nil {
		return t
	}
	t.Head = []string{"phase", "kind", "from (s)", "to (s)", "offered (ops/s)", "throughput (ops/s)", "ok", "failed", "dropped", "p50 (ms)", "p99 (ms)", "max (ms)", "errors by class"}
	var checks []check.PhaseCheck
	if r.Summary != nil && r.Summary.LostWrites != nil {
		checks = r.Summary.LostWrites.Phases
	}
	if len(checks) > 0 {
		t.Head = append(t.Head, "lost writes", "stale / corrupt reads")
	}
	for _, ph := range r.Analysis.Phases {
		var errs []string
		for _, k := range slices.Sorted(maps.Keys(ph.ErrorsByClass)) {
			if v := ph.ErrorsByClass[k]; v > 0 {
				errs = append(errs, fmt.Sprintf("%s %d", k, v))
			}
		}
		offered := "-"
		if ph.OfferedOps > 0 {
			offered = num(ph.OfferedOps, 0)
		}
		cells := []string{ph.Name, ph.Kind, num(ph.FromMs/1000, 1), num(ph.ToMs/1000, 1), offered, num(ph.Ops, 0),
			strconv.FormatInt(ph.OKCount, 10), strconv.FormatInt(ph.ErrorCount, 10), strconv.FormatInt(ph.DroppedCount, 10),
			msCell(ph.P50Us), msCell(ph.P99Us), msCell(ph.MaxUs), strings.Join(errs, ", ")}
		if len(checks) > 0 {
			lost, reads := "-", "-"
			for _, c := range checks {
				if c.Name == ph.Name && c.FromMs == ph.FromMs {
					lost, reads = strconv.Itoa(c.LostWrites), fmt.Sprintf("%d / %d", c.StaleReads, c.CorruptReads)
				}
			}
			cells = append(cells, lost, reads)
		}
		t.add("", cells...)
	}
	return t
}

// availabilityTable is the results table of the run alone: the metric
// rows defs shown on report.html.
func availabilityTable(r *Run, defs []metricRow) table {
	var t table
	if r.Analysis == nil {
		return t
	}
	t.Head = []string{"metric", "value"}
	for _, row := range results(defs, onHTML, []source{r.source()}) {
		switch {
		case row.Header:
			t.Rows = append(t.Rows, tableRow{Class: "group", Cells: []cell{{Text: row.Label}, {Text: row.Cells[0]}}})
		case row.Group != "":
			t.Rows = append(t.Rows, tableRow{Cells: []cell{{Text: row.Label, Class: "sub"}, {Text: row.Cells[0]}}})
		default:
			t.add("", row.Label, row.Cells[0])
		}
	}
	return t
}

func lostWrites(r *Run) *lostView {
	if r.Summary == nil || r.Summary.LostWrites == nil {
		return nil
	}
	lw := r.Summary.LostWrites
	v := &lostView{Verdict: "PASS", Class: "pass", Text: lw.String()}
	if !lw.OK() {
		v.Verdict, v.Class = "FAIL", "fail"
	}
	if len(lw.Examples) > 0 {
		v.Examples.Head = []string{"key", "kind", "found", "last acknowledged", "stale (ms)", "detail"}
		for _, e := range lw.Examples {
			stale := "-"
			if e.StaleMs > 0 {
				stale = strconv.FormatInt(e.StaleMs, 10)
			}
			v.Examples.Rows = append(v.Examples.Rows, tableRow{Cells: []cell{{Text: e.Key}, {Text: e.Kind}, {Text: e.Found},
				{Text: e.Expected}, {Text: stale}, {Text: e.Detail, Class: "text"}}})
		}
	}
	return v
}

func clientsTable(r *Run) (table, string) {
	var t table
	if len(r.Clients) == 0 {
		return t, ""
	}
	t.Head = []string{"client", "ok", "failed", "throughput (ops/s)", "mean (ms)", "p50 (ms)", "p95 (ms)", "p99 (ms)", "max (ms)"}
	for _, c := range r.Clients {
		t.add("", strconv.Itoa(c.ID), strconv.FormatInt(c.OK, 10), strconv.FormatInt(c.Errors, 10), num(c.ThroughputOps, 1),
			msCell(c.MeanUs), msCell(c.P50Us), msCell(c.P95Us), msCell(c.P99Us), msCell(c.MaxUs))
	}
	lo, hi := r.Clients[0].ThroughputOps, r.Clients[0].ThroughputOps
	for _, c := range r.Clients {
		lo, hi = min(lo, c.ThroughputOps), max(hi, c.ThroughputOps)
	}
	spread := fmt.Sprintf("%d clients; throughput %s – %s ops/s per client, coefficient of variation %s %%; p99 latency coefficient of variation %s %%.",
		len(r.Clients), num(lo, 1), num(hi, 1), cvCell(r.Clients, func(c Client) float64 { return c.ThroughputOps }),
		cvCell(r.Clients, func(c Client) float64 { return c.P99Us }))
	if v, ok := cv(r.Clients, func(c Client) float64 { return c.ThroughputOps }); ok {
		if v < analyze.UniformCV {
			spread += fmt.Sprintf(" Throughput CV %.4f < %g: uniform in the scalability study's sense.", v, analyze.UniformCV)
		} else {
			spread += fmt.Sprintf(" Throughput CV %.4f ≥ %g: not uniform in the scalability study's sense.", v, analyze.UniformCV)
		}
	}
	return t, spread
}

// clientOpsTable is the per-operation latency spread across clients from
// summary.json (empty without it or with fewer than two clients).
func clientOpsTable(r *Run) table {
	var t table
	if r.Summary == nil || r.Summary.PerClient == nil || len(r.Summary.PerClient.Clients) < 2 {
		return t
	}
	pc := r.Summary.PerClient
	t.Head = []string{"operation", "mean p95 (ms)", "max p95 (ms)", "p95 CV", "mean p99 (ms)", "max p99 (ms)", "p99 CV"}
	cvText := func(v float64) string {
		if v < 0 {
			return "-"
		}
		return num(v, 4)
	}
	for _, op := range slices.Sorted(maps.Keys(pc.PerOp)) {
		o := pc.PerOp[op]
		t.add("", op, msCell(o.MeanP95Us), msCell(float64(o.MaxP95Us)), cvText(o.P95CV), msCell(o.MeanP99Us), msCell(float64(o.MaxP99Us)), cvText(o.P99CV))
	}
	return t
}

func eventsTable(r *Run) table {
	t := table{Head: []string{"t (s)", "wall clock (UTC)", "kind", "node", "detail", "fault"}}
	t0 := r.Start0()
	for _, e := range r.Events {
		ts := num(e.Since().Seconds(), 3)
		if !t0.IsZero() && e.Wall.Before(t0) {
			ts = num(e.Wall.Sub(t0).Seconds(), 3) + " (before the run)"
		}
		t.Rows = append(t.Rows, tableRow{Cells: []cell{{Text: ts}, {Text: e.Wall.UTC().Format("15:04:05.000")}, {Text: e.Kind, Class: "text"},
			{Text: e.Node, Class: "text"}, {Text: e.Detail, Class: "text"}, {Text: e.Fault, Class: "text"}}})
	}
	return t
}

func envTable(r *Run) table {
	var t table
	e := r.Env
	if e == nil {
		t.add("", "env.json", "missing")
		return t
	}
	ver := e.Faultbench
	if e.Commit != "" && e.Commit != e.Faultbench {
		ver += " (" + e.Commit + ")"
	}
	rows := [][2]string{
		{"faultbench", ver},
		{"Go", e.GoVersion},
		{"target", strings.TrimSpace(e.Target + " " + e.TargetVersion)},
		{"host", e.Hostname},
		{"OS / arch / kernel", e.OS + " / " + e.Arch + " / " + e.Kernel},
		{"CPUs", strings.TrimSpace(strconv.Itoa(e.CPUs) + " " + e.CPUModel)},
		{"memory", fmt.Sprintf("%.1f GiB", float64(e.MemoryBytes)/(1<<30))},
		{"command", strings.Join(e.Command, " ")},
	}
	if !e.Started.IsZero() {
		rows = append(rows, [2]string{"started", e.Started.UTC().Format(time.RFC3339)})
	}
	rows = append(rows, clientSettingsRows(e)...)
	for _, kv := range rows {
		t.Rows = append(t.Rows, tableRow{Cells: []cell{{Text: kv[0]}, {Text: kv[1], Class: "text"}}})
	}
	return t
}

// Finish renders the report of a run that just ended and prints
// "report: <dir>/report.html" to out. A failure is printed to warn as a
// warning and not returned: a run never fails because of its report.
func Finish(ctx context.Context, dir string, out, warn io.Writer) {
	o, err := Render(ctx, dir)
	if err != nil {
		fmt.Fprintf(warn, "warning: report not written: %v\n", err)
		return
	}
	fmt.Fprintf(out, "report: %s\n", o.HTML)
}
