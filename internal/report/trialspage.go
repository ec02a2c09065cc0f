package report

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"math"
	"path/filepath"
	"strings"

	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/stats"
)

// readTrials returns dir's summary.json when it has a trials section; nil
// when the directory is not the parent of a run with trials.
func readTrials(dir string) (*rundir.Summary, error) {
	var sum rundir.Summary
	if err := readJSON(filepath.Join(dir, "summary.json"), &sum); err != nil {
		return nil, nil // no or a broken summary: Load says what is wrong
	}
	if sum.Trials == nil {
		return nil, nil
	}
	return &sum, nil
}

// stripPlot draws one metric's trials as a strip plot: each trial a dot at
// its value (a link to the trial's own report), the mean as a line and
// the 95 % interval as a band.
func stripPlot(id string, m rundir.TrialMetric, runs map[int]rundir.TrialRun) *canvas {
	const w, h, left, right, top = 720.0, 92.0, 16.0, 16.0, 14.0
	c := &canvas{id: id, title: metricTitle(m), w: w, h: h}
	axisY := h - 30
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range m.Values {
		lo, hi = math.Min(lo, v.V), math.Max(hi, v.V)
	}
	if m.Judged() {
		lo, hi = math.Min(lo, *m.CI95Low), math.Max(hi, *m.CI95High)
	}
	if len(m.Values) == 0 {
		c.text(w/2, axisY-20, "no trial has a value", 12, anchorMiddle, rgb(0x666666).solid(), false)
		return c
	}
	if hi-lo < 1e-9 {
		lo, hi = lo-1, hi+1
	}
	pad := (hi - lo) * 0.05
	ticks := niceTicks(lo-pad, hi+pad, 6)
	lo, hi = math.Min(lo-pad, ticks[0]), math.Max(hi+pad, ticks[len(ticks)-1])
	x := func(v float64) float64 { return left + (v-lo)/(hi-lo)*(w-left-right) }
	grey := rgb(0x888888).solid()
	c.line(left, axisY, w-right, axisY, grey, 1, 0, "axis")
	for _, t := range ticks {
		c.line(x(t), axisY, x(t), axisY+4, grey, 1, 0, "tick")
		c.text(x(t), axisY+16, trialNum(t), 11, anchorMiddle, rgb(0x444444).solid(), false)
	}
	blue := rgb(0x1f77b4)
	if m.Judged() {
		c.rect(x(*m.CI95Low), top, math.Max(1, x(*m.CI95High)-x(*m.CI95Low)), axisY-top-4, blue.a(0.12), "ci95",
			fmt.Sprintf("95 %% interval of the mean: %s .. %s", trialNum(*m.CI95Low), trialNum(*m.CI95High)))
	}
	c.line(x(m.Mean), top, x(m.Mean), axisY-4, blue.solid(), 2, 0, "mean")
	for i, v := range m.Values {
		y := top + 8 + float64(i%5)*((axisY-top-20)/4) // spread dots of equal values
		r := runs[v.K]
		c.add(prim{kind: primLink, title: r.Dir + "/report.html"})
		c.add(prim{kind: primGroup, class: "trial", title: fmt.Sprintf("trial %d (seed %d): %s", v.K, r.Seed, trialNum(v.V))})
		c.add(prim{kind: primPath, segs: [][]float64{{x(v.V), y, x(v.V) + 0.01, y}}, stroke: rgb(0xd62728).a(0.85), width: 9, class: "dot"})
		c.add(prim{kind: primEnd})
		c.add(prim{kind: primLinkEnd})
	}
	return c
}

