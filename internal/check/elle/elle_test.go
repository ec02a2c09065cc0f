package elle

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
)

// tx builds an operation from a compact text: "a x 1" appends 1 to x,
// "r x [1 2]" reads list x, "w x 3" writes register x, "r x 3" / "r x nil"
// reads it; micro-operations separated by ";". Times are (s, e).
func tx(p int, s, e int64, o history.Outcome, text string) history.Op {
	op := history.Op{Process: p, Invoke: s, Complete: e, Outcome: o, Name: "txn"}
	for _, part := range strings.Split(text, ";") {
		f := strings.Fields(part)
		m := history.Mop{Key: f[1]}
		switch f[0] {
		case "a":
			m.F = history.Append
			m.Value, _ = strconv.ParseInt(f[2], 10, 64)
		case "w":
			m.F = history.Write
			m.Value, _ = strconv.ParseInt(f[2], 10, 64)
		case "r":
			m.F = history.Read
			rest := strings.Join(f[2:], " ")
			switch {
			case strings.HasPrefix(rest, "["):
				m.IsList = true
				m.List = []int64{}
				for _, s := range strings.Fields(strings.Trim(rest, "[]")) {
					v, _ := strconv.ParseInt(s, 10, 64)
					m.List = append(m.List, v)
				}
			case rest != "nil":
				m.HasValue = true
				m.Value, _ = strconv.ParseInt(rest, 10, 64)
			}
		}
		op.Mops = append(op.Mops, m)
	}
	return op
}

// seq makes a history of transactions by distinct processes that all
// overlap (no real-time order among them).
func seq(texts ...string) []history.Op {
	var ops []history.Op
	for i, t := range texts {
		o := history.OK
		if rest, ok := strings.CutPrefix(t, "FAIL "); ok {
			o, t = history.Fail, rest
		} else if rest, ok := strings.CutPrefix(t, "UNKNOWN "); ok {
			o, t = history.Unknown, rest
		}
		ops = append(ops, tx(i, int64(i), 1000, o, t))
	}
	return ops
}

