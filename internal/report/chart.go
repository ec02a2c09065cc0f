package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A chart is laid out once into a canvas — a list of drawing primitives in
// chart pixels — which the SVG writer (svg.go) and the PNG rasterizer
// (png.go) both draw, so report.html and plots/*.png show the same figure.

// rgba is a colour with alpha in 0..1.
type rgba struct {
	R, G, B uint8
	A       float64
}

// rgb is an opaque colour 0xRRGGBB; colours are constants of this type.
type rgb uint32

// a returns the colour with alpha a.
func (c rgb) a(alpha float64) rgba { return rgba{uint8(c >> 16), uint8(c >> 8), uint8(c), alpha} }

// solid returns the opaque colour.
func (c rgb) solid() rgba { return c.a(1) }

func (c rgba) alpha(a float64) rgba { c.A = a; return c }

// css returns the colour as #rrggbb (alpha is written separately).
func (c rgba) css() string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

type primKind uint8

const (
	primRect    primKind = iota // filled rectangle x, y, w, h
	primPath                    // stroked polylines segs
	primText                    // text at x, y (baseline)
	primGroup                   // start of a group (class, title)
	primEnd                     // end of a group
	primLink                    // start of a link to title (SVG only; a PNG has no links)
	primLinkEnd                 // end of a link
)

type anchor uint8

const (
	anchorStart anchor = iota
	anchorMiddle
	anchorEnd
)

// prim is one drawing primitive.
type prim struct {
	kind       primKind
	x, y, w, h float64
	segs       [][]float64 // polylines: x0,y0,x1,y1,...
	fill       rgba
	stroke     rgba
	width      float64
	dash       float64 // dash length; 0 = solid
	text       string
	size       float64
	anchor     anchor
	bold       bool
	vertical   bool // rotated to read bottom to top
	class      string
	title      string
	attrs      []string // extra SVG attributes: name, value, name, value ...
}

// canvas is a laid-out chart.
type canvas struct {
	id, title string
	w, h      float64
	prims     []prim
}

func (c *canvas) add(p prim) { c.prims = append(c.prims, p) }

func (c *canvas) rect(x, y, w, h float64, fill rgba, class, title string) {
	c.add(prim{kind: primRect, x: x, y: y, w: w, h: h, fill: fill, class: class, title: title})
}

func (c *canvas) line(x0, y0, x1, y1 float64, stroke rgba, width, dash float64, class string) {
	c.add(prim{kind: primPath, segs: [][]float64{{x0, y0, x1, y1}}, stroke: stroke, width: width, dash: dash, class: class})
}

func (c *canvas) text(x, y float64, s string, size float64, a anchor, col rgba, bold bool) {
	c.add(prim{kind: primText, x: x, y: y, text: s, size: size, anchor: a, fill: col, bold: bold})
}

// unit says how a panel's values are labelled.
type unit uint8

const (
	unitOps     unit = iota // operations per second
	unitLatency             // microseconds, shown as µs/ms/s
	unitCount               // plain numbers
)

// chartSpec describes a chart before layout: panels stacked over one time
// axis, fault spans and event marks across every panel.
type chartSpec struct {
	ID, Title string
	Width     float64 // chart width in pixels (default 1000)
	X0, X1    float64 // x range, seconds
	XLabel    string
	Panels    []panelSpec
	Spans     []spanSpec // fault spans, drawn as class "fault-span"
	Shades    []spanSpec // other shaded ranges (warm-up), class "warmup-span"
	Marks     []markSpec // events, drawn as class "event" with a <title>
	// Anomalies are the checkers' explained anomalies, drawn as class
	// "anomaly": a solid line with a square at the top, linked to Href.
	Anomalies []markSpec
}

type panelSpec struct {
	YLabel string
	Height float64 // plot height in pixels
	Log    bool
	Unit   unit
	Series []seriesSpec
	Empty  string // note drawn when no series has a value
}

type seriesSpec struct {
	Name  string
	Color rgba
	Width float64
	Dash  float64
	X, Y  []float64 // NaN in Y breaks the line
	// Marks draws each point as a censored mark (markSegs: "at least
	// this") instead of a line.
	Marks bool
}

type spanSpec struct {
	From, To float64
	Label    string // drawn above the first panel
	Title    string // hover text
	Color    rgba
	Class    string // SVG class of a shade; "" = "warmup-span"
}

type markSpec struct {
	At    float64
	Title string // hover text
	Color rgba
	Href  string // an anomaly's link to its explanation ("" for none)
}

// Chart geometry, pixels.
const (
	defaultWidth = 1000.0
	marginLeft   = 74.0
	marginRight  = 18.0
	titleH       = 26.0
	spanRowH     = 16.0
	legendH      = 18.0
	panelGap     = 10.0
	axisH        = 42.0
	fontSize     = 12.0
	titleSize    = 14.0
)

