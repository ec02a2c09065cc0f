package upb

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/runfile"
)

// TValue is one measured T(K,F): the maximum sustained throughput (ops/s)
// with fault-tolerance index K and F failed nodes.
type TValue struct {
	K int     `json:"k"`
	F int     `json:"f"`
	T float64 `json:"t_ops"`
}

// Metrics are the partial and final metrics of UPB §3.3–3.4 computed
// from T values. A metric whose inputs are missing is nil.
type Metrics struct {
	KMax int `json:"kmax"`
	// T00 is T(0,0), the basis of comparison (Table VI).
	T00 *float64 `json:"t00_ops,omitempty"`
	// Ks holds K = 1..KMax in order (Tables VII–IX).
	Ks []KMetrics `json:"k"`
	// DT is the mean of D(K,0) over K = 1..KMax; DF the mean of DF(K).
	DT *float64 `json:"d_t_pct,omitempty"`
	DF *float64 `json:"d_f_pct,omitempty"`
	// Missing lists the T values the metrics needed but did not get.
	Missing []string `json:"missing,omitempty"`
}

// KMetrics are the metrics of one fault-tolerance index K ≥ 1.
type KMetrics struct {
	K   int      `json:"k"`
	T   *float64 `json:"t_ops,omitempty"`    // T(K,0)
	D   *float64 `json:"d_k0_pct,omitempty"` // D(K,0)
	DFK *float64 `json:"df_pct,omitempty"`   // DF(K)
	// Fs holds F = 1..K in order (Table VIII).
	Fs []FMetrics `json:"f"`
}

// FMetrics are T(K,F) and D(K,F) of one F ≥ 1.
type FMetrics struct {
	F int      `json:"f"`
	T *float64 `json:"t_ops,omitempty"`
	D *float64 `json:"d_kf_pct,omitempty"`
}

// DegradationK0 is D(K,0) = (1 − T(K,0)/T(0,0)) · 100, the performance
// degradation caused by the fault-tolerance mechanism (UPB §3.3 step 2).
func DegradationK0(tK0, t00 float64) float64 { return (1 - tK0/t00) * 100 }

// DegradationKF is D(K,F) = (1 − T(K,F)/T(K,0)) · 100, the degradation
// caused by F failed nodes (step 3).
func DegradationKF(tKF, tK0 float64) float64 { return (1 - tKF/tK0) * 100 }

// WeightedDF is DF(K) = Σ_{F=1..K} D(K,F)/F / Σ_{F=1..K} 1/F for
// dKF = [D(K,1), ..., D(K,K)]: simultaneous failures weigh less. It returns
// NaN for an empty slice.
func WeightedDF(dKF []float64) float64 {
	if len(dKF) == 0 {
		return math.NaN()
	}
	var num, den float64
	for i, d := range dKF {
		w := 1 / float64(i+1)
		num += w * d
		den += w
	}
	return num / den
}

