package upb

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestDegradationK0(t *testing.T) {
	for _, tc := range []struct {
		name       string
		tK0, t00   float64
		want       float64
		wantApprox bool
	}{
		{name: "no change", tK0: 100, t00: 100, want: 0},
		{name: "half", tK0: 50, t00: 100, want: 50},
		{name: "increase is negative", tK0: 150, t00: 100, want: -50},
		{name: "VoltDB K=1", tK0: 156659, t00: 238740, want: 34.3809, wantApprox: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DegradationK0(tc.tK0, tc.t00)
			tol := 1e-12
			if tc.wantApprox {
				tol = 1e-4
			}
			if !near(got, tc.want, tol) {
				t.Errorf("D(K,0) of %g/%g = %g, want %g", tc.tK0, tc.t00, got, tc.want)
			}
		})
	}
}

func TestDegradationKF(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tKF, tK0 float64
		want     float64
	}{
		{name: "no change", tKF: 80, tK0: 80, want: 0},
		{name: "quarter lost", tKF: 60, tK0: 80, want: 25},
		{name: "increase is negative", tKF: 88, tK0: 80, want: -10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DegradationKF(tc.tKF, tc.tK0); !near(got, tc.want, 1e-12) {
				t.Errorf("D(K,F) of %g/%g = %g, want %g", tc.tKF, tc.tK0, got, tc.want)
			}
		})
	}
}

func TestWeightedDF(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    []float64
		want float64
	}{
		{name: "K=1 is D(1,1)", d: []float64{7}, want: 7},
		{name: "K=2 weights 1 and 1/2", d: []float64{3, 6}, want: (3 + 6.0/2) / 1.5},
		{name: "K=3 weights 1, 1/2, 1/3", d: []float64{6, 12, 18}, want: (6 + 6 + 6) / (1 + 0.5 + 1.0/3)},
		{name: "equal values stay", d: []float64{4, 4, 4, 4}, want: 4},
		{name: "negative values", d: []float64{-2, -4}, want: (-2 - 2) / 1.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := WeightedDF(tc.d); !near(got, tc.want, 1e-12) {
				t.Errorf("DF(%v) = %g, want %g", tc.d, got, tc.want)
			}
		})
	}
	t.Run("empty is NaN", func(t *testing.T) {
		if got := WeightedDF(nil); !math.IsNaN(got) {
			t.Errorf("DF() = %g, want NaN", got)
		}
	})
}

func TestMean(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{name: "one", xs: []float64{3}, want: 3},
		{name: "three", xs: []float64{1, 2, 6}, want: 3},
		{name: "signed", xs: []float64{-4, 2}, want: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Mean(tc.xs); !near(got, tc.want, 1e-12) {
				t.Errorf("Mean(%v) = %g, want %g", tc.xs, got, tc.want)
			}
		})
	}
	t.Run("empty is NaN", func(t *testing.T) {
		if !math.IsNaN(Mean(nil)) {
			t.Error("Mean() is not NaN")
		}
	})
}

func TestComputeRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		ts   []TValue
		want string
	}{
		{name: "negative K", ts: []TValue{{K: -1, F: 0, T: 1}}, want: "must not be negative"},
		{name: "F above K", ts: []TValue{{K: 1, F: 2, T: 1}}, want: "F > K"},
		{name: "zero T", ts: []TValue{{K: 0, F: 0, T: 0}}, want: "positive throughput"},
		{name: "NaN T", ts: []TValue{{K: 0, F: 0, T: math.NaN()}}, want: "positive throughput"},
		{name: "infinite T", ts: []TValue{{K: 0, F: 0, T: math.Inf(1)}}, want: "positive throughput"},
		{name: "duplicate", ts: []TValue{{K: 0, F: 0, T: 1}, {K: 0, F: 0, T: 2}}, want: "given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compute(tc.ts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compute(%v) error %v, want one containing %q", tc.ts, err, tc.want)
			}
		})
	}
}

