package report

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/runfile"
)

// The report of a scalability sweep (`faultbench sweep`): the scaling
// curve — achieved against offered throughput, and latency percentiles per
// operation, over the steps' load (SB1) or cluster size (SB2, SB3) — and
// the steps' table, from the sweep directory's summary.json alone.

//go:embed assets/sweep.html
var sweepTemplate string

// SweepFile is the name of a sweep directory's summary: the same
// summary.json name as a run's, told apart by its "sweep" key.
const SweepFile = "summary.json"

// IsSweepDir reports whether dir holds a sweep's summary.json.
func IsSweepDir(dir string) bool {
	var probe struct {
		Sweep *string `json:"sweep"`
		Steps []any   `json:"steps"`
	}
	if err := readJSON(filepath.Join(dir, SweepFile), &probe); err != nil {
		return false
	}
	return probe.Sweep != nil && probe.Steps != nil
}

type sweepFigure struct {
	ID, Caption, PNG string
	SVG              template.HTML
}

type sweepPage struct {
	Title, Subtitle string
	CSS             template.CSS
	JS              template.JS
	Failures        []string
	CurveText       string
	Figures         []sweepFigure
	Steps           table
	Env             table
	Scenario        string
	Maps            []recoveryMap // a metastable sweep's recovery maps (recoverymap.go)
}

// sweepX returns the x value of a step and the x axis' label: the
// offered load for SB1 (the achieved throughput of a closed-loop step),
// the cluster size for SB2 and SB3.
func sweepX(sum *rundir.SweepSummary) (func(rundir.SweepStep) float64, string) {
	if sum.Type == "sb1" {
		return func(s rundir.SweepStep) float64 {
			if s.OfferedOps > 0 {
				return s.OfferedOps
			}
			return s.AchievedOps
		}, "offered load (ops/s)"
	}
	if sum.Type == "metastable" {
		return func(s rundir.SweepStep) float64 { return float64(s.Step) }, "step"
	}
	return func(s rundir.SweepStep) float64 { return float64(s.Nodes) }, "nodes"
}