func check(t *testing.T, ops []history.Op, model string) verdict.Verdict {
	t.Helper()
	v, err := CheckOps(context.Background(), ops, Options{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestAnomalies(t *testing.T) {
	tests := []struct {
		name  string
		ops   []history.Op
		model string
		want  map[string]int // anomaly counts expected (others must be 0)
		valid verdict.Valid
	}{
		{"G0 write cycle", seq("a x 1; a y 1", "a x 2; a y 2", "r x [1 2]; r y [2 1]"),
			"read-committed", map[string]int{G0: 1}, verdict.False},
		{"G1a aborted read", seq("FAIL a x 1", "r x [1]"), "read-committed", map[string]int{G1a: 1}, verdict.False},
		{"G1b intermediate read", seq("a x 1; a x 2", "r x [1]"), "read-committed", map[string]int{G1b: 1}, verdict.False},
		{"G1c circular information flow", seq("a x 1; r y [1]", "a y 1; r x [1]"),
			"read-committed", map[string]int{G1c: 1}, verdict.False},
		{"G-single read skew", seq("a x 1; a y 1", "r x []; r y [1]", "r x [1]"),
			"snapshot-isolation", map[string]int{GSingle: 1}, verdict.False},
		{"G-single allowed by read committed", seq("a x 1; a y 1", "r x []; r y [1]", "r x [1]"),
			"read-committed", map[string]int{GSingle: 1}, verdict.True},
		{"G2-item write skew under serializable", seq("r x []; r y []; a x 1", "r x []; r y []; a y 1", "r x [1]; r y [1]"),
			"serializable", map[string]int{G2Item: 1}, verdict.False},
		{"write skew allowed by snapshot isolation", seq("r x []; r y []; a x 1", "r x []; r y []; a y 1", "r x [1]; r y [1]"),
			"snapshot-isolation", map[string]int{G2Item: 1}, verdict.True},
		{"write skew forbidden by repeatable read", seq("r x []; r y []; a x 1", "r x []; r y []; a y 1", "r x [1]; r y [1]"),
			"repeatable-read", map[string]int{G2Item: 1}, verdict.False},
		{"lost update", seq("r x []; a x 1", "r x []; a x 2", "r x [1 2]"),
			"snapshot-isolation", map[string]int{LostUpdate: 1, GSingle: 1}, verdict.False},
		{"lost update allowed by read committed", seq("r x []; a x 1", "r x []; a x 2", "r x [1 2]"),
			"read-committed", map[string]int{LostUpdate: 1, GSingle: 1}, verdict.True},
		{"internal: own append unseen", seq("a x 1; r x []"), "read-committed", map[string]int{Internal: 1}, verdict.False},
		{"internal: reads differ", seq("a x 1", "r x []; r x [1]"), "read-committed", map[string]int{Internal: 1}, verdict.False},
		{"duplicate elements", seq("a x 1", "r x [1 1]"), "read-committed", map[string]int{DuplicateElems: 1}, verdict.False},
		{"garbage read", seq("a x 1", "r x [1 9]"), "read-committed", map[string]int{GarbageRead: 1}, verdict.False},
		{"incompatible order", seq("a x 1", "a x 2", "r x [1 2]", "r x [2 1]"), "read-committed", map[string]int{IncompatibleOrds: 1}, verdict.False},
		{"G-single-realtime: a stale read after the append completed", []history.Op{
			tx(0, 0, 10, history.OK, "a x 1"), tx(1, 20, 30, history.OK, "r x []"), tx(2, 40, 50, history.OK, "r x [1]")},
			"strict-serializable", map[string]int{GSingle + realtimeSuffix: 1}, verdict.False},
		{"stale read is serializable", []history.Op{
			tx(0, 0, 10, history.OK, "a x 1"), tx(1, 20, 30, history.OK, "r x []"), tx(2, 40, 50, history.OK, "r x [1]")},
			"serializable", map[string]int{}, verdict.True},
		{"G-single-process: a process does not see its own append", []history.Op{
			tx(0, 0, 10, history.OK, "a x 1"), tx(0, 20, 30, history.OK, "r x []"), tx(2, 0, 50, history.OK, "r x [1]")},
			"strict-serializable", map[string]int{GSingle + processSuffix: 1}, verdict.False},
		{"valid concurrent history", seq("a x 1; r y []", "a y 1; r x [1]", "r x [1]; r y [1]; a x 2", "r x [1 2]", "UNKNOWN a z 1", "FAIL a z 2", "r z [1]"),
			"strict-serializable", map[string]int{}, verdict.True},
		{"valid sequential history", []history.Op{
			tx(0, 0, 10, history.OK, "a x 1; a y 1"), tx(1, 20, 30, history.OK, "r x [1]; a x 2"), tx(0, 40, 50, history.OK, "r x [1 2]; r y [1]"),
			tx(2, 60, 70, history.Unknown, "a y 2"), tx(3, 80, 90, history.OK, "r y [1 2]")},
			"strict-serializable", map[string]int{}, verdict.True},
		// rw-register
		{"rw-register G1c", seq("w x 1; r y 2", "w y 2; r x 1"), "read-committed", map[string]int{G1c: 1}, verdict.False},
		{"rw-register G1a", seq("FAIL w x 1", "r x 1"), "read-committed", map[string]int{G1a: 1}, verdict.False},
		{"rw-register G1b", seq("w x 1; w x 2", "r x 1"), "read-committed", map[string]int{G1b: 1}, verdict.False},
		{"rw-register garbage", seq("w x 1", "r x 5"), "read-committed", map[string]int{GarbageRead: 1}, verdict.False},
		{"rw-register internal", seq("w x 1; r x nil"), "read-committed", map[string]int{Internal: 1}, verdict.False},
		{"rw-register G-single read skew", seq("w x 1; w y 1", "r x nil; r y 1"),
			"snapshot-isolation", map[string]int{GSingle: 1}, verdict.False},
		{"rw-register write skew allowed by SI", seq("r x nil; r y nil; w x 1", "r x nil; r y nil; w y 1"),
			"snapshot-isolation", map[string]int{G2Item: 1}, verdict.True},
		{"rw-register write skew under serializable", seq("r x nil; r y nil; w x 1", "r x nil; r y nil; w y 1"),
			"serializable", map[string]int{G2Item: 1}, verdict.False},
		{"rw-register lost update", seq("w x 1", "r x 1; w x 2", "r x 1; w x 3"),
			"snapshot-isolation", map[string]int{LostUpdate: 1, G2Item: 1}, verdict.False},
		{"rw-register G0 via read-then-write order", seq("w y 2; r x 3; w x 1", "w x 3; r y 2; w y 4"),
			"read-committed", map[string]int{G0: 1}, verdict.False},
		{"rw-register valid", seq("w x 1", "r x 1; w x 2", "r x 2; r y nil", "r x nil"),
			"serializable", map[string]int{}, verdict.True},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := check(t, tt.ops, tt.model)
			for name, n := range v.AnomalyCounts {
				if n != tt.want[name] {
					t.Errorf("%s: %d, want %d", name, n, tt.want[name])
				}
			}
			for name, n := range tt.want {
				if v.AnomalyCounts[name] != n {
					t.Errorf("%s: %d, want %d", name, v.AnomalyCounts[name], n)
				}
			}
			if v.Valid != tt.valid {
				t.Errorf("valid = %s, want %s", v.Valid, tt.valid)
			}
			if t.Failed() {
				for _, a := range v.Anomalies {
					t.Log(a.Explanation)
				}
			}
			for _, a := range v.Anomalies {
				if a.Explanation == "" || len(a.Ops) == 0 {
					t.Errorf("%s without explanation or operations: %+v", a.Name, a)
				}
				if strings.Contains(a.Explanation, "no reason found") {
					t.Errorf("an edge without its reason: %s", a.Explanation)
				}
			}
		})
	}
}

// TestExplanation: a cycle names its transactions, each edge, its type and
// why it exists.
func TestExplanation(t *testing.T) {
	v := check(t, seq("a x 1; a y 1", "r x []; r y [1]", "r x [1]"), "serializable")
	if len(v.Anomalies) != 1 {
		t.Fatalf("anomalies %+v", v.Anomalies)
	}
	text := v.Anomalies[0].Explanation
	for _, want := range []string{"G-single", "T1 -rw-> T0", "T0 -wr-> T1", "T1 read x = [] and T0 appended 1", "T1 read y = [1], whose last element 1 T0 appended",
		"T0 = operation 0 of the history, process 0, ok"} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation lacks %q:\n%s", want, text)
		}
	}
	if v.Anomalies[0].TimeNs != 1000 || len(v.Anomalies[0].Ops) != 2 {
		t.Errorf("time %d ops %v", v.Anomalies[0].TimeNs, v.Anomalies[0].Ops)
	}
}

func TestBadInput(t *testing.T) {
	for _, tt := range []struct {
		name string
		ops  []history.Op
		opts Options
		want string
	}{
		{"unknown model", seq("a x 1"), Options{Model: "linearizable-ish"}, "unknown consistency model"},
		{"duplicate append", seq("a x 1", "a x 1"), Options{}, "unique"},
		{"mixed workloads", seq("a x 1", "w y 1"), Options{}, "mixes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CheckOps(context.Background(), tt.ops, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestCheckFile: Check reads a history file the way a run writes it.
func TestCheckFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), history.FileName)
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range seq("r x []; r y []; a x 1", "r x []; r y []; a y 1", "r x [1]; r y [1]") {
		if err := w.Write(&op); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	v, err := Check(context.Background(), path, Options{Model: "serializable"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Valid != verdict.False || v.AnomalyCounts[G2Item] != 1 || v.Operations != 3 {
		t.Fatalf("%s", v.Line())
	}
	if _, err := Check(context.Background(), filepath.Join(t.TempDir(), "none"), Options{}); err == nil {
		t.Fatal("no error for a missing file")
	}
}
