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
