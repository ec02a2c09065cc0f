package elle

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
)

// TestBrokenHistory: a long history of a database that returns stale
// reads a fifth of the time (its dependency graph one huge component) is
// checked in bounded time and found invalid.
func TestBrokenHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("a 100,000-transaction history")
	}
	path := filepath.Join(t.TempDir(), "h.jsonl")
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const keys = 20
	lists := make([][]int64, keys)
	gen := make([]int, keys)
	val := int64(0)
	for i := range 100000 {
		op := history.Op{Process: i % 8, Invoke: int64(i) * 1000, Complete: int64(i)*1000 + 8000}
		for range 4 {
			k := rng.IntN(keys)
			name := fmt.Sprint("k", k, "-", gen[k])
			if rng.IntN(2) == 0 {
				val++
				lists[k] = append(lists[k], val)
				op.Mops = append(op.Mops, history.Mop{F: history.Append, Key: name, Value: val})
				continue
			}
			l := lists[k]
			if rng.IntN(5) == 0 && len(l) > 2 {
				l = l[:len(l)-2]
			}
			op.Mops = append(op.Mops, history.Mop{F: history.Read, Key: name, IsList: true, List: append([]int64{}, l...)})
		}
		if err := w.Write(&op); err != nil {
			t.Fatal(err)
		}
		for k := range lists {
			if len(lists[k]) >= 32 {
				lists[k], gen[k] = nil, gen[k]+1
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	v, err := Check(context.Background(), path, Options{Model: "strict-serializable"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Valid != verdict.False || v.AnomalyCounts[GSingle] == 0 {
		t.Fatalf("%s", v.Line())
	}
	t.Logf("%s in %.0f ms", v.Line(), v.ElapsedMs)
}