var trialsPage = template.Must(template.New("trials").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="faultbench">
<title>{{.Title}} — faultbench trials</title>
<style>{{.CSS}}</style>
</head>
<body>
<main>
<header>
<h1>{{.Title}}</h1>
<div class="sub">{{.Subtitle}}</div>
</header>
<section id="metrics">
<h2>Metrics over the trials</h2>
<p class="muted">Each metric over the trials: the mean with its bootstrap 95 % interval ({{.Resamples}} resamples, seeded; not judged below {{.MinJudged}} trials), p50, p90, max and n (the trials with a value). In each plot a dot is one trial (click it for the trial's own report), the line is the mean and the band the interval.</p>
<table><thead><tr><th>metric</th><th>mean [95 % interval]</th><th>p50</th><th>p90</th><th>max</th><th>n</th><th>no value</th></tr></thead><tbody>
{{range .Metrics}}<tr><td class="text"><a href="#{{.ID}}">{{.Title}}</a></td><td>{{.Interval}}</td><td>{{.P50}}</td><td>{{.P90}}</td><td>{{.Max}}</td><td>{{.N}}</td><td class="text">{{.Missing}}</td></tr>
{{end}}</tbody></table>
{{range .Metrics}}<h3 id="{{.ID}}">{{.Title}}</h3>
<figure>{{.SVG}}</figure>
{{end}}
</section>
<section id="trials">
<h2>Trials</h2>
<p class="muted">Replay one trial exactly with <code>--trial K --seed {{.Seed}}</code>.</p>
<table><thead><tr><th>trial</th><th>seed</th><th>fault times (ms)</th><th>victims</th><th>run</th><th>status</th></tr></thead><tbody>
{{range .Runs}}<tr><td>{{.K}}</td><td>{{.Seed}}</td><td>{{.FaultAt}}</td><td class="text">{{.Victims}}</td><td class="text"><a href="{{.Dir}}/report.html">{{.Dir}}</a></td><td class="text">{{.Status}}</td></tr>
{{end}}</tbody></table>
</section>
</main>
</body>
</html>
`))

type trialsMetricView struct {
	ID, Title, Interval, P50, P90, Max, Missing string
	N                                           int
	SVG                                         template.HTML
}

type trialsRunView struct {
	K                             int
	Seed                          uint64
	FaultAt, Victims, Dir, Status string
}

// RenderTrials writes the report.html of the parent of a run with trials.
func RenderTrials(ctx context.Context, dir string, sum *rundir.Summary) (*Output, error) {
	t := sum.Trials
	runs := map[int]rundir.TrialRun{}
	for _, r := range t.Runs {
		runs[r.K] = r
	}
	css, _ := assets.ReadFile("assets/report.css")
	view := struct {
		Title, Subtitle      string
		CSS                  template.CSS
		Resamples, MinJudged int
		Seed                 uint64
		Metrics              []trialsMetricView
		Runs                 []trialsRunView
	}{
		Title:     fmt.Sprintf("%s: %d trials", sum.Scenario, len(t.Runs)),
		Subtitle:  fmt.Sprintf("%s, %d nodes; seed %d; %s clusters", sum.Target, sum.Nodes, t.Seed, t.Mode),
		CSS:       template.CSS(css),
		Resamples: t.Resamples, MinJudged: stats.MinJudged, Seed: t.Seed,
	}
	for i, k := range trialKeys(t) {
		m := t.Metrics[k]
		v := trialsMetricView{ID: "m-" + k, Title: metricTitle(m), Interval: intervalText(m), N: m.N, Missing: "-"}
		if m.N > 0 {
			v.P50, v.P90, v.Max = trialNum(m.P50), trialNum(m.P90), trialNum(m.Max)
		}
		if len(m.Missing) > 0 {
			v.Missing = trialList(m.Missing)
		}
		var b strings.Builder
		writeSVG(&b, stripPlot(fmt.Sprintf("trials-%d", i), m, runs))
		v.SVG = template.HTML(b.String()) // writeSVG escapes every text
		view.Metrics = append(view.Metrics, v)
	}
	for _, r := range t.Runs {
		rv := trialsRunView{K: r.K, Seed: r.Seed, Dir: r.Dir, Status: "ok", Victims: strings.Join(r.Victims, "; ")}
		var at []string
		for _, a := range r.FaultAtMs {
			at = append(at, num(a, 0))
		}
		rv.FaultAt = strings.Join(at, ", ")
		if r.Failed {
			rv.Status = "failed: " + r.Error
		}
		view.Runs = append(view.Runs, rv)
	}
	var buf bytes.Buffer
	if err := trialsPage.Execute(&buf, view); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := &Output{HTML: filepath.Join(dir, HTMLFile)}
	if err := rundir.WriteFile(out.HTML, buf.Bytes()); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return out, nil
}
