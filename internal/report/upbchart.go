package report

import (
	"math"
)

// The probe-curve chart of a UPB search: offered load (x) against achieved
// throughput (y), one marker per probe, with the keep-up lines y = x and
// y = (1 − tolerance) · x. Both axes share one scale, so y = x is the
// diagonal. Laid out into the same canvas as the time charts, so the SVG
// writer and the PNG rasterizer draw it unchanged.

// Colours of the probe-curve chart.
const (
	colSustained rgb = 0x1a7f37
	colFailed    rgb = 0xc0392b
	colT         rgb = 0x1f4e99
	colHint      rgb = 0x8c564b
	colKeepUp    rgb = 0x888888
)

// xyPoint is one probe on the chart.
type xyPoint struct {
	X, Y      float64 // offered, achieved (ops/s)
	Sustained bool
	T         bool   // the probe that gave T: ringed and labelled
	Label     string // drawn beside a T point
	Title     string // hover text
}

// xySpec describes a probe-curve chart.
type xySpec struct {
	ID, Title      string
	Width, Height  float64 // whole chart; plot height is Height minus furniture
	XLabel, YLabel string
	KeepUp         float64 // the keep-up tolerance (0.05): the lower line is y = (1 − KeepUp) · x
	Points         []xyPoint
	// Hint, when positive, is a closed-loop throughput drawn as a dotted
	// horizontal line.
	Hint float64
}

// circle returns a closed polygon approximating a circle of radius r.
func circle(x, y, r float64) []float64 {
	const n = 14
	out := make([]float64, 0, 2*(n+1))
	for i := 0; i <= n; i++ {
		a := 2 * math.Pi * float64(i) / n
		out = append(out, round1(x+r*math.Cos(a)), round1(y+r*math.Sin(a)))
	}
	return out
}

