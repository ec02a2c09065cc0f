package analyze

import (
	"reflect"
	"testing"
	"time"
)

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func cat(parts ...[]float64) []float64 {
	var out []float64
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestSteadyStretches(t *testing.T) {
	alt := func(lo, hi float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = lo
			if i%2 == 1 {
				out[i] = hi
			}
		}
		return out
	}
	w := 100 * time.Millisecond
	for _, tc := range []struct {
		name   string
		tp     []float64
		window time.Duration
		span   time.Duration
		want   [][2]int
	}{
		{"flat", repeat(1000, 30), w, sec, [][2]int{{0, 30}}},
		{"exactly ±2% is steady", alt(980, 1020, 30), w, sec, [][2]int{{0, 30}}},
		{"±2.1% is not", alt(979, 1021, 30), w, sec, nil},
		{"spike splits", cat(repeat(1000, 20), []float64{1100}, repeat(1000, 20)), w, sec, [][2]int{{0, 20}, {21, 41}}},
		{"step gives two levels", cat(repeat(1000, 15), repeat(700, 15)), w, 500 * time.Millisecond, [][2]int{{0, 15}, {15, 30}}},
		{"shorter than the span", repeat(1000, 9), w, sec, nil},
		{"exactly one span", repeat(1000, 10), w, sec, [][2]int{{0, 10}}},
		{"span rounds up", repeat(1000, 10), w, 1050 * time.Millisecond, nil},
		{"tiny span means two windows", cat(repeat(1000, 3), []float64{0}, repeat(1000, 3)), w, time.Millisecond, [][2]int{{0, 3}, {4, 7}}},
		{"zero level is steady", repeat(0, 12), w, sec, [][2]int{{0, 12}}},
		{"ramp is not steady", []float64{100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1100}, w, sec, nil},
		{"1 s windows, 10 s span", cat(repeat(500, 5), repeat(1000, 12)), sec, 10 * sec, [][2]int{{5, 17}}},
		{"empty", nil, w, sec, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SteadyStretches(tc.tp, tc.window, 0.02, tc.span)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("SteadyStretches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSmooth(t *testing.T) {
	w := 100 * time.Millisecond
	tp := []float64{0, 0, 0, 10, 0, 0, 0}
	for _, tc := range []struct {
		name  string
		width time.Duration
		want  []float64
	}{
		{"none", 0, tp},
		{"below two windows", 150 * time.Millisecond, tp},
		{"three windows", 300 * time.Millisecond, []float64{0, 0, 10.0 / 3, 10.0 / 3, 10.0 / 3, 0, 0}},
		{"clipped at the ends", 700 * time.Millisecond, []float64{10.0 / 4, 10.0 / 5, 10.0 / 6, 10.0 / 7, 10.0 / 6, 10.0 / 5, 10.0 / 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Smooth(tp, w, tc.width)
			if len(got) != len(tc.want) {
				t.Fatalf("len %d", len(got))
			}
			for i := range got {
				if d := got[i] - tc.want[i]; d > 1e-12 || d < -1e-12 {
					t.Fatalf("Smooth = %v, want %v", got, tc.want)
				}
			}
		})
	}
	t.Run("does not alias", func(t *testing.T) {
		in := []float64{1, 2}
		Smooth(in, w, 0)[0] = 9
		if in[0] != 1 {
			t.Error("input modified")
		}
	})
}

func TestNoisyBaselineNeedsSmoothing(t *testing.T) {
	// 100 ms windows alternating ±5 % around 1000: not steady window by
	// window, steady after the default 1 s smoothing.
	rows := gen(100*time.Millisecond, 30*sec, 0, func(t time.Duration) point {
		p := point{ops: 950, mean: 1000, p50: 1000, p99: 2000, maxUs: 3000}
		if (t/(100*time.Millisecond))%2 == 1 {
			p.ops = 1050
		}
		return p
	})
	for _, tc := range []struct {
		name   string
		smooth time.Duration
		steady bool
	}{{"smoothed", sec, true}, {"raw", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			p := exactParams()
			p.Smooth = tc.smooth
			r := mustAnalyze(t, rows, nil, p)
			if r.BaselineSteady != tc.steady {
				t.Errorf("BaselineSteady = %v, want %v (notes %v)", r.BaselineSteady, tc.steady, r.Notes)
			}
			eq(t, "BaselineOps", r.BaselineOps, 1000)
		})
	}
}
