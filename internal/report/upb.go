package report

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"html/template"
	"strings"

	"github.com/faultbench/faultbench/internal/rundir"
)

// The report of a UPB run (`faultbench upb`, the Under Pressure Benchmark). internal/upb reads
// the run directory and fills a UPBReport; RenderUPB lays it out with the
// charts, style sheet and script of the run report.

//go:embed assets/upb.html
var upbTemplate string

// UPBReport is what report.html of a UPB run shows.
type UPBReport struct {
	Dir      string // the UPB run directory; report.html and plots/ go here
	Title    string // e.g. "UPB: upb-etcd"
	Subtitle string
	Cards    []UPBCard
	// Params are the parameters of the run: name, value.
	Params [][2]string
	// Lc is the L_c calibration (Table IV); nil when L_c was given or not
	// measured yet.
	Lc *UPBSearch
	// Searches are the T(K,F) searches (one Table V each), in the order run.
	Searches []UPBSearch
	// Metrics are Tables VI–X.
	Metrics  []UPBTable
	KeepUp   float64     // keep-up tolerance: the lower line of the probe curves
	Scenario string      // scenario.yaml, verbatim
	Env      *rundir.Env // env.json; nil when missing
	// Files are links (relative to Dir) to the run's files.
	Files []string
	// Notes are errors of the run and what was missing while reading it.
	Notes []string
}

// UPBCard is one headline number.
type UPBCard struct {
	Label, Value string
	Bad          bool
}

// UPBTable is one table of the paper, as text cells (the terminal's).
type UPBTable struct {
	Title string
	Head  []string
	Rows  [][]string
	// RowClass is a class per row: "t" (the row of T), "fail", "hint" or ""
	// (written as row-t, row-fail, row-hint).
	RowClass []string
	Notes    []string
}

// UPBSearch is one search: the L_c calibration (Table IV) or Algorithm 1
// for one (K, F) (Table V), with its probes.
type UPBSearch struct {
	ID     string // unique, file-name safe: "lc", "k1-f0"
	Title  string // section heading
	Table  UPBTable
	Name   string // short name for the chart's title: "L_c calibration", "T(1,0) search"
	XLabel string // what the offered load is: "Q" or "Q_total"
	// TLabel is written beside the ringed probe, e.g. "T(1,0) = 4219 ops/s".
	TLabel string
	Probes []UPBProbe
	Error  string
}

// UPBProbe is one probe: its place on the probe curve and its run's
// throughput over time.
type UPBProbe struct {
	Name      string // e.g. "step 3 · 2 clients · 1320 ops/s"
	Dir       string // its run directory, relative to the UPB run directory
	Hint      bool   // the closed-loop run of a bisect search
	Offered   float64
	Achieved  float64
	Sustained bool
	T         bool   // the probe whose achieved tps is the search's result
	Verdict   string // "sustained" or "not sustained: ..."
	// Times and TPS are the run's windows: start (s since the run's t = 0)
	// and successful operations per second; empty when windows.csv is
	// missing (Missing says why).
	Times, TPS []float64
	Window     float64 // window length, s
	WarmupEnd  float64 // end of the warm-up, s (0: none)
	From, To   float64 // the measured (steady) window, s; To ≤ From: none
	Missing    string
}

// upbFigure is a laid-out chart of the page.
type upbFigure struct {
	ID, Caption, PNG, Class string
	SVG                     template.HTML
	Link                    string
}

type upbSearchView struct {
	ID, Title, Error string
	TableTitle       string
	Table            table
	Notes            []string
	Curve            upbFigure
	Probes           []upbFigure
	Sustained, Total int
}

type upbPage struct {
	Title, Subtitle string
	CSS             template.CSS
	JS              template.JS
	Cards           []UPBCard
	Params          table
	Lc              *upbSearchView
	Searches        []upbSearchView
	Metrics         []upbTableView
	Scenario        string
	Env             table
	Files           []string
	Notes           []string
}

type upbTableView struct {
	Title string
	Table table
	Notes []string
}

