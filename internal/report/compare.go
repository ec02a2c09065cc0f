package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/texttable"
)

// Format is an output format of compare.
type Format string

// The formats of compare.
const (
	FormatText     Format = "text" // aligned columns for the terminal
	FormatMarkdown Format = "md"   // a GitHub-flavoured Markdown table
	FormatCSV      Format = "csv"  // section, group, metric, then one column per run
	FormatHTML     Format = "html" // a self-contained page: the table and the runs' charts overlaid
)

// Formats lists the formats in the order help texts show them.
func Formats() []Format { return []Format{FormatText, FormatMarkdown, FormatCSV, FormatHTML} }

// ParseFormat validates a format name ("markdown" is accepted for "md").
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "text", "txt", "":
		return FormatText, nil
	case "md", "markdown":
		return FormatMarkdown, nil
	case "csv":
		return FormatCSV, nil
	case "html":
		return FormatHTML, nil
	}
	return "", fmt.Errorf("unknown format %q (text, md, csv or html)", s)
}

// CompareOptions control compare's output.
type CompareOptions struct {
	Format Format
	// LinkBase is the directory the HTML output is written to: links to the
	// runs' report.html are made relative to it ("" = the current directory).
	LinkBase string
	// IncludeInvalid compares runs marked invalid (the offered load was
	// not met before the first fault) too; without it Compare refuses them.
	IncludeInvalid bool
}

