package analyze

import (
	"math"
	"time"
)

// relEps is the relative slack used in inclusive tolerance comparisons so
// that a value exactly on a band's edge is not rejected by float rounding.
const relEps = 1e-9

// spanWindows is the number of windows of length window that cover d,
// rounded up, and at least 2.
func spanWindows(d, window time.Duration) int {
	if window <= 0 || d <= 2*window {
		return 2
	}
	return int((d + window - 1) / window)
}

// SteadyStretches finds the steady stretches of a throughput series (the
// Under Pressure Benchmark §3.2: "the overall performance varies about 2 percent during the
// steady state").
//
// tp holds one throughput value per window, window is the window length and
// span the length of the sliding span. With n = ceil(span/window) (at least
// 2), every n consecutive values tp[j:j+n] form a candidate span; a span is
// steady when each of its values lies within ±tol of the span's own mean
// (|v-mean| <= tol*|mean|). Steady spans that share at least one window are
// merged; the result is the list of maximal merged stretches as half-open
// index ranges [from, to), in increasing order. Spans that merely touch (the
// next steady span starts where the previous ends) stay separate, so a step
// between two flat levels yields two stretches. A series shorter than n
// windows has no steady stretch. The function does not smooth; callers with
// noisy short windows smooth first (see Smooth).
func SteadyStretches(tp []float64, window time.Duration, tol float64, span time.Duration) [][2]int {
	n := spanWindows(span, window)
	if len(tp) < n || tol < 0 || math.IsNaN(tol) {
		return nil
	}
	// Prefix sums for span means; monotonic deques for sliding min and max.
	prefix := make([]float64, len(tp)+1)
	for i, v := range tp {
		prefix[i+1] = prefix[i] + v
	}
	var minQ, maxQ []int // indices; values increasing (minQ) / decreasing (maxQ)
	var out [][2]int
	for i, v := range tp {
		for len(minQ) > 0 && tp[minQ[len(minQ)-1]] >= v {
			minQ = minQ[:len(minQ)-1]
		}
		minQ = append(minQ, i)
		for len(maxQ) > 0 && tp[maxQ[len(maxQ)-1]] <= v {
			maxQ = maxQ[:len(maxQ)-1]
		}
		maxQ = append(maxQ, i)
		j := i - n + 1 // start of the span ending at i
		if j < 0 {
			continue
		}
		for minQ[0] < j {
			minQ = minQ[1:]
		}
		for maxQ[0] < j {
			maxQ = maxQ[1:]
		}
		mean := (prefix[i+1] - prefix[j]) / float64(n)
		slack := tol*math.Abs(mean) + relEps*math.Abs(mean) + 1e-12
		if tp[maxQ[0]]-mean > slack || mean-tp[minQ[0]] > slack {
			continue
		}
		if k := len(out) - 1; k >= 0 && j < out[k][1] {
			out[k][1] = i + 1
		} else {
			out = append(out, [2]int{j, i + 1})
		}
	}
	return out
}

// Smooth returns the centred moving average of tp over about width: each
// value becomes the mean of 2h+1 windows centred on it, h =
// floor(width/window)/2 (at the series' ends the average uses the windows
// available). A width of less than two windows returns a copy of tp.
func Smooth(tp []float64, window, width time.Duration) []float64 {
	out := make([]float64, len(tp))
	h := 0
	if window > 0 && width > window {
		h = int(width/window) / 2 // half width in windows, >= 1 here
	}
	if h == 0 {
		copy(out, tp)
		return out
	}
	prefix := make([]float64, len(tp)+1)
	for i, v := range tp {
		prefix[i+1] = prefix[i] + v
	}
	for i := range tp {
		lo, hi := max(0, i-h), min(len(tp), i+h+1)
		out[i] = (prefix[hi] - prefix[lo]) / float64(hi-lo)
	}
	return out
}