func TestComputeMissing(t *testing.T) {
	t.Run("no T(0,0)", func(t *testing.T) {
		m, err := Compute([]TValue{{1, 0, 90}, {1, 1, 80}})
		if err != nil {
			t.Fatal(err)
		}
		if m.T00 != nil || m.Ks[0].D != nil || m.DT != nil {
			t.Errorf("metrics that need T(0,0) were computed: %+v", m)
		}
		if m.Ks[0].DFK == nil || !near(*m.Ks[0].DFK, DegradationKF(80, 90), 1e-12) || m.DF == nil {
			t.Errorf("DF_1 and D_F should not need T(0,0): %+v", m.Ks[0])
		}
		if strings.Join(m.Missing, ",") != "T(0,0)" {
			t.Errorf("Missing = %v, want [T(0,0)]", m.Missing)
		}
	})
	t.Run("no T(2,2)", func(t *testing.T) {
		m, err := Compute([]TValue{{0, 0, 100}, {1, 0, 90}, {1, 1, 80}, {2, 0, 70}, {2, 1, 60}})
		if err != nil {
			t.Fatal(err)
		}
		if m.KMax != 2 || m.DT == nil || !near(*m.DT, (10+30)/2.0, 1e-9) {
			t.Errorf("D_T = %v, want 20 (KMax %d)", m.DT, m.KMax)
		}
		if m.Ks[1].DFK != nil || m.DF != nil {
			t.Errorf("DF_2 and D_F need T(2,2): DF_2 %v, D_F %v", m.Ks[1].DFK, m.DF)
		}
		if m.Ks[1].Fs[0].D == nil || m.Ks[1].Fs[1].D != nil {
			t.Errorf("D(2,1) should be there and D(2,2) not: %+v", m.Ks[1].Fs)
		}
		if strings.Join(m.Missing, ",") != "T(2,2)" {
			t.Errorf("Missing = %v, want [T(2,2)]", m.Missing)
		}
	})
	t.Run("only T(0,0)", func(t *testing.T) {
		m, err := Compute([]TValue{{0, 0, 100}})
		if err != nil {
			t.Fatal(err)
		}
		if m.KMax != 0 || m.DT != nil || m.DF != nil || len(m.Ks) != 0 {
			t.Errorf("K=0 alone has no D_T or D_F: %+v", m)
		}
	})
}

func TestComputeSmall(t *testing.T) {
	m, err := Compute([]TValue{{0, 0, 1000}, {1, 0, 800}, {1, 1, 600}, {2, 0, 500}, {2, 1, 400}, {2, 2, 250}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"D(1,0)": 20, "D(2,0)": 50, "D(1,1)": 25, "D(2,1)": 20, "D(2,2)": 50,
		"DF_1": 25, "DF_2": (20 + 50.0/2) / 1.5, "D_T": 35, "D_F": (25 + 30) / 2.0,
	}
	got := map[string]*float64{
		"D(1,0)": m.Ks[0].D, "D(2,0)": m.Ks[1].D, "D(1,1)": m.Ks[0].Fs[0].D, "D(2,1)": m.Ks[1].Fs[0].D,
		"D(2,2)": m.Ks[1].Fs[1].D, "DF_1": m.Ks[0].DFK, "DF_2": m.Ks[1].DFK, "D_T": m.DT, "D_F": m.DF,
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			if got[name] == nil || !near(*got[name], w, 1e-9) {
				t.Errorf("%s = %v, want %g", name, got[name], w)
			}
		})
	}
}

// published is a value as printed in the paper; it must be reproduced to
// within one unit of its last printed digit (the paper rounds and sometimes
// truncates), or two units for DF_K, D_T and D_F, which the paper computed
// from its already rounded D values.
type published struct {
	metric string
	text   string
}

func (p published) value() float64 {
	v, _ := strconv.ParseFloat(p.text, 64)
	return v
}

func (p published) tolerance() float64 {
	u := 1.0
	if i := strings.IndexByte(p.text, '.'); i >= 0 {
		u = math.Pow(10, -float64(len(p.text)-i-1))
	}
	if !strings.HasPrefix(p.metric, "D(") {
		u *= 2
	}
	return u
}