// Mean is the arithmetic mean (D_T of the D(K,0), D_F of the DF(K)); NaN for
// an empty slice.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Compute derives every metric from the T values. It rejects structural
// errors (negative K or F, F > K, T ≤ 0 or not finite, duplicates) and
// reports missing inputs in Metrics.Missing: a metric that lacks an input is
// nil, the others are computed. KMax is the largest K given.
func Compute(ts []TValue) (*Metrics, error) {
	byKF := map[[2]int]float64{}
	kmax := 0
	var errs []error
	for _, v := range ts {
		switch {
		case v.K < 0 || v.F < 0:
			errs = append(errs, fmt.Errorf("T(%d,%d): K and F must not be negative", v.K, v.F))
			continue
		case v.F > v.K:
			errs = append(errs, fmt.Errorf("T(%d,%d): F > K is not a UPB scenario (a cluster with K=%d does not survive %d failures)", v.K, v.F, v.K, v.F))
			continue
		case !(v.T > 0) || math.IsInf(v.T, 0):
			errs = append(errs, fmt.Errorf("T(%d,%d) = %g: must be a positive throughput", v.K, v.F, v.T))
			continue
		}
		if _, dup := byKF[[2]int{v.K, v.F}]; dup {
			errs = append(errs, fmt.Errorf("T(%d,%d) given twice", v.K, v.F))
			continue
		}
		byKF[[2]int{v.K, v.F}] = v.T
		kmax = max(kmax, v.K)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	m := &Metrics{KMax: kmax}
	get := func(k, f int) *float64 {
		if t, ok := byKF[[2]int{k, f}]; ok {
			return &t
		}
		m.Missing = append(m.Missing, fmt.Sprintf("T(%d,%d)", k, f))
		return nil
	}
	m.T00 = get(0, 0)
	var dk0s, dfs []float64
	allDK0, allDF := kmax > 0, kmax > 0
	for k := 1; k <= kmax; k++ {
		km := KMetrics{K: k, T: get(k, 0)}
		if km.T != nil && m.T00 != nil {
			km.D = ptr(DegradationK0(*km.T, *m.T00))
			dk0s = append(dk0s, *km.D)
		} else {
			allDK0 = false
		}
		var dkf []float64
		for f := 1; f <= k; f++ {
			fm := FMetrics{F: f, T: get(k, f)}
			if fm.T != nil && km.T != nil {
				fm.D = ptr(DegradationKF(*fm.T, *km.T))
				dkf = append(dkf, *fm.D)
			}
			km.Fs = append(km.Fs, fm)
		}
		if len(dkf) == k {
			km.DFK = ptr(WeightedDF(dkf))
			dfs = append(dfs, *km.DFK)
		} else {
			allDF = false
		}
		m.Ks = append(m.Ks, km)
	}
	if allDK0 {
		m.DT = ptr(Mean(dk0s))
	}
	if allDF {
		m.DF = ptr(Mean(dfs))
	}
	return m, nil
}

func ptr(v float64) *float64 { return &v }

// ReadCSV reads T values from CSV rows k,f,t (ops/s). A first row whose
// fields are not numbers is a header; blank lines and lines starting with
// '#' are skipped. name is used in errors.
func ReadCSV(r io.Reader, name string) ([]TValue, error) {
	var lines []string
	var nums []int
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		lines = append(lines, line)
		nums = append(nums, n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var out []TValue
	for i, line := range lines {
		rec, err := csv.NewReader(strings.NewReader(line)).Read()
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, nums[i], err)
		}
		for j := range rec {
			rec[j] = strings.TrimSpace(rec[j])
		}
		if len(rec) != 3 {
			return nil, fmt.Errorf("%s:%d: %d fields, want 3 (k,f,t)", name, nums[i], len(rec))
		}
		k, kerr := strconv.Atoi(rec[0])
		f, ferr := strconv.Atoi(rec[1])
		t, terr := strconv.ParseFloat(rec[2], 64)
		if kerr != nil || ferr != nil || terr != nil {
			if i == 0 && !numeric(rec[0]) && !numeric(rec[1]) && !numeric(rec[2]) {
				continue // header
			}
			return nil, fmt.Errorf("%s:%d: %q: want k,f,t with integers k and f and a throughput t in ops/s (e.g. 1,0,156659)", name, nums[i], line)
		}
		out = append(out, TValue{K: k, F: f, T: t})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no k,f,t rows", name)
	}
	return out, nil
}

func numeric(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// ReadCSVFile reads T values from a CSV file (see ReadCSV).
func ReadCSVFile(path string) ([]TValue, error) {
	f, err := runfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading T values: %w", err)
	}
	defer f.Close()
	return ReadCSV(f, path)
}

// WriteCSV writes T values as CSV with the header k,f,t, sorted by K then F.
func WriteCSV(w io.Writer, ts []TValue) error {
	s := append([]TValue(nil), ts...)
	sort.Slice(s, func(i, j int) bool {
		if s[i].K != s[j].K {
			return s[i].K < s[j].K
		}
		return s[i].F < s[j].F
	})
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"k", "f", "t"}); err != nil {
		return err
	}
	for _, v := range s {
		if err := cw.Write([]string{strconv.Itoa(v.K), strconv.Itoa(v.F), strconv.FormatFloat(v.T, 'f', -1, 64)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