// Colours of the chart furniture.
const (
	colText   rgb = 0x222222
	colMuted  rgb = 0x666666
	colGrid   rgb = 0xe3e3e3
	colFrame  rgb = 0x9a9a9a
	colPlotBg rgb = 0xffffff
	colWarmup rgb = 0x888888
)

// layout turns a spec into a canvas. measure returns the width of a text
// at a size.
func layout(s chartSpec, measure func(text string, size float64, bold bool) float64) *canvas {
	w := s.Width
	if w <= 0 {
		w = defaultWidth
	}
	h := titleH + spanRowH + axisH
	for i, p := range s.Panels {
		h += legendH + p.Height
		if i > 0 {
			h += panelGap
		}
	}
	c := &canvas{id: s.ID, title: s.Title, w: w, h: h}
	c.rect(0, 0, w, h, colPlotBg.solid(), "bg", "")
	c.text(marginLeft, 18, s.Title, titleSize, anchorStart, colText.solid(), true)

	px0, px1 := marginLeft, w-marginRight
	x0, x1 := s.X0, s.X1
	if !(x1 > x0) {
		x1 = x0 + 1
	}
	xmap := func(v float64) float64 { return px0 + (v-x0)/(x1-x0)*(px1-px0) }

	// panel boxes
	type box struct{ top, bottom float64 }
	boxes := make([]box, len(s.Panels))
	y := titleH + spanRowH
	for i, p := range s.Panels {
		if i > 0 {
			y += panelGap
		}
		y += legendH
		boxes[i] = box{y, y + p.Height}
		y += p.Height
	}
	plotTop, plotBottom := boxes[0].top, boxes[len(boxes)-1].bottom

	// x grid values
	xt := niceTicks(x0, x1, max(2, int((px1-px0)/90)))

	ymaps := make([]func(float64) float64, len(s.Panels))
	for i, p := range s.Panels {
		b := boxes[i]
		c.rect(px0, b.top, px1-px0, b.bottom-b.top, colPlotBg.solid(), "plot", "")
		lo, hi, ticks := yRange(p)
		var ymap func(float64) float64
		if p.Log {
			llo, lhi := math.Log10(lo), math.Log10(hi)
			ymap = func(v float64) float64 {
				if v < lo {
					v = lo
				}
				return b.bottom - (math.Log10(v)-llo)/(lhi-llo)*(b.bottom-b.top)
			}
		} else {
			ymap = func(v float64) float64 { return b.bottom - (v-lo)/(hi-lo)*(b.bottom-b.top) }
		}
		ymaps[i] = ymap
		for _, t := range xt {
			x := xmap(t)
			c.line(x, b.top, x, b.bottom, colGrid.solid(), 1, 0, "grid")
		}
		for _, t := range ticks {
			yy := ymap(t)
			c.line(px0, yy, px1, yy, colGrid.solid(), 1, 0, "grid")
			c.text(px0-6, yy+4, formatValue(t, p.Unit), fontSize-1, anchorEnd, colMuted.solid(), false)
		}
		c.add(prim{kind: primText, x: 14, y: (b.top + b.bottom) / 2, text: p.YLabel, size: fontSize, anchor: anchorMiddle,
			fill: colText.solid(), vertical: true})
		c.add(prim{kind: primGroup, class: "panel", attrs: []string{
			"data-x0", fnum(x0, 6), "data-x1", fnum(x1, 6), "data-px0", fnum(px0, 1), "data-px1", fnum(px1, 1),
			"data-y0", fnum(lo, 6), "data-y1", fnum(hi, 6), "data-py0", fnum(b.bottom, 1), "data-py1", fnum(b.top, 1),
			"data-log", strconv.FormatBool(p.Log), "data-unit", unitName(p.Unit)}})
		c.add(prim{kind: primEnd})
	}

	// shaded ranges behind the data
	var used [][3]float64 // labels placed above the plot: row, from, to
	for _, sh := range s.Shades {
		a, b := clampSpan(sh.From, sh.To, x0, x1)
		if b <= a {
			continue
		}
		class := sh.Class
		if class == "" {
			class = "warmup-span"
		}
		c.add(prim{kind: primRect, x: xmap(a), y: plotTop, w: xmap(b) - xmap(a), h: plotBottom - plotTop,
			fill: sh.Color, class: class, title: sh.Title})
		c.text(xmap(a)+3, titleH+spanRowH-4, sh.Label, fontSize-1, anchorStart, colMuted.solid(), false)
		used = append(used, [3]float64{0, xmap(a) + 3, xmap(a) + 3 + measure(sh.Label, fontSize-1, false)})
	}
	for _, sp := range s.Spans {
		a, b := clampSpan(sp.From, sp.To, x0, x1)
		if b < a {
			continue // outside the chart's range (a zoomed figure)
		}
		xa, xb := xmap(a), xmap(b)
		c.add(prim{kind: primRect, x: xa, y: plotTop, w: max(xb-xa, 1), h: plotBottom - plotTop,
			fill: sp.Color.alpha(0.16), class: "fault-span", title: sp.Title})
		c.line(xa, plotTop, xa, plotBottom, sp.Color.alpha(0.8), 1.2, 0, "fault-edge")
		// the label goes above the plot, or, where an earlier label is,
		// into the top of the plot, one line further down per collision
		lw := measure(sp.Label, fontSize-1, true)
		lx := xa + 3
		if lx+lw > w-marginRight {
			lx = max(marginLeft, xb-3-lw)
		}
		row := 0
		for ; row < 8; row++ {
			free := true
			for _, u := range used {
				if u[0] == float64(row) && lx < u[2]+6 && lx+lw > u[1]-6 {
					free = false
					break
				}
			}
			if free {
				break
			}
		}
		used = append(used, [3]float64{float64(row), lx, lx + lw})
		ly := titleH + spanRowH - 4
		if row > 0 {
			ly = plotTop + 13*float64(row)
		}
		c.text(lx, ly, sp.Label, fontSize-1, anchorStart, sp.Color, true)
	}

	// series
	for i, p := range s.Panels {
		b := boxes[i]
		drawn := false
		for _, se := range p.Series {
			segs := downsample(se.X, se.Y, x0, x1, xmap, ymaps[i])
			if se.Marks {
				segs = markSegs(se.X, se.Y, x0, x1, xmap, ymaps[i])
			}
			if len(segs) == 0 {
				continue
			}
			drawn = true
			c.add(prim{kind: primPath, segs: segs, stroke: se.Color, width: se.Width, dash: se.Dash, class: "series",
				attrs: []string{"data-name", se.Name}})
		}
		if !drawn && p.Empty != "" {
			c.text((px0+px1)/2, (b.top+b.bottom)/2, p.Empty, fontSize, anchorMiddle, colMuted.solid(), false)
		}
		// legend
		lx := px0
		for _, se := range p.Series {
			ly := b.top - legendH/2
			if se.Marks {
				for _, seg := range markShape(lx+8, ly+4) {
					c.line(seg[0], seg[1], seg[2], seg[3], se.Color, max(se.Width, 1.5), 0, "legend")
				}
			} else {
				c.line(lx, ly, lx+16, ly, se.Color, max(se.Width, 2), se.Dash, "legend")
			}
			c.text(lx+20, ly+4, se.Name, fontSize-1, anchorStart, colText.solid(), false)
			lx += 20 + measure(se.Name, fontSize-1, false) + 14
		}
		c.add(prim{kind: primRect, x: px0, y: b.top, w: px1 - px0, h: b.bottom - b.top, stroke: colFrame.solid(), width: 1, class: "frame"})
	}

	// event marks across every panel
	for _, m := range s.Marks {
		if m.At < x0 || m.At > x1 {
			continue
		}
		x := xmap(m.At)
		c.add(prim{kind: primGroup, class: "event", title: m.Title})
		c.line(x, plotTop, x, plotBottom, m.Color.alpha(0.85), 1, 3, "event-line")
		c.line(x, plotTop, x, plotBottom, m.Color.alpha(0.004), 7, 0, "event-hit")
		c.add(prim{kind: primEnd})
	}

	// anomalies across every panel, over the events
	for _, m := range s.Anomalies {
		if m.At < x0 || m.At > x1 {
			continue
		}
		x := xmap(m.At)
		if m.Href != "" {
			c.add(prim{kind: primLink, title: m.Href})
		}
		c.add(prim{kind: primGroup, class: "anomaly", title: m.Title})
		c.line(x, plotTop, x, plotBottom, m.Color.alpha(0.9), 1.4, 0, "anomaly-line")
		c.rect(x-4, plotTop, 8, 8, m.Color, "anomaly-mark", "")
		c.line(x, plotTop, x, plotBottom, m.Color.alpha(0.004), 7, 0, "event-hit")
		c.add(prim{kind: primEnd})
		if m.Href != "" {
			c.add(prim{kind: primLinkEnd})
		}
	}

	// x axis
	for _, t := range xt {
		x := xmap(t)
		c.line(x, plotBottom, x, plotBottom+4, colFrame.solid(), 1, 0, "tick")
		c.text(x, plotBottom+17, fnum(t, 3), fontSize-1, anchorMiddle, colMuted.solid(), false)
	}
	c.text((px0+px1)/2, plotBottom+35, s.XLabel, fontSize, anchorMiddle, colText.solid(), false)
	return c
}