func (t UPBTable) view() table {
	out := table{Head: t.Head}
	for i, r := range t.Rows {
		row := tableRow{}
		if i < len(t.RowClass) && t.RowClass[i] != "" {
			row.Class = "row-" + t.RowClass[i]
		}
		for j, c := range r {
			cl := ""
			if j == len(r)-1 && len(r) > 3 {
				cl = "text"
			}
			row.Cells = append(row.Cells, cell{Text: c, Class: cl})
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

// Probe charts' geometry: small multiples, three to a row.
const (
	probeChartW = 336.0
	probeChartH = 84.0
	curveW      = 720.0
	curveH      = 400.0
)

// RenderUPB writes u.Dir/report.html and, with pngs, the probe curves as
// u.Dir/plots/upb-<search>.png.
func RenderUPB(ctx context.Context, u *UPBReport, pngs bool) (*Output, error) {
	f, err := newFonts()
	if err != nil {
		return nil, err
	}
	css, _ := assets.ReadFile("assets/report.css")
	js, _ := assets.ReadFile("assets/report.js")
	tmpl, err := template.New("upb").Parse(upbTemplate)
	if err != nil {
		return nil, fmt.Errorf("report: template: %w", err)
	}
	p := &upbPage{Title: u.Title, Subtitle: u.Subtitle, CSS: template.CSS(css), JS: template.JS(js),
		Cards: u.Cards, Scenario: u.Scenario, Files: u.Files, Notes: u.Notes}
	p.Params.Head = []string{"parameter", "value"}
	for _, kv := range u.Params {
		p.Params.Rows = append(p.Params.Rows, tableRow{Cells: []cell{{Text: kv[0]}, {Text: kv[1], Class: "text"}}})
	}
	p.Env = envTable(&Run{Env: u.Env})

	var curves []*canvas
	var pngNames []string
	view := func(s *UPBSearch) upbSearchView {
		v := upbSearchView{ID: "sec-" + s.ID, Title: s.Title, Error: s.Error, TableTitle: s.Table.Title,
			Table: s.Table.view(), Notes: s.Table.Notes}
		c := layoutXY(curveSpec(s, u.KeepUp), f.measure)
		png := "upb-" + fileSafe(s.ID) + ".png"
		var b strings.Builder
		writeSVG(&b, c)
		v.Curve = upbFigure{ID: c.id, Caption: c.title, PNG: png, SVG: template.HTML(b.String())}
		curves, pngNames = append(curves, c), append(pngNames, png)
		for i, pr := range s.Probes {
			if !pr.Hint {
				v.Total++
				if pr.Sustained {
					v.Sustained++
				}
			}
			pc := layout(probeSpec(s.ID, i, pr), f.measure)
			var pb strings.Builder
			writeSVG(&pb, pc)
			class := "probe-ok"
			switch {
			case pr.Hint:
				class = "probe-hint"
			case !pr.Sustained:
				class = "probe-fail"
			}
			if pr.T {
				class += " probe-t"
			}
			caption := pr.Verdict
			if pr.Missing != "" {
				caption += " · " + pr.Missing
			}
			v.Probes = append(v.Probes, upbFigure{ID: pc.id, Caption: caption, Class: class, SVG: template.HTML(pb.String()), Link: pr.Dir})
		}
		return v
	}
	if u.Lc != nil {
		v := view(u.Lc)
		p.Lc = &v
	}
	for i := range u.Searches {
		p.Searches = append(p.Searches, view(&u.Searches[i]))
	}
	for _, t := range u.Metrics {
		p.Metrics = append(p.Metrics, upbTableView{Title: t.Title, Table: t.view(), Notes: t.Notes})
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, p); err != nil {
		return nil, fmt.Errorf("report: template: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !pngs {
		curves = nil
	}
	return writeOutputs(ctx, u.Dir, buf.Bytes(), pngNames, curves)
}

// curveSpec is the probe curve of a search.
func curveSpec(s *UPBSearch, keepUp float64) xySpec {
	spec := xySpec{ID: "curve-" + s.ID, Title: s.Name + ": offered " + s.XLabel + " against achieved throughput",
		Width: curveW, Height: curveH, XLabel: "offered " + s.XLabel + " (ops/s)", YLabel: "achieved (ops/s)", KeepUp: keepUp}
	for _, pr := range s.Probes {
		if pr.Hint {
			spec.Hint = max(spec.Hint, pr.Achieved)
			continue
		}
		pt := xyPoint{X: pr.Offered, Y: pr.Achieved, Sustained: pr.Sustained, T: pr.T,
			Title: fmt.Sprintf("%s: achieved %s ops/s; %s", pr.Name, num(pr.Achieved, 0), pr.Verdict)}
		if pr.T {
			pt.Label = s.TLabel
		}
		spec.Points = append(spec.Points, pt)
	}
	return spec
}

// probeSpec is the small throughput-over-time chart of one probe: the
// warm-up shaded grey, the measured window green (sustained) or red.
func probeSpec(search string, i int, pr UPBProbe) chartSpec {
	x1 := 1.0
	if n := len(pr.Times); n > 0 {
		x1 = pr.Times[n-1] + pr.Window
	}
	x1 = max(x1, pr.To)
	xs := make([]float64, len(pr.Times))
	for j, t := range pr.Times {
		xs[j] = t + pr.Window/2
	}
	series := []seriesSpec{{Name: "achieved", Color: colAll.solid(), Width: 1.3, X: xs, Y: pr.TPS}}
	if !pr.Hint && pr.Offered > 0 {
		series = append(series, seriesSpec{Name: "offered", Color: colKeepUp.solid(), Width: 1, Dash: 3,
			X: []float64{0, x1}, Y: []float64{pr.Offered, pr.Offered}})
	}
	spec := chartSpec{ID: fmt.Sprintf("probe-%s-%02d", search, i+1), Title: pr.Name, Width: probeChartW,
		X0: 0, X1: x1, XLabel: "time (s)",
		Panels: []panelSpec{{YLabel: "ops/s", Height: probeChartH, Unit: unitOps, Series: series, Empty: "no windows"}}}
	if pr.WarmupEnd > 0 {
		spec.Shades = append(spec.Shades, spanSpec{From: 0, To: pr.WarmupEnd, Color: colWarmup.a(0.12),
			Title: fmt.Sprintf("warm-up: 0 – %s s", fnum(pr.WarmupEnd, 2))})
	}
	if pr.To > pr.From {
		col, what := colSustained, "measured window"
		if !pr.Sustained && !pr.Hint {
			col = colFailed
		}
		if pr.Hint {
			what = "closed-loop run"
		}
		spec.Shades = append(spec.Shades, spanSpec{From: pr.From, To: pr.To, Color: col.a(0.13), Class: "measure-span",
			Title: fmt.Sprintf("%s: %s – %s s, %s ops/s", what, fnum(pr.From, 2), fnum(pr.To, 2), num(pr.Achieved, 0))})
	}
	return spec
}
