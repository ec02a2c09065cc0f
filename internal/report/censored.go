package report

import (
	"math"

	"github.com/faultbench/faultbench/internal/measure"
)

// colCensored is the colour of failed and timed-out operations in a
// latency panel.
const colCensored rgb = 0x7b2d8e

// censoredName is the legend of the failed and timed-out operations.
const censoredName = "failed / timed out (≥, censored)"

// withCensored appends to a latency panel's series the longest failed or
// timed-out operation of op per window (windows.csv fail_max_us), drawn as
// censored marks: the operation gave up after that long, so its latency
// was at least that (docs/metrics.md, the censored peak). A run without
// failures, or a windows.csv written before the column, gets nothing.
func withCensored(s *series, op string, lat []seriesSpec) []seriesSpec {
	ys := s.values(op, func(w *measure.WindowRow) float64 {
		if w.FailMaxUs <= 0 {
			return math.NaN()
		}
		return w.FailMaxUs
	})
	for _, y := range ys {
		if !math.IsNaN(y) {
			return append(lat, seriesSpec{Name: censoredName, Color: colCensored.solid(), Width: 1.3, X: s.mid, Y: ys, Marks: true})
		}
	}
	return lat
}

// markShape is a censored mark at pixel (x, y): a floor at the value with
// an arrow up, "at least this", as line segments x0, y0, x1, y1.
func markShape(x, y float64) [][4]float64 {
	return [][4]float64{{x - 3, y, x + 3, y}, {x, y, x, y - 7}, {x - 2.5, y - 4.5, x, y - 7}, {x + 2.5, y - 4.5, x, y - 7}}
}

// markSegs maps a series to censored marks, one per pixel column (the
// highest value of the column, so a mark never hides a longer failure),
// as polylines of two points each. NaN values and points outside x0..x1
// are left out.
func markSegs(xs, ys []float64, x0, x1 float64, xmap, ymap func(float64) float64) [][]float64 {
	top := map[int]float64{} // pixel column -> highest value
	var cols []int
	for i := range xs {
		if i >= len(ys) {
			break
		}
		x, y := xs[i], ys[i]
		if x < x0 || x > x1 || math.IsNaN(y) || math.IsInf(y, 0) {
			continue
		}
		c := int(math.Floor(xmap(x)))
		if v, ok := top[c]; !ok || y > v {
			if !ok {
				cols = append(cols, c)
			}
			top[c] = y
		}
	}
	var segs [][]float64
	for _, c := range cols {
		for _, s := range markShape(float64(c)+0.5, ymap(top[c])) {
			segs = append(segs, []float64{round1(s[0]), round1(s[1]), round1(s[2]), round1(s[3])})
		}
	}
	return segs
}