func clampSpan(a, b, lo, hi float64) (float64, float64) { return max(a, lo), min(b, hi) }

// yRange returns a panel's value range and tick values.
func yRange(p panelSpec) (lo, hi float64, ticks []float64) {
	vmax := math.Inf(-1)
	vmin := math.Inf(1)
	for _, se := range p.Series {
		for _, v := range se.Y {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			if p.Log && v <= 0 {
				continue
			}
			vmax = max(vmax, v)
			vmin = min(vmin, v)
		}
	}
	if p.Log {
		if math.IsInf(vmax, -1) {
			vmin, vmax = 1000, 1e6
		}
		lo = math.Pow(10, math.Floor(math.Log10(vmin)))
		hi = math.Pow(10, math.Ceil(math.Log10(vmax)))
		if hi <= lo {
			hi = lo * 10
		}
		for v := lo; v <= hi*1.0001; v *= 10 {
			ticks = append(ticks, v)
		}
		return lo, hi, ticks
	}
	if math.IsInf(vmax, -1) || vmax <= 0 {
		vmax = 1
	}
	ticks = niceTicks(0, vmax*1.04, 5)
	hi = ticks[len(ticks)-1]
	if hi < vmax {
		step := ticks[1] - ticks[0]
		hi += step
		ticks = append(ticks, hi)
	}
	return 0, hi, ticks
}

