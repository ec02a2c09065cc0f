package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestDescribeKnownValues(t *testing.T) {
	for _, tc := range []struct {
		name                string
		xs                  []float64
		mean, p50, p90, max float64
		judged              bool
	}{
		{name: "one value", xs: []float64{7}, mean: 7, p50: 7, p90: 7, max: 7},
		{name: "two values", xs: []float64{1, 3}, mean: 2, p50: 2, p90: 2.8, max: 3},
		{name: "four values, unsorted", xs: []float64{4, 1, 3, 2}, mean: 2.5, p50: 2.5, p90: 3.7, max: 4, judged: true},
		{name: "ten values", xs: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, mean: 5.5, p50: 5.5, p90: 9.1, max: 10, judged: true},
		{name: "constant", xs: []float64{5, 5, 5}, mean: 5, p50: 5, p90: 5, max: 5, judged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Describe(tc.xs, 1)
			if err != nil {
				t.Fatal(err)
			}
			if s.N != len(tc.xs) || !near(s.Mean, tc.mean) || !near(s.P50, tc.p50) || !near(s.P90, tc.p90) || !near(s.Max, tc.max) {
				t.Errorf("got n=%d mean=%v p50=%v p90=%v max=%v, want n=%d %v %v %v %v", s.N, s.Mean, s.P50, s.P90, s.Max, len(tc.xs), tc.mean, tc.p50, tc.p90, tc.max)
			}
			if s.Judged() != tc.judged {
				t.Fatalf("judged %v, want %v (n=%d, MinJudged %d)", s.Judged(), tc.judged, s.N, MinJudged)
			}
			if s.Judged() && (*s.CI95Low > s.Mean || *s.CI95High < s.Mean) {
				t.Errorf("interval [%v, %v] does not contain the mean %v", *s.CI95Low, *s.CI95High, s.Mean)
			}
		})
	}
}

func TestDescribeBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
	}{
		{"empty", nil},
		{"NaN", []float64{1, math.NaN()}},
		{"infinite", []float64{math.Inf(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Describe(tc.xs, 1); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestBootstrapSeeded(t *testing.T) {
	xs := []float64{12, 15, 9, 22, 13, 17}
	lo1, hi1 := BootstrapMeanCI(xs, 0.95, Resamples, 42)
	lo2, hi2 := BootstrapMeanCI(xs, 0.95, Resamples, 42)
	if lo1 != lo2 || hi1 != hi2 {
		t.Fatalf("same seed, different intervals: [%v,%v] vs [%v,%v]", lo1, hi1, lo2, hi2)
	}
	lo3, hi3 := BootstrapMeanCI(xs, 0.95, Resamples, 43)
	if lo1 == lo3 && hi1 == hi3 {
		t.Errorf("another seed gave the identical interval [%v,%v]: the seed is not used", lo1, hi1)
	}
	// the bootstrap means lie between the sample's min and max, and the
	// interval is narrower than the range
	if lo1 < 9 || hi1 > 22 || hi1-lo1 >= 13 || lo1 >= hi1 {
		t.Errorf("interval [%v, %v] of %v", lo1, hi1, xs)
	}
}

// TestBootstrapCoverage: for samples of a known distribution, the 95 %
// interval contains the true mean about 95 % of the time (the percentile
// bootstrap undercovers somewhat at small n: at least 85 % of 300 samples
// of 20). A broken interval (too narrow, or not around the mean) fails.
func TestBootstrapCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const trials, n, mu = 300, 20, 100.0
	covered := 0
	for i := range trials {
		xs := make([]float64, n)
		for j := range xs {
			xs[j] = mu + 10*rng.NormFloat64()
		}
		lo, hi := BootstrapMeanCI(xs, 0.95, 2000, uint64(i))
		if lo <= mu && mu <= hi {
			covered++
		}
	}
	if frac := float64(covered) / trials; frac < 0.85 || frac > 0.99 {
		t.Fatalf("coverage %.3f of %d intervals, want about 0.95", frac, trials)
	}
}

// sample draws n values of N(mu, sd) from seed.
func sample(seed uint64, n int, mu, sd float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, seed))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = mu + sd*rng.NormFloat64()
	}
	return xs
}

// TestCompareNegativeControl: two clearly different samples are
// significant, two from one distribution are not (fixed seeds).
func TestCompareNegativeControl(t *testing.T) {
	for _, tc := range []struct {
		name        string
		a, b        []float64
		significant bool
	}{
		{"clearly different", sample(1, 5, 1000, 50), sample(2, 5, 2000, 50), true},
		{"different, ten each", sample(3, 10, 100, 10), sample(4, 10, 130, 10), true},
		{"same distribution", sample(5, 5, 1000, 50), sample(6, 5, 1000, 50), false},
		{"same distribution, ten each", sample(7, 10, 100, 10), sample(8, 10, 100, 10), false},
		{"identical", []float64{1, 2, 3}, []float64{1, 2, 3}, false},
		// three against three: the smallest possible p is 2/20, so no
		// difference is significant at 5 %
		{"too few to reach 5 %", []float64{1, 2, 3}, []float64{100, 101, 102}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Compare(tc.a, tc.b, 11)
			if !d.Judged {
				t.Fatal("not judged")
			}
			if d.Significant != tc.significant {
				t.Fatalf("significant %v (p=%.4f overlap=%v), want %v", d.Significant, d.P, d.Overlap, tc.significant)
			}
		})
	}
}

func TestPermutationTestKnown(t *testing.T) {
	// {1,2,3} vs {4,5,6}: of the 20 labellings only the observed one and
	// its mirror are as extreme: exact p = 0.1
	p := PermutationTest([]float64{1, 2, 3}, []float64{4, 5, 6}, Resamples, 3)
	if math.Abs(p-0.1) > 0.015 {
		t.Errorf("p = %.4f, want about 0.10", p)
	}
	if p := PermutationTest([]float64{1, 2, 3}, []float64{1, 2, 3}, 1000, 3); p != 1 {
		t.Errorf("identical samples: p = %v, want 1", p)
	}
	if p1, p2 := PermutationTest([]float64{1, 5, 2, 8}, []float64{3, 9, 7, 4}, 500, 9), PermutationTest([]float64{1, 5, 2, 8}, []float64{3, 9, 7, 4}, 500, 9); p1 != p2 {
		t.Errorf("same seed: p %v then %v", p1, p2)
	}
}

func TestCompareTooFew(t *testing.T) {
	d := Compare([]float64{1, 2}, []float64{100, 200, 300}, 1)
	if d.Judged || d.Significant {
		t.Fatalf("n=2 judged: %+v", d)
	}
}