// Compare loads the run directories and writes their side-by-side
// comparison to w: one column per run; rows are the run's settings and
// totals, key latencies, the availability metrics of every fault (the
// NoSQL failover study's results table), the lost-write check and the clients' spread.
func Compare(ctx context.Context, w io.Writer, dirs []string, opt CompareOptions) error {
	if len(dirs) == 0 {
		return fmt.Errorf("compare: no run directories")
	}
	runs := make([]*Run, 0, len(dirs))
	for _, d := range dirs {
		if sum, _ := readTrials(d); sum != nil { // the parent of a run with trials
			runs = append(runs, &Run{Dir: d, Name: filepath.Base(filepath.Clean(d)), Summary: sum,
				Window: time.Duration(sum.WindowMs * float64(time.Millisecond))})
			continue
		}
		r, err := Load(ctx, d)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	if err := refuseInvalid(runs, opt); err != nil {
		return err
	}
	return WriteCompare(w, runs, opt)
}

// refuseInvalid is an error naming the runs marked invalid, unless
// opt.IncludeInvalid: their figures measure an overloaded client or
// machine, and side by side with valid runs they would be read as a
// ranking of the databases.
func refuseInvalid(runs []*Run, opt CompareOptions) error {
	if opt.IncludeInvalid {
		return nil
	}
	var bad []string
	for _, r := range runs {
		if r.Analysis != nil && r.Analysis.Invalid {
			bad = append(bad, fmt.Sprintf("%s: %s", r.Name, strings.Join(r.Analysis.InvalidReasons, "; ")))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("compare: %d of %d runs are invalid (the offered load was not met before the first fault), not compared without --include-invalid:\n  %s",
		len(bad), len(runs), strings.Join(bad, "\n  "))
}

// WriteCompare writes the comparison of loaded runs.
func WriteCompare(w io.Writer, runs []*Run, opt CompareOptions) error {
	return writeCompare(w, runs, opt, metricRows())
}

// writeCompare writes the comparison of runs with the metric rows defs.
func writeCompare(w io.Writer, runs []*Run, opt CompareOptions, defs []metricRow) error {
	srcs := make([]source, len(runs))
	for i, r := range runs {
		srcs[i] = r.source()
	}
	rows := results(defs, onCompare, srcs)
	rows = append(rows, trialDifferences(srcs)...)
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = r.Name
	}
	switch opt.Format {
	case FormatText, "":
		_, err := io.WriteString(w, compareText(names, rows))
		return err
	case FormatMarkdown:
		_, err := io.WriteString(w, compareMarkdown(names, rows))
		return err
	case FormatCSV:
		return compareCSV(w, names, rows)
	case FormatHTML:
		return compareHTML(w, runs, names, rows, opt)
	}
	return fmt.Errorf("compare: unknown format %q", opt.Format)
}

// rowLabel is the first column of text and Markdown: group rows indented.
func rowLabel(r resultRow) string {
	if r.Group != "" && !r.Header {
		return "  " + r.Label
	}
	return r.Label
}

func compareText(names []string, rows []resultRow) string {
	grid := [][]string{append([]string{"metric"}, names...)}
	section := ""
	for _, r := range rows {
		if r.Section != section {
			section = r.Section
			grid = append(grid, append([]string{"[" + section + "]"}, make([]string, len(names))...))
		}
		grid = append(grid, append([]string{rowLabel(r)}, r.Cells...))
	}
	return texttable.Format(grid, texttable.Options{})
}

func compareMarkdown(names []string, rows []resultRow) string {
	var b strings.Builder
	mdCell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	b.WriteString("| metric |")
	for _, n := range names {
		b.WriteString(" " + mdCell(n) + " |")
	}
	b.WriteString("\n|:---|")
	for range names {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	section := ""
	for _, r := range rows {
		if r.Section != section {
			section = r.Section
			b.WriteString("| **" + section + "** |" + strings.Repeat(" |", len(names)) + "\n")
		}
		label := mdCell(r.Label)
		switch {
		case r.Header:
			label = "*" + label + "*"
		case r.Group != "":
			label = "&nbsp;&nbsp;" + label
		}
		b.WriteString("| " + label + " |")
		for _, c := range r.Cells {
			b.WriteString(" " + mdCell(c) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func compareCSV(w io.Writer, names []string, rows []resultRow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(append([]string{"section", "group", "metric"}, names...)); err != nil {
		return err
	}
	for _, r := range rows {
		label := r.Label
		if r.Header {
			label = "fault"
		}
		if err := cw.Write(append([]string{r.Section, r.Group, label}, r.Cells...)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// comparePage is the data of the compare template.
type comparePage struct {
	CSS    template.CSS
	JS     template.JS
	Runs   []compareRun
	Table  table
	Charts []figView
	Note   string
}

type compareRun struct {
	N                 int
	Name, Title, Link string
	Align             string
}

const compareTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="faultbench">
<title>faultbench compare</title>
<style>{{.CSS}}</style>
</head>
<body>
<main>
<header><h1>faultbench compare</h1><div class="sub">{{len .Runs}} runs, one column each</div></header>
<h2>Runs</h2>
<table><thead><tr><th>#</th><th class="text">run directory</th><th class="text">title</th><th class="text">aligned at</th></tr></thead><tbody>
{{range .Runs}}<tr><td>{{.N}}</td><td class="text"><a href="{{.Link}}">{{.Name}}</a></td><td class="text">{{.Title}}</td><td class="text">{{.Align}}</td></tr>
{{end}}</tbody></table>
<h2>Results</h2>
<div class="scroll">{{template "table" .Table}}</div>
<h2>Charts, aligned at the first fault</h2>
<p class="muted">{{.Note}}</p>
{{range .Charts}}<figure id="fig-{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
{{end}}
</main>
<div id="tip"></div>
<script>{{.JS}}</script>
</body>
</html>
{{define "table"}}<table>{{if .Head}}<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>{{end}}<tbody>
{{range .Rows}}<tr{{if .Class}} class="{{.Class}}"{{end}}>{{range .Cells}}<td{{if .Class}} class="{{.Class}}"{{end}}{{if .Span}} colspan="{{.Span}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</tbody></table>{{end}}
`

func compareHTML(w io.Writer, runs []*Run, names []string, rows []resultRow, opt CompareOptions) error {
	css, _ := assets.ReadFile("assets/report.css")
	js, _ := assets.ReadFile("assets/report.js")
	p := comparePage{CSS: template.CSS(css), JS: template.JS(js),
		Note: "Throughput and p99 latency (all operations) of every run on one time axis: t = 0 is each run's first fault (the start of the run for a run without faults). Shaded bands are the runs' faults, in the run's colour."}
	p.Table.Head = append([]string{"metric"}, names...)
	for i := range p.Table.Head[1:] {
		p.Table.Head[i+1] = fmt.Sprintf("%d: %s", i+1, names[i])
	}
	section := ""
	for _, r := range rows {
		if r.Section != section {
			section = r.Section
			p.Table.Rows = append(p.Table.Rows, tableRow{Class: "section", Cells: []cell{{Text: section, Span: len(names) + 1}}})
		}
		row := tableRow{}
		switch {
		case r.Header:
			row.Class = "group"
			row.Cells = append(row.Cells, cell{Text: r.Label})
		case r.Group != "":
			row.Cells = append(row.Cells, cell{Text: r.Label, Class: "sub"})
		default:
			row.Cells = append(row.Cells, cell{Text: r.Label})
		}
		for _, c := range r.Cells {
			row.Cells = append(row.Cells, cell{Text: c})
		}
		p.Table.Rows = append(p.Table.Rows, row)
	}
	for i, r := range runs {
		link := filepath.Join(r.Dir, HTMLFile)
		if abs, err := filepath.Abs(link); err == nil {
			base := opt.LinkBase
			if base == "" {
				base = "."
			}
			if b, err := filepath.Abs(base); err == nil {
				if rel, err := filepath.Rel(b, abs); err == nil {
					link = rel
				}
			}
		}
		cr := compareRun{N: i + 1, Name: r.Name, Title: r.Title(), Link: filepath.ToSlash(link), Align: "start of run (no fault)"}
		if fs := r.RunFaults(); len(fs) > 0 {
			cr.Align = faultLabel(fs[0]) + " at " + fnum(fs[0].At.Seconds(), 3) + " s"
		}
		p.Runs = append(p.Runs, cr)
	}
	f, err := newFonts()
	if err != nil {
		return err
	}
	var windowed []*Run // the parents of runs with trials have no windows of their own
	for _, r := range runs {
		if len(r.Windows) > 0 {
			windowed = append(windowed, r)
		}
	}
	var specs []chartSpec
	if len(windowed) > 0 {
		specs = overlayCharts(windowed)
	}
	for _, spec := range specs {
		var b strings.Builder
		writeSVG(&b, layout(spec, f.measure))
		p.Charts = append(p.Charts, figView{ID: spec.ID, Caption: spec.Title, SVG: template.HTML(b.String())})
	}
	tmpl, err := template.New("compare").Parse(compareTemplate)
	if err != nil {
		return fmt.Errorf("compare: template: %w", err)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, p); err != nil {
		return fmt.Errorf("compare: template: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// alignAt is where a run's time axis is aligned: its first fault, else 0.
func alignAt(r *Run) time.Duration {
	if fs := r.RunFaults(); len(fs) > 0 {
		return fs[0].At
	}
	return 0
}

// overlayCharts draws every run's throughput and p99 latency on one time
// axis, aligned at each run's first fault.
func overlayCharts(runs []*Run) []chartSpec {
	x0, x1 := math.Inf(1), math.Inf(-1)
	var tp, lat []seriesSpec
	var spans []spanSpec
	for i, r := range runs {
		s := newSeries(r)
		off := alignAt(r).Seconds()
		xs := make([]float64, len(s.mid))
		for k, v := range s.mid {
			xs[k] = v - off
		}
		x0, x1 = min(x0, -off), max(x1, r.End.Seconds()-off)
		col := opColor(i)
		if i == 0 {
			col = colAll.solid()
		}
		name := fmt.Sprintf("%d: %s", i+1, r.Title())
		tp = append(tp, seriesSpec{Name: name, Color: col, Width: 1.2, X: xs, Y: s.values(measure.AllOps, throughput)})
		lat = append(lat, seriesSpec{Name: name, Color: col, Width: 1.2, X: xs,
			Y: s.values(measure.AllOps, latency(func(w *measure.WindowRow) float64 { return w.P99Us }))})
		for j, f := range r.RunFaults() {
			to := r.End
			if f.Restored() && f.RestoreAt < r.End {
				to = f.RestoreAt
			}
			spans = append(spans, spanSpec{From: f.At.Seconds() - off, To: to.Seconds() - off,
				Label: fmt.Sprintf("%d: %s", i+1, faultLabel(f)), Title: fmt.Sprintf("run %d, %s", i+1, faultTitle(j, f, r.End)), Color: col})
		}
	}
	xl := "time since the first fault (s)"
	return []chartSpec{
		{ID: "compare-throughput", Title: "Throughput, all operations", X0: x0, X1: x1, XLabel: xl, Spans: spans,
			Panels: []panelSpec{{YLabel: "throughput (ops/s)", Height: 240, Unit: unitOps, Series: tp}}},
		{ID: "compare-latency", Title: "p99 latency, all operations", X0: x0, X1: x1, XLabel: xl, Spans: spans,
			Panels: []panelSpec{{YLabel: "p99 latency (log)", Height: 240, Log: true, Unit: unitLatency, Series: lat}}},
	}
}
