package workload

import (
	"math"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/properties"
)

// newFromText builds a workload from Java-properties text, as if read from
// file name.
func newFromText(t *testing.T, name, text string) (*Workload, *properties.Properties) {
	t.Helper()
	p := properties.New()
	if err := p.Load(strings.NewReader(text), name); err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	w, err := New(p)
	if err != nil {
		t.Fatalf("New(%s): %v", name, err)
	}
	return w, p
}

// chiSquare returns the chi-square statistic of observed counts against
// expected counts.
func chiSquare(obs, exp []float64) float64 {
	s := 0.0
	for i := range obs {
		d := obs[i] - exp[i]
		s += d * d / exp[i]
	}
	return s
}

// chiCritical returns the upper 0.1% point of the chi-square distribution
// with df degrees of freedom (Wilson-Hilferty approximation, accurate to a
// few percent for df >= 1, plenty for a fixed-seed test).
func chiCritical(df int) float64 {
	const z = 3.090232 // standard normal 0.999 quantile
	k := float64(df)
	c := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * c * c * c
}

// checkChi fails t when obs does not fit the probabilities p (which must sum
// to 1) at the 0.1% level.
func checkChi(t *testing.T, what string, obs []float64, p []float64) {
	t.Helper()
	n := 0.0
	for _, o := range obs {
		n += o
	}
	exp := make([]float64, len(p))
	for i := range p {
		exp[i] = p[i] * n
		if exp[i] < 5 {
			t.Fatalf("%s: bin %d expects %.2f < 5 samples; choose wider bins", what, i, exp[i])
		}
	}
	chi := chiSquare(obs, exp)
	crit := chiCritical(len(obs) - 1)
	if chi > crit {
		t.Errorf("%s: chi-square %.1f > critical %.1f (df %d)", what, chi, crit, len(obs)-1)
	} else {
		t.Logf("%s: chi-square %.1f <= critical %.1f (df %d)", what, chi, crit, len(obs)-1)
	}
}