// sweepSpecs lays out the scaling curve: throughput, then one latency
// panel per percentile (p50, p95, p99) with a line per operation, then
// the clients' throughput CV when there was more than one client.
func sweepSpecs(sum *rundir.SweepSummary) []chartSpec {
	var steps []rundir.SweepStep
	for _, s := range sum.Steps {
		if s.Error == "" || s.AchievedOps > 0 {
			steps = append(steps, s)
		}
	}
	xOf, xLabel := sweepX(sum)
	slices.SortStableFunc(steps, func(a, b rundir.SweepStep) int {
		switch xa, xb := xOf(a), xOf(b); {
		case xa < xb:
			return -1
		case xa > xb:
			return 1
		}
		return 0
	})
	xs := make([]float64, len(steps))
	x0, x1 := math.Inf(1), math.Inf(-1)
	for i, s := range steps {
		xs[i] = xOf(s)
		x0, x1 = min(x0, xs[i]), max(x1, xs[i])
	}
	if len(steps) == 0 {
		x0, x1 = 0, 1
	}
	if sum.Type == "sb1" {
		x0 = 0
	} else {
		x0, x1 = x0-0.25, x1+0.25
	}
	tp := []seriesSpec{{Name: "achieved", Color: colAll.solid(), Width: 2, X: xs, Y: values(steps, func(s rundir.SweepStep) float64 { return s.AchievedOps })}}
	if slices.ContainsFunc(steps, func(s rundir.SweepStep) bool { return s.OfferedOps > 0 }) {
		tp = append(tp, seriesSpec{Name: "offered", Color: colKeepUp.solid(), Width: 1, Dash: 4, X: xs,
			Y: values(steps, func(s rundir.SweepStep) float64 {
				if s.OfferedOps > 0 {
					return s.OfferedOps
				}
				return math.NaN()
			})})
	}
	ops := map[string]bool{}
	for _, s := range steps {
		for op := range s.PerOp {
			ops[op] = true
		}
	}
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	slices.Sort(names)
	latPanel := func(label string, f func(rundir.Latency) int64) panelSpec {
		p := panelSpec{YLabel: label, Height: 150, Log: true, Unit: unitLatency, Empty: "no latency"}
		for i, op := range names {
			p.Series = append(p.Series, seriesSpec{Name: op, Color: opColor(i), Width: 1.6, X: xs,
				Y: values(steps, func(s rundir.SweepStep) float64 {
					l, ok := s.PerOp[op]
					if !ok || l.Count == 0 {
						return math.NaN()
					}
					return float64(f(l))
				})})
		}
		return p
	}
	curve := chartSpec{ID: "sweep-curve", Title: fmt.Sprintf("%s: throughput and latency over %s", strings.ToUpper(sum.Type), xLabel),
		X0: x0, X1: x1, XLabel: xLabel,
		Panels: []panelSpec{
			{YLabel: "ops/s", Height: 200, Unit: unitOps, Series: tp, Empty: "no step completed"},
			latPanel("p50", func(l rundir.Latency) int64 { return l.P50 }),
			latPanel("p95", func(l rundir.Latency) int64 { return l.P95 }),
			latPanel("p99", func(l rundir.Latency) int64 { return l.P99 }),
		}}
	specs := []chartSpec{curve}
	if slices.ContainsFunc(steps, func(s rundir.SweepStep) bool { return s.ClientThroughputCV >= 0 }) {
		specs = append(specs, chartSpec{ID: "sweep-cv", Title: "Per-client spread: coefficient of variation of the clients' throughput",
			X0: x0, X1: x1, XLabel: xLabel, Width: 720,
			Panels: []panelSpec{{YLabel: "CV", Height: 120, Unit: unitCount, Series: []seriesSpec{
				{Name: "throughput CV", Color: colAll.solid(), Width: 1.6, X: xs, Y: values(steps, func(s rundir.SweepStep) float64 {
					if s.ClientThroughputCV < 0 {
						return math.NaN()
					}
					return s.ClientThroughputCV
				})},
				{Name: "uniform below 0.01", Color: colKeepUp.solid(), Width: 1, Dash: 4, X: []float64{x0, x1}, Y: []float64{0.01, 0.01}},
			}}}})
	}
	return specs
}

func values(steps []rundir.SweepStep, f func(rundir.SweepStep) float64) []float64 {
	out := make([]float64, len(steps))
	for i, s := range steps {
		out[i] = f(s)
	}
	return out
}

// sweepStepsTable is the steps' table of the page.
func sweepStepsTable(sum *rundir.SweepSummary) table {
	ops := map[string]bool{}
	for _, s := range sum.Steps {
		for op := range s.PerOp {
			ops[op] = true
		}
	}
	var names []string
	for op := range ops {
		names = append(names, op)
	}
	slices.Sort(names)
	t := table{Head: []string{"step", "nodes", "threads", "offered (ops/s)", "achieved (ops/s)", "errors"}}
	for _, op := range names {
		t.Head = append(t.Head, op+" p50 / p95 / p99 (ms)")
	}
	t.Head = append(t.Head, "client CV", "run")
	for _, s := range sum.Steps {
		offered := "closed loop"
		if s.OfferedOps > 0 {
			offered = num(s.OfferedOps, 0)
		}
		row := tableRow{}
		if s.Error != "" {
			row.Class = "fail"
		}
		row.Cells = append(row.Cells, cell{Text: strconv.Itoa(s.Step)}, cell{Text: strconv.Itoa(s.Nodes)}, cell{Text: strconv.Itoa(s.Threads)},
			cell{Text: offered}, cell{Text: num(s.AchievedOps, 1)}, cell{Text: strconv.FormatInt(s.Errors, 10)})
		for _, op := range names {
			l, ok := s.PerOp[op]
			if !ok {
				row.Cells = append(row.Cells, cell{Text: "-"})
				continue
			}
			row.Cells = append(row.Cells, cell{Text: msCell(float64(l.P50)) + " / " + msCell(float64(l.P95)) + " / " + msCell(float64(l.P99))})
		}
		cv := "-"
		if s.ClientThroughputCV >= 0 {
			cv = num(s.ClientThroughputCV, 4)
		}
		row.Cells = append(row.Cells, cell{Text: cv})
		link := cell{Text: "-"}
		if s.Dir != "" {
			link = cell{Text: s.Dir, Href: s.Dir + "/report.html", Class: "text"}
		}
		if s.Error != "" {
			link.Text += " — failed: " + s.Error
		}
		row.Cells = append(row.Cells, link)
		t.Rows = append(t.Rows, row)
	}
	return t
}