// niceTicks returns round tick values covering lo..hi with about n steps.
func niceTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) || n < 1 {
		return []float64{lo}
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Ceil(lo/step-1e-9) * step; v <= hi+step*1e-9; v += step {
		out = append(out, math.Round(v/step)*step)
	}
	if len(out) < 2 {
		out = []float64{lo, hi}
	}
	return out
}

// downsample maps a series to pixel polylines, keeping per pixel column
// only the first, lowest, highest and last point (in their order): the
// drawn line is the same as with every point, at a size bounded by the
// chart's width whatever the number of windows. NaN breaks the line;
// points outside x0..x1 are dropped.
func downsample(xs, ys []float64, x0, x1 float64, xmap, ymap func(float64) float64) [][]float64 {
	var segs [][]float64
	var cur []float64
	type pt struct{ x, y float64 }
	var col int
	var first, lowP, highP, last pt
	var ilow, ihigh int
	n := 0 // points in the current column
	flushCol := func() {
		if n == 0 {
			return
		}
		ps := []pt{first}
		order := []struct {
			i int
			p pt
		}{{ilow, lowP}, {ihigh, highP}}
		if order[1].i < order[0].i {
			order[0], order[1] = order[1], order[0]
		}
		for _, o := range order {
			if o.p != ps[len(ps)-1] {
				ps = append(ps, o.p)
			}
		}
		if last != ps[len(ps)-1] {
			ps = append(ps, last)
		}
		for _, p := range ps {
			cur = append(cur, round1(p.x), round1(p.y))
		}
		n = 0
	}
	endSeg := func() {
		flushCol()
		if len(cur) >= 2 {
			segs = append(segs, cur)
		}
		cur = nil
	}
	for i := range xs {
		if i >= len(ys) {
			break
		}
		x, y := xs[i], ys[i]
		if x < x0 || x > x1 {
			continue
		}
		if math.IsNaN(y) || math.IsInf(y, 0) {
			endSeg()
			continue
		}
		p := pt{xmap(x), ymap(y)}
		c := int(math.Floor(p.x))
		if n > 0 && c != col {
			flushCol()
		}
		if n == 0 {
			col, first, lowP, highP, ilow, ihigh = c, p, p, p, i, i
		}
		if p.y > lowP.y { // pixel y grows downwards: larger y = lower value
			lowP, ilow = p, i
		}
		if p.y < highP.y {
			highP, ihigh = p, i
		}
		last = p
		n++
	}
	endSeg()
	return segs
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// fnum formats v with at most prec decimals, without trailing zeros.
func fnum(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

func unitName(u unit) string {
	switch u {
	case unitOps:
		return "ops/s"
	case unitLatency:
		return "us"
	}
	return ""
}

// formatValue labels an axis value.
func formatValue(v float64, u unit) string {
	switch u {
	case unitLatency:
		return formatLatencyUs(v)
	default:
		av := math.Abs(v)
		switch {
		case av >= 1e6:
			return fnum(v/1e6, 2) + "M"
		case av >= 1e4:
			return fnum(v/1e3, 1) + "k"
		}
		return fnum(v, 2)
	}
}

// formatLatencyUs formats microseconds as µs, ms or s.
func formatLatencyUs(v float64) string {
	switch {
	case v >= 1e6:
		return fnum(v/1e6, 2) + " s"
	case v >= 1e3:
		return fnum(v/1e3, 2) + " ms"
	}
	return fnum(v, 1) + " µs"
}