// layoutXY lays out a probe-curve chart.
func layoutXY(s xySpec, measure func(text string, size float64, bold bool) float64) *canvas {
	w, h := s.Width, s.Height
	if w <= 0 {
		w = 560
	}
	if h <= 0 {
		h = 380
	}
	c := &canvas{id: s.ID, title: s.Title, w: w, h: h}
	c.rect(0, 0, w, h, colPlotBg.solid(), "bg", "")
	c.text(marginLeft, 18, s.Title, titleSize, anchorStart, colText.solid(), true)
	px0, px1 := marginLeft, w-marginRight
	top, bottom := titleH+legendH+4, h-axisH

	vmax := s.Hint
	for _, p := range s.Points {
		vmax = max(vmax, p.X, p.Y)
	}
	if !(vmax > 0) || math.IsInf(vmax, 0) {
		vmax = 1
	}
	ticks := niceTicks(0, vmax*1.06, 5)
	hi := ticks[len(ticks)-1]
	if hi < vmax*1.02 {
		hi += ticks[1] - ticks[0]
		ticks = append(ticks, hi)
	}
	xmap := func(v float64) float64 { return px0 + v/hi*(px1-px0) }
	ymap := func(v float64) float64 { return bottom - v/hi*(bottom-top) }

	c.rect(px0, top, px1-px0, bottom-top, colPlotBg.solid(), "plot", "")
	for _, t := range ticks {
		x, y := xmap(t), ymap(t)
		c.line(x, top, x, bottom, colGrid.solid(), 1, 0, "grid")
		c.line(px0, y, px1, y, colGrid.solid(), 1, 0, "grid")
		c.text(px0-6, y+4, formatValue(t, unitOps), fontSize-1, anchorEnd, colMuted.solid(), false)
		c.line(x, bottom, x, bottom+4, colFrame.solid(), 1, 0, "tick")
		c.text(x, bottom+17, formatValue(t, unitOps), fontSize-1, anchorMiddle, colMuted.solid(), false)
	}
	c.add(prim{kind: primText, x: 14, y: (top + bottom) / 2, text: s.YLabel, size: fontSize, anchor: anchorMiddle,
		fill: colText.solid(), vertical: true})
	c.text((px0+px1)/2, bottom+35, s.XLabel, fontSize, anchorMiddle, colText.solid(), false)

	// keep-up lines
	c.add(prim{kind: primPath, segs: [][]float64{{xmap(0), ymap(0), xmap(hi), ymap(hi)}}, stroke: colKeepUp.a(0.9),
		width: 1, class: "keepup", attrs: []string{"data-name", "achieved = offered"}})
	f := 1 - s.KeepUp
	if f > 0 && f < 1 {
		c.add(prim{kind: primPath, segs: [][]float64{{xmap(0), ymap(0), xmap(hi), ymap(hi * f)}}, stroke: colKeepUp.a(0.9),
			width: 1, dash: 4, class: "keepup", attrs: []string{"data-name", "sustained above"}})
	}
	if s.Hint > 0 {
		y := ymap(s.Hint)
		c.line(px0, y, px1, y, colHint.a(0.8), 1, 2, "hint")
		c.text(px0+4, y-4, "closed-loop hint "+formatValue(s.Hint, unitOps)+" ops/s", fontSize-1, anchorStart, colHint.solid(), false)
	}

	// probes: unsustained as ×, sustained as dots, T ringed
	for _, p := range s.Points {
		x, y := xmap(p.X), ymap(p.Y)
		class := "probe sustained"
		if !p.Sustained {
			class = "probe unsustained"
		}
		if p.T {
			class += " t"
		}
		c.add(prim{kind: primGroup, class: class, title: p.Title})
		if p.Sustained {
			c.add(prim{kind: primPath, segs: [][]float64{circle(x, y, 2.2)}, stroke: colSustained.solid(), width: 4.4})
		} else {
			const d = 4.5
			c.add(prim{kind: primPath, segs: [][]float64{{x - d, y - d, x + d, y + d}, {x - d, y + d, x + d, y - d}},
				stroke: colFailed.solid(), width: 2})
		}
		if p.T {
			c.add(prim{kind: primPath, segs: [][]float64{circle(x, y, 9)}, stroke: colT.solid(), width: 2})
		}
		c.add(prim{kind: primEnd})
		if p.T && p.Label != "" {
			lw := measure(p.Label, fontSize, true)
			lx, anc := x-12, anchorEnd
			if lx-lw < px0+4 {
				lx, anc = x+12, anchorStart
			}
			c.text(lx, y-10, p.Label, fontSize, anc, colT.solid(), true)
		}
	}
	c.add(prim{kind: primRect, x: px0, y: top, w: px1 - px0, h: bottom - top, stroke: colFrame.solid(), width: 1, class: "frame"})

	// legend
	lx, ly := px0, titleH+legendH/2
	item := func(draw func(x float64), label string) {
		draw(lx)
		c.text(lx+20, ly+4, label, fontSize-1, anchorStart, colText.solid(), false)
		lx += 20 + measure(label, fontSize-1, false) + 22
	}
	item(func(x float64) {
		c.add(prim{kind: primPath, segs: [][]float64{circle(x+8, ly, 2.2)}, stroke: colSustained.solid(), width: 4.4, class: "legend"})
	}, "sustained")
	item(func(x float64) {
		c.add(prim{kind: primPath, segs: [][]float64{{x + 4, ly - 4, x + 12, ly + 4}, {x + 4, ly + 4, x + 12, ly - 4}},
			stroke: colFailed.solid(), width: 2, class: "legend"})
	}, "not sustained")
	item(func(x float64) {
		c.add(prim{kind: primPath, segs: [][]float64{circle(x+8, ly, 6)}, stroke: colT.solid(), width: 2, class: "legend"})
	}, "T")
	item(func(x float64) { c.line(x, ly, x+16, ly, colKeepUp.solid(), 1, 0, "legend") }, "achieved = offered")
	if f > 0 && f < 1 {
		item(func(x float64) { c.line(x, ly, x+16, ly, colKeepUp.solid(), 1, 4, "legend") }, fnum(f*100, 1)+" % of offered")
	}
	return c
}