// RenderSweep writes dir/report.html and plots/sweep-*.png of a sweep
// directory from sum, or from dir/summary.json when sum is nil.
func RenderSweep(ctx context.Context, dir string, sum *rundir.SweepSummary) (*Output, error) {
	if sum == nil {
		sum = &rundir.SweepSummary{}
		if err := readJSON(filepath.Join(dir, SweepFile), sum); err != nil {
			return nil, fmt.Errorf("report: %s: %w", filepath.Join(dir, SweepFile), err)
		}
	}
	f, err := newFonts()
	if err != nil {
		return nil, err
	}
	css, _ := assets.ReadFile("assets/report.css")
	js, _ := assets.ReadFile("assets/report.js")
	tmpl, err := template.New("sweep").Parse(sweepTemplate)
	if err != nil {
		return nil, fmt.Errorf("report: template: %w", err)
	}
	done := 0
	for _, s := range sum.Steps {
		if s.Error == "" {
			done++
		}
	}
	p := &sweepPage{Title: "Sweep: " + sum.Sweep, CSS: template.CSS(css), JS: template.JS(js), Failures: sum.Failures,
		Subtitle: fmt.Sprintf("%s on %s, workload %s · %d of %d planned steps completed · %s", strings.ToUpper(sum.Type), sum.Target, sum.Workload, done, sum.Planned, sum.File),
		Steps:    sweepStepsTable(sum)}
	switch sum.Type {
	case "sb1":
		p.CurveText = "SB1: the capacity is fixed and the offered load changes between runs. The top panel puts the achieved throughput (solid) against the offered load (dashed: achieved = offered); below, the latency percentiles of each operation type (log scale)."
	case "sb2":
		p.CurveText = "SB2: the offered load is fixed and the cluster size changes between runs. The top panel is the achieved throughput against the offered load (dashed); below, the latency percentiles of each operation type (log scale) over the cluster size."
	case "metastable":
		p.CurveText = "The recovery map's steps by step number: the achieved throughput of each run over the whole measured run (the figures per run are in each step's report)."
		p.Maps = recoveryMaps(sum)
	default:
		p.CurveText = "SB3: cluster size and offered load grow together. Linear scaling is achieved throughput on the dashed offered line with flat latency."
	}
	var env rundir.Env
	if err := readJSON(filepath.Join(dir, "env.json"), &env); err == nil {
		p.Env = envTable(&Run{Env: &env})
	}
	if b, err := runfile.ReadFile(filepath.Join(dir, "scenario.yaml")); err == nil {
		p.Scenario = string(b)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("report: %w", err)
	}
	var canvases []*canvas
	var pngs []string
	for _, s := range sweepSpecs(sum) {
		c := layout(s, f.measure)
		var b strings.Builder
		writeSVG(&b, c)
		png := s.ID + ".png"
		p.Figures = append(p.Figures, sweepFigure{ID: c.id, Caption: c.title, PNG: png, SVG: template.HTML(b.String())})
		canvases, pngs = append(canvases, c), append(pngs, png)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, p); err != nil {
		return nil, fmt.Errorf("report: template: %w", err)
	}
	return writeOutputs(ctx, dir, buf.Bytes(), pngs, canvases)
}
