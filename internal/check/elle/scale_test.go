package elle

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
)

// genListAppend writes a list-append history of n transactions executed
// one after the other by a correct database (so valid under strict
// serializability), with about eight in flight at any time: transaction i
// is invoked at i µs and completes 8 µs later. Each has four
// micro-operations on 100 active keys; a key is retired after 32 appends
// (as Elle's generator does, so reads stay short). skewAt >= 0 makes the
// first read from transaction skewAt on of a key last appended to more
// than 20 transactions before miss that append (a stale read: a cycle
// through real-time order).
func genListAppend(tb testing.TB, path string, n int, skewAt int) {
	tb.Helper()
	w, err := history.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const active = 100
	lists := make([][]int64, active)
	lastAppend := make([]int, active)
	names := make([]string, active)
	next := 0
	for i := range active {
		names[i] = fmt.Sprint("k", next)
		next++
	}
	val := int64(0)
	op := history.Op{Name: "txn"}
	for i := range n {
		op.Process = i % 8
		op.Invoke, op.Complete = int64(i)*1000, int64(i)*1000+8000
		op.Mops = op.Mops[:0]
		for range 4 {
			k := rng.IntN(active)
			if rng.IntN(2) == 0 {
				val++
				lists[k] = append(lists[k], val)
				lastAppend[k] = i
				op.Mops = append(op.Mops, history.Mop{F: history.Append, Key: names[k], Value: val})
				continue
			}
			l := lists[k]
			if skewAt >= 0 && i >= skewAt && len(l) > 0 && i-lastAppend[k] > 20 {
				l = l[:len(l)-1]
				skewAt = -1
			}
			op.Mops = append(op.Mops, history.Mop{F: history.Read, Key: names[k], IsList: true, List: append([]int64{}, l...)})
		}
		if err := w.Write(&op); err != nil {
			tb.Fatal(err)
		}
		for k := range lists {
			if len(lists[k]) >= 32 {
				lists[k] = nil
				names[k] = fmt.Sprint("k", next)
				next++
			}
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

// TestGenerated: a long valid history passes under every model, and one
// stale read in it is found.
func TestGenerated(t *testing.T) {
	dir := t.TempDir()
	n := 20000
	if testing.Short() {
		n = 3000
	}
	good := filepath.Join(dir, "good.jsonl")
	genListAppend(t, good, n, -1)
	for _, m := range Models() {
		v, err := Check(context.Background(), good, Options{Model: m.Name})
		if err != nil {
			t.Fatal(err)
		}
		if v.Valid != verdict.True || v.Operations != n {
			t.Errorf("%s: %s", m.Name, v.Line())
		}
	}
	bad := filepath.Join(dir, "bad.jsonl")
	genListAppend(t, bad, n, n/2)
	v, err := Check(context.Background(), bad, Options{Model: "strict-serializable"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Valid != verdict.False {
		t.Fatalf("a stale read not found: %s", v.Line())
	}
	t.Log(v.Line())
}

// BenchmarkListAppend1M checks a 1,000,000-transaction list-append
// history under strict serializability (every edge kind); the history is
// generated first (not timed). bench/history.sh runs it with SCALE=1.
func BenchmarkListAppend1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "h.jsonl")
	genListAppend(b, path, benchN(), -1)
	b.ResetTimer()
	for b.Loop() {
		v, err := Check(context.Background(), path, Options{Model: "strict-serializable"})
		if err != nil {
			b.Fatal(err)
		}
		if v.Valid != verdict.True {
			b.Fatal(v.Line())
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heap-MB")
	}
}

// benchN is the benchmark's size: FAULTBENCH_ELLE_N transactions, default
// 1,000,000.
func benchN() int {
	if n, err := strconv.Atoi(os.Getenv("FAULTBENCH_ELLE_N")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}