func metricByName(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	var v *float64
	var k, f int
	switch {
	case name == "D_T":
		v = m.DT
	case name == "D_F":
		v = m.DF
	case strings.HasPrefix(name, "DF_"):
		k, _ = strconv.Atoi(name[3:])
		v = m.Ks[k-1].DFK
	default: // D(K,F)
		if _, err := fmtSscanf(name, &k, &f); err != nil {
			t.Fatalf("bad metric name %q", name)
		}
		if f == 0 {
			v = m.Ks[k-1].D
		} else {
			v = m.Ks[k-1].Fs[f-1].D
		}
	}
	if v == nil {
		t.Fatalf("%s not computed", name)
	}
	return *v
}

func fmtSscanf(name string, k, f *int) (int, error) {
	s := strings.TrimSuffix(strings.TrimPrefix(name, "D("), ")")
	a, b, ok := strings.Cut(s, ",")
	if !ok {
		return 0, strconv.ErrSyntax
	}
	var err error
	if *k, err = strconv.Atoi(a); err != nil {
		return 0, err
	}
	if *f, err = strconv.Atoi(b); err != nil {
		return 1, err
	}
	return 2, nil
}

// TestPaperTables feeds the T values published in the UPB paper §4 (Tables VI,
// VII, VIII) into Compute and checks the D values, DF_K, D_T and D_F the
// paper publishes (Tables VII–X).
func TestPaperTables(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []published
	}{
		{"testdata/paper-voltdb.csv", []published{
			{"D(1,0)", "34.38"}, {"D(2,0)", "52.92"}, {"D(3,0)", "57.32"},
			{"D(1,1)", "2.928"}, {"D(2,1)", "1.687"}, {"D(2,2)", "2.319"},
			{"D(3,1)", "8.910"}, {"D(3,2)", "14.781"}, {"D(3,3)", "25.413"},
			{"DF_1", "2.928"}, {"DF_2", "1.897"}, {"DF_3", "13.511"},
			{"D_T", "48.21"}, {"D_F", "6.11"},
		}},
		{"testdata/paper-nuodb.csv", []published{
			{"D(1,0)", "8.30"}, {"D(2,0)", "8.00"}, {"D(3,0)", "10.22"},
			{"D(1,1)", "-8.05"}, {"D(2,1)", "-2.48"}, {"D(2,2)", "-5.84"},
			{"D(3,1)", "-2.27"}, {"D(3,2)", "-2.72"}, {"D(3,3)", "-3.10"},
			{"DF_1", "-8.05"}, {"DF_2", "-3.6"},
			{"D_T", "8.84"},
		}},
		{"testdata/paper-dbmsx.csv", []published{
			{"D(1,0)", "-43.86"}, {"D(2,0)", "-52.44"}, {"D(3,0)", "-63.90"},
			{"D(1,1)", "42.72"}, {"D(2,1)", "23.56"}, {"D(2,2)", "64.26"},
			{"D(3,2)", "31.02"}, {"D(3,3)", "56.50"},
			{"DF_1", "42.72"}, {"DF_2", "37.13"},
			{"D_T", "-53.4"},
		}},
	} {
		t.Run(strings.TrimSuffix(strings.TrimPrefix(tc.file, "testdata/paper-"), ".csv"), func(t *testing.T) {
			ts, err := ReadCSVFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Compute(ts)
			if err != nil {
				t.Fatal(err)
			}
			if m.KMax != 3 || len(m.Missing) > 0 {
				t.Fatalf("KMax %d, missing %v", m.KMax, m.Missing)
			}
			for _, p := range tc.want {
				t.Run(p.metric, func(t *testing.T) {
					got := metricByName(t, m, p.metric)
					if !near(got, p.value(), p.tolerance()+1e-9) {
						t.Errorf("%s = %.4f, paper publishes %s", p.metric, got, p.text)
					}
				})
			}
		})
	}
}