// SteadyStretchesCounted finds the steady stretches of throughput samples
// whose sampling noise is known: sample i counted ok[i] successful
// operations over dur[i] (the windows of the run aggregated to samples of
// Params.SteadySample, 1 s by default). A span of n consecutive samples
// (at least 2) is steady when the variation beyond what the operation
// counts alone explain is within tol:
//
//   - level: every sample's throughput v_i lies within tol·m + z·σ_i of the
//     span's mean throughput m (all successes over all time), where
//     σ_i = √ok_i / dur_i is the sampling error of a count of ok_i
//     (Poisson; an open loop's schedule-driven counts vary less, so this
//     errs towards "steady");
//   - trend: the least-squares line through the samples (at their
//     midpoints) changes by |Δ| ≤ 2·tol·m + z·SE(Δ) across the span
//     (from one edge of the ±tol band to the other), SE(Δ) its standard
//     error from the mean σ_i², so a drift that no single sample shows
//     is caught once it exceeds what the counts can hide.
//
// With z = 0 it is the Under Pressure Benchmark's rule ("varies about 2
// percent", every sample within ±tol of the mean) over the samples; with
// 1 s samples of many operations (σ_i ≪ tol·m) the default z changes
// little. Spans sharing a sample are merged as in SteadyStretches; the
// result is half-open sample index ranges in increasing order.
func SteadyStretchesCounted(ok []int64, dur []time.Duration, tol, z float64, n int) [][2]int {
	n = max(n, 2)
	if len(ok) != len(dur) || len(ok) < n || tol < 0 || z < 0 || math.IsNaN(tol) || math.IsNaN(z) {
		return nil
	}
	mid := make([]float64, len(ok)) // sample midpoints, seconds
	var at float64
	for i, d := range dur {
		s := d.Seconds()
		mid[i] = at + s/2
		at += s
	}
	var out [][2]int
	for j := 0; j+n <= len(ok); j++ {
		if !steadySpan(ok[j:j+n], dur[j:j+n], mid[j:j+n], tol, z) {
			continue
		}
		i := j + n - 1
		if k := len(out) - 1; k >= 0 && j < out[k][1] {
			out[k][1] = i + 1
		} else {
			out = append(out, [2]int{j, i + 1})
		}
	}
	return out
}

// steadySpan applies SteadyStretchesCounted's level and trend tests to one
// span of samples.
func steadySpan(ok []int64, dur []time.Duration, mid []float64, tol, z float64) bool {
	var total int64
	var secs float64
	for i := range ok {
		total += ok[i]
		secs += dur[i].Seconds()
	}
	if secs <= 0 {
		return false
	}
	m := float64(total) / secs
	slack := tol*m + relEps*m + 1e-12
	var varSum, xm, ym float64
	v := make([]float64, len(ok))
	for i := range ok {
		s := dur[i].Seconds()
		if s <= 0 {
			return false
		}
		v[i] = float64(ok[i]) / s
		sigma := math.Sqrt(float64(ok[i])) / s
		varSum += sigma * sigma
		if math.Abs(v[i]-m) > slack+z*sigma {
			return false
		}
		xm += mid[i]
		ym += v[i]
	}
	k := float64(len(ok))
	xm /= k
	ym /= k
	var sxy, sxx float64
	for i := range ok {
		sxy += (mid[i] - xm) * (v[i] - ym)
		sxx += (mid[i] - xm) * (mid[i] - xm)
	}
	if sxx <= 0 {
		return true
	}
	width := mid[len(mid)-1] - mid[0]
	delta := sxy / sxx * width
	se := math.Sqrt(varSum/k) * width / math.Sqrt(sxx)
	return math.Abs(delta) <= 2*slack+z*se
}

// aggregate groups the windows idx into consecutive samples of k windows
// (the last one may hold fewer) and returns each sample's successes,
// length and the positions in idx where it starts.
func aggregate(s []slot, idx []int, k int) (ok []int64, dur []time.Duration, from []int) {
	k = max(k, 1)
	for p := 0; p < len(idx); p += k {
		var n int64
		var d time.Duration
		for _, i := range idx[p:min(p+k, len(idx))] {
			n += s[i].all.OK
			d += s[i].dur()
		}
		ok, dur, from = append(ok, n), append(dur, d), append(from, p)
	}
	return ok, dur, from
}
