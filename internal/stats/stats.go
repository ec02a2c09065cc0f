// Package stats summarises repeated measurements of one metric (a
// scenario's trials): count, mean, percentiles and maximum, a bootstrap
// confidence interval of the mean, and a permutation test of whether two
// sets of trials differ. Every random step is seeded, so a figure computed
// twice from the same values is the same figure.
package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
)

// Resamples is the number of bootstrap resamples and of permutations the
// package draws by default: enough that the interval's ends and the p-value
// move by well under a percent between seeds.
const Resamples = 10000

// Alpha is the significance level: a difference is significant when the
// permutation test's p-value is below it (and the 95 % intervals of the
// two samples do not overlap, see Compare).
const Alpha = 0.05

// MinJudged is the smallest number of values an interval is computed for:
// below it a bootstrap interval is not judged.
const MinJudged = 3

// Summary describes one sample.
type Summary struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	Max  float64 `json:"max"`
	// CI95Low and CI95High bound the bootstrap 95 % confidence interval of
	// the mean (percentile method); nil when N < MinJudged.
	CI95Low  *float64 `json:"ci95_low,omitempty"`
	CI95High *float64 `json:"ci95_high,omitempty"`
}

// Judged reports whether the summary has an interval.
func (s Summary) Judged() bool { return s.CI95Low != nil && s.CI95High != nil }

// ErrEmpty is returned for a sample without values.
var ErrEmpty = errors.New("no values")

// Describe summarises xs; the interval is drawn with Resamples resamples
// from seed. NaN and infinite values are an error: a metric that was not
// computable is left out by the caller, not passed in.
func Describe(xs []float64, seed uint64) (Summary, error) {
	if len(xs) == 0 {
		return Summary{}, ErrEmpty
	}
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Summary{}, errors.New("a value is not a finite number")
		}
	}
	s := Summary{N: len(xs), Mean: Mean(xs), P50: Percentile(xs, 50), P90: Percentile(xs, 90), Max: slices.Max(xs)}
	if len(xs) >= MinJudged {
		lo, hi := BootstrapMeanCI(xs, 0.95, Resamples, seed)
		s.CI95Low, s.CI95High = &lo, &hi
	}
	return s, nil
}

// Mean is the arithmetic mean (0 for no values).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// Percentile returns the p-th percentile (0..100) of xs by linear
// interpolation between the closest ranks (the "R-7" definition of
// Hyndman and Fan, the default of R and NumPy): rank h = (n-1)·p/100.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return sortedPercentile(s, p)
}

func sortedPercentile(s []float64, p float64) float64 {
	p = math.Max(0, math.Min(100, p))
	h := float64(len(s)-1) * p / 100
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

// BootstrapMeanCI returns the percentile bootstrap confidence interval of
// the mean of xs at the given level (0.95): the mean of each of resamples
// resamples drawn with replacement, seeded, and the interval between
// their (1-level)/2 and (1+level)/2 percentiles. With fewer than two values
// the interval is the value itself.
func BootstrapMeanCI(xs []float64, level float64, resamples int, seed uint64) (lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	if len(xs) == 1 || resamples < 1 {
		m := Mean(xs)
		return m, m
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	means := make([]float64, resamples)
	n := len(xs)
	for i := range means {
		sum := 0.0
		for range n {
			sum += xs[rng.IntN(n)]
		}
		means[i] = sum / float64(n)
	}
	slices.Sort(means)
	tail := (1 - level) / 2 * 100
	return sortedPercentile(means, tail), sortedPercentile(means, 100-tail)
}

// PermutationTest returns the two-sided p-value of the difference of the
// means of a and b: how often, among permutations random relabellings of
// the pooled values (seeded), the difference of means is at least as far
// from zero as the observed one. The observed labelling counts as one of
// them, so p is never 0: p = (hits+1)/(permutations+1).
func PermutationTest(a, b []float64, permutations int, seed uint64) float64 {
	if len(a) == 0 || len(b) == 0 || permutations < 1 {
		return 1
	}
	observed := math.Abs(Mean(a) - Mean(b))
	pooled := append(slices.Clone(a), b...)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	// a small tolerance so that relabellings equal to the observed one in
	// exact arithmetic count as "at least as far" despite rounding
	eps := 1e-9 * math.Max(1, observed)
	hits := 0
	for range permutations {
		rng.Shuffle(len(pooled), func(i, j int) { pooled[i], pooled[j] = pooled[j], pooled[i] })
		if math.Abs(Mean(pooled[:len(a)])-Mean(pooled[len(a):])) >= observed-eps {
			hits++
		}
	}
	return float64(hits+1) / float64(permutations+1)
}

// Difference is the verdict on two samples of one metric.
type Difference struct {
	P       float64 `json:"p"`       // the permutation test's p-value
	Overlap bool    `json:"overlap"` // the 95 % intervals overlap
	// Significant is true when p < Alpha and the intervals do not
	// overlap; a difference that only one of the two says is real is
	// reported as not significant.
	Significant bool `json:"significant"`
	// Judged is false when either sample has fewer than MinJudged values.
	Judged bool `json:"judged"`
}

// Compare judges whether samples a and b differ (seeded).
func Compare(a, b []float64, seed uint64) Difference {
	if len(a) < MinJudged || len(b) < MinJudged {
		return Difference{P: 1, Overlap: true}
	}
	alo, ahi := BootstrapMeanCI(a, 0.95, Resamples, seed)
	blo, bhi := BootstrapMeanCI(b, 0.95, Resamples, seed+1)
	d := Difference{P: PermutationTest(a, b, Resamples, seed), Overlap: alo <= bhi && blo <= ahi, Judged: true}
	d.Significant = d.P < Alpha && !d.Overlap
	return d
}