// TestPaperErrata pins the published values that do not follow from the
// paper's own T values and formulas (docs/upb.md, "The paper's tables"):
// the recomputed value is asserted, and the published one is shown to be
// out of reach even from the paper's own rounded D(K,F) values.
func TestPaperErrata(t *testing.T) {
	for _, tc := range []struct {
		name, file, metric string
		published, ours    float64
		tol                float64
		// fromPublished are the paper's printed D(3,1..3); nil if not a DF.
		fromPublished []float64
	}{
		{name: "NuoDB DF_3", file: "testdata/paper-nuodb.csv", metric: "DF_3", published: -2.475, ours: -2.5487, tol: 1e-3,
			fromPublished: []float64{-2.27, -2.72, -3.10}},
		{name: "NuoDB D_F", file: "testdata/paper-nuodb.csv", metric: "D_F", published: -4.70, ours: -4.735, tol: 1e-3},
		{name: "Dbms-X D(3,1)", file: "testdata/paper-dbmsx.csv", metric: "D(3,1)", published: 12.76, ours: 12.711, tol: 1e-3},
		{name: "Dbms-X DF_3", file: "testdata/paper-dbmsx.csv", metric: "DF_3", published: 27.05, ours: 25.669, tol: 1e-3,
			fromPublished: []float64{12.76, 31.02, 56.50}},
		{name: "Dbms-X D_F", file: "testdata/paper-dbmsx.csv", metric: "D_F", published: 35.63, ours: 35.176, tol: 1e-3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, err := ReadCSVFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Compute(ts)
			if err != nil {
				t.Fatal(err)
			}
			got := metricByName(t, m, tc.metric)
			if !near(got, tc.ours, tc.tol) {
				t.Errorf("%s = %.4f, want %.4f", tc.metric, got, tc.ours)
			}
			if near(got, tc.published, 0.01) {
				t.Errorf("%s = %.4f now matches the published %g: not an erratum", tc.metric, got, tc.published)
			}
			if tc.fromPublished != nil {
				if df := WeightedDF(tc.fromPublished); near(df, tc.published, 0.01) {
					t.Errorf("the published D(3,F) give DF_3 = %.4f = the published %g: not an erratum", df, tc.published)
				}
			}
		})
	}
}

func TestReadCSV(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []TValue
		err      string
	}{
		{name: "header and rows", in: "k,f,t\n0,0,100\n1,0,90.5\n", want: []TValue{{0, 0, 100}, {1, 0, 90.5}}},
		{name: "no header, spaces, comments, blank lines", in: "# T values\n\n 0, 0, 100 \n1,1,80\n", want: []TValue{{0, 0, 100}, {1, 1, 80}}},
		{name: "CRLF", in: "k,f,t\r\n0,0,100\r\n", want: []TValue{{0, 0, 100}}},
		{name: "two fields", in: "0,0\n", err: "2 fields, want 3"},
		{name: "not a number", in: "k,f,t\n0,0,fast\n", err: ":2:"},
		{name: "fractional K", in: "0.5,0,100\n", err: "want k,f,t"},
		{name: "header only", in: "k,f,t\n", err: "no k,f,t rows"},
		{name: "empty", in: "", err: "no k,f,t rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadCSV(strings.NewReader(tc.in), "x.csv")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("row %d: %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestWriteCSVRoundTrip(t *testing.T) {
	in := []TValue{{2, 1, 60.25}, {0, 0, 100}, {1, 0, 90}}
	var b bytes.Buffer
	if err := WriteCSV(&b, in); err != nil {
		t.Fatal(err)
	}
	if want := "k,f,t\n0,0,100\n1,0,90\n2,1,60.25\n"; b.String() != want {
		t.Errorf("WriteCSV wrote %q, want %q (sorted by K, F)", b.String(), want)
	}
	back, err := ReadCSV(&b, "rt.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 3 || back[2] != (TValue{2, 1, 60.25}) {
		t.Errorf("read back %v", back)
	}
}
