package linear

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
)

func rd(p int, s, e int64, key string, v int64, has bool) history.Op {
	return history.Op{Process: p, Invoke: s, Complete: e, Mops: []history.Mop{{F: history.Read, Key: key, Value: v, HasValue: has}}}
}

func wr(p int, s, e int64, key string, v int64, o history.Outcome) history.Op {
	return history.Op{Process: p, Invoke: s, Complete: e, Outcome: o, Mops: []history.Mop{{F: history.Write, Key: key, Value: v}}}
}

func cas(p int, s, e int64, key string, from, to int64, o history.Outcome) history.Op {
	return history.Op{Process: p, Invoke: s, Complete: e, Outcome: o, Mops: []history.Mop{{F: history.CAS, Key: key, Value: from, New: to}}}
}

func TestRegister(t *testing.T) {
	tests := []struct {
		name  string
		ops   []history.Op
		valid verdict.Valid
		bad   int
	}{
		{"sequential", []history.Op{rd(0, 0, 1, "x", 0, false), wr(0, 2, 3, "x", 1, history.OK), rd(1, 4, 5, "x", 1, true),
			cas(1, 6, 7, "x", 1, 2, history.OK), rd(0, 8, 9, "x", 2, true)}, verdict.True, 0},
		{"stale read", []history.Op{wr(0, 0, 10, "x", 1, history.OK), wr(0, 20, 30, "x", 2, history.OK), rd(1, 40, 50, "x", 1, true)}, verdict.False, 1},
		{"read of nil after a value was read", []history.Op{wr(0, 0, 100, "x", 1, history.OK), rd(1, 10, 20, "x", 1, true), rd(2, 30, 40, "x", 0, false)}, verdict.False, 1},
		{"concurrent write may be read", []history.Op{wr(0, 0, 100, "x", 1, history.OK), rd(1, 10, 20, "x", 0, false), rd(2, 30, 40, "x", 1, true)}, verdict.True, 0},
		{"unknown write explains a read", []history.Op{wr(0, 0, 10, "x", 1, history.Unknown), rd(1, 20, 30, "x", 1, true)}, verdict.True, 0},
		{"unknown write may not have happened", []history.Op{wr(0, 0, 10, "x", 1, history.Unknown), rd(1, 20, 30, "x", 0, false)}, verdict.True, 0},
		{"failed write read", []history.Op{wr(0, 0, 10, "x", 1, history.Fail), rd(1, 20, 30, "x", 1, true)}, verdict.False, 1},
		{"cas on a value never held", []history.Op{wr(0, 0, 10, "x", 1, history.OK), cas(1, 20, 30, "x", 5, 6, history.OK)}, verdict.False, 1},
		{"unknown cas", []history.Op{wr(0, 0, 10, "x", 1, history.OK), cas(1, 20, 30, "x", 1, 2, history.Unknown), rd(2, 40, 50, "x", 2, true),
			rd(2, 60, 70, "x", 2, true)}, verdict.True, 0},
		{"keys are independent", []history.Op{wr(0, 0, 10, "x", 1, history.OK), rd(1, 20, 30, "y", 0, false), wr(0, 40, 50, "y", 1, history.OK),
			rd(1, 60, 70, "x", 1, true), rd(1, 80, 90, "y", 2, true)}, verdict.False, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			v, err := CheckOps(context.Background(), tt.ops, Options{OutDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if v.Valid != tt.valid || v.AnomalyCounts[Anomaly] != tt.bad || v.Operations != len(tt.ops) {
				t.Fatalf("%s, want valid %s with %d bad keys", v.Line(), tt.valid, tt.bad)
			}
			if tt.bad == 0 {
				return
			}
			if len(v.Files) != 1 {
				t.Fatalf("files %v", v.Files)
			}
			html, err := os.ReadFile(v.Files[0])
			if err != nil || !strings.Contains(string(html), "<html") {
				t.Fatalf("visualisation %s: %v", v.Files[0], err)
			}
			a := v.Anomalies[0]
			if !strings.Contains(a.Explanation, "cannot be placed") || len(a.Ops) != 1 {
				t.Errorf("explanation %+v", a)
			}
			t.Log(a.Explanation)
		})
	}
}

// TestUndecided: a key whose search runs out of time makes the verdict
// unknown, and is counted.
func TestUndecided(t *testing.T) {
	ops := []history.Op{wr(0, 0, 10, "x", 1, history.OK), rd(1, 20, 30, "x", 1, true), rd(1, 20, 30, "y", 0, false)}
	opts := Options{checkKey: func(ops []porcupine.Operation, _ time.Duration) porcupine.CheckResult {
		if ops[0].Input.(input).f == history.Write {
			return porcupine.Unknown
		}
		return porcupine.Ok
	}}
	v, err := CheckOps(context.Background(), ops, opts)
	if err != nil {
		t.Fatal(err)
	}
	if v.Valid != verdict.Unknown || v.Undecided != 1 || len(v.Notes) != 1 {
		t.Fatalf("%s %v", v.Line(), v.Notes)
	}
}

func TestBadHistory(t *testing.T) {
	for _, tt := range []struct {
		name string
		op   history.Op
		want string
	}{
		{"transaction", history.Op{Mops: []history.Mop{{F: history.Write, Key: "x"}, {F: history.Write, Key: "y"}}}, "micro-operations"},
		{"append", history.Op{Mops: []history.Mop{{F: history.Append, Key: "x"}}}, "register"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CheckOps(context.Background(), []history.Op{tt.op}, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

// genRegister writes n operations over keys keys by 10 processes against
// a correct register (each operation takes effect at its midpoint; about
// ten overlap); staleAt >= 0 makes the first read from there on of a key
// last written more than 20 operations before return the value before.
func genRegister(tb testing.TB, path string, n, keys, staleAt int) {
	tb.Helper()
	w, err := history.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	vals := make([]int64, keys)
	prev := make([]int64, keys)
	lastWrite := make([]int, keys)
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprint("r", i)
	}
	var op history.Op
	op.Mops = make([]history.Mop, 1)
	next := int64(0)
	for i := range n {
		k := rng.IntN(keys)
		op.Process = i % 10
		op.Invoke, op.Complete = int64(i)*1000, int64(i)*1000+10_000
		op.Outcome = history.OK
		m := history.Mop{Key: names[k]}
		switch r := rng.IntN(10); {
		case r < 5:
			m.F, m.Value, m.HasValue = history.Read, vals[k], vals[k] != 0
			if staleAt >= 0 && i >= staleAt && i-lastWrite[k] > 20 && prev[k] != vals[k] {
				m.Value, m.HasValue = prev[k], prev[k] != 0
				staleAt = -1
			}
		case r < 8:
			next++
			m.F, m.Value = history.Write, next
			prev[k], vals[k] = vals[k], next
		default:
			next++
			m.F, m.Value, m.New = history.CAS, vals[k], next
			if vals[k] == 0 {
				m.F, m.Value = history.Write, next
			}
			prev[k], vals[k] = vals[k], next
		}
		if m.F != history.Read {
			lastWrite[k] = i
		}
		op.Mops[0] = m
		if err := w.Write(&op); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

func TestGenerated(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "h.jsonl")
	genRegister(t, path, 50000, 100, -1)
	v, err := Check(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Valid != verdict.True || v.Operations != 50000 {
		t.Fatalf("%s %v", v.Line(), v.Notes)
	}
	genRegister(t, path, 50000, 100, 40000)
	v, err = Check(context.Background(), path, Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if v.Valid != verdict.False || v.AnomalyCounts[Anomaly] != 1 {
		t.Fatalf("a stale read not found: %s", v.Line())
	}
}

// BenchmarkRegister1M checks 1,000,000 register operations over 1,000
// keys (the history is generated first, not timed). bench/history.sh runs
// it with SCALE=1.
func BenchmarkRegister1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "h.jsonl")
	genRegister(b, path, 1_000_000, 1000, -1)
	b.ResetTimer()
	for b.Loop() {
		v, err := Check(context.Background(), path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if v.Valid != verdict.True {
			b.Fatal(v.Line())
		}
	}
}
