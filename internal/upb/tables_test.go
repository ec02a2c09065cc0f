package upb

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// squash collapses runs of spaces so tests do not depend on column widths.
func squash(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

func TestWriteMetricTables(t *testing.T) {
	ts, err := ReadCSVFile("testdata/paper-voltdb.csv")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Compute(ts)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	WriteMetricTables(&b, m, 90000)
	out := squash(b.String())
	for _, want := range []string{
		"Table VI. Parameters", "L_c 90000 ops/s", "T(0,0) 238740 ops/s",
		"Table VII.", "K=0 238740 -", "K=1 156659 34.38 %", "K=3 101899 57.32 %",
		"Table VIII.", "K=2 and F=2 109781 2.320 %", "K=3 and F=1 92819 8.910 %",
		"Table IX.", "DF_2 1.898 %", "DF_3 13.512 %",
		"Table X.", "D_T 48.21 %", "D_F 6.11 %",
	} {
		t.Run(want, func(t *testing.T) {
			if !strings.Contains(out, want) {
				t.Errorf("tables lack %q:\n%s", want, b.String())
			}
		})
	}
	t.Run("no negative note for VoltDB", func(t *testing.T) {
		if strings.Contains(out, "negative value") {
			t.Error("note about negative values without one")
		}
	})
}

func TestWriteMetricTablesNegativeAndMissing(t *testing.T) {
	m, err := Compute([]TValue{{0, 0, 100}, {1, 0, 120}, {2, 0, 90}, {2, 1, 95}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	WriteMetricTables(&b, m, 0)
	out := squash(b.String())
	for _, want := range []string{"K=1 120 -20.00 %*", "K=1 and F=1 n/a n/a", "DF_1 n/a", "D_F n/a", "a negative value means a performance increase", "missing T values: T(1,1), T(2,2)"} {
		if !strings.Contains(out, want) {
			t.Errorf("tables lack %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(out, "L_c") {
		t.Error("L_c printed though unknown")
	}
}

func TestWriteSearchTables(t *testing.T) {
	lc, err := CalibrateLc(context.Background(), &model{cap: 1000}, LcConfig{InitialQ: 500, Criteria: crit, Mode: Bisect, Hint: true})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	WriteLcTable(&b, lc, 8)
	out := squash(b.String())
	for _, want := range []string{"Table IV.", "one client of 8 threads, bisect search", "closed loop 1000", "hint: places the first probe",
		"not sustained: did not keep up", "L_c = 0.9 × 1072 = 965 ops/s (last Q sustained: 974 ops/s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("Table IV lacks %q:\n%s", want, b.String())
		}
	}
	bl, err := Algorithm1(context.Background(), &model{cap: 1500}, BaselineConfig{Lc: lc.Lc, MaxClients: 4, Criteria: crit, Mode: Linear})
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	WriteBaselineTable(&b, &SearchRecord{K: 1, F: 1, Kind: "etcd", Nodes: 3, Failed: []string{"n2"}, Baseline: bl})
	out = squash(b.String())
	for _, want := range []string{"Table V. Runs to determine T(1,1) (K=1, F=1; 3 members; failed: n2)",
		"step clients Q_total (ops/s) achieved (ops/s) variation within φ steady verdict", "1 1 96 96 0.0 % 100.0 % yes sustained",
		"T(1,1) = 1500 ops/s, measured at Q_total = 1555 ops/s with 2 clients", "was not sustained"} {
		if !strings.Contains(out, want) {
			t.Errorf("Table V lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	WriteBaselineTable(&b, &SearchRecord{K: 2, F: 0, Kind: "redis-cluster", Nodes: 3, Replicas: 2, Error: "cluster gone"})
	for _, want := range []string{"(K=2, F=0; 3 masters with 2 replicas each, 9 nodes)", "no T(2,0): cluster gone"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("failed search table lacks %q:\n%s", want, b.String())
		}
	}
}
