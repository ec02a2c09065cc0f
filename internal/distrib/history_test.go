package distrib

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/faultbench/faultbench/internal/history"
)

// TestHistoryPartsMerge: the histories of several workers, written
// concurrently through their sinks in chunks of any size, arrive as whole
// lines, and the merge keeps every operation exactly once with distinct
// process ids per worker (run with -race).
func TestHistoryPartsMerge(t *testing.T) {
	for _, tc := range []struct {
		name             string
		workers, threads int
		perThread        int
	}{
		{"one worker", 1, 3, 200},
		{"two workers", 2, 4, 500},
		{"five workers", 5, 2, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			parts := newHistoryParts(dir)
			var mu sync.Mutex // merge's loop is the only caller of add: serialise as it does
			var wg sync.WaitGroup
			for wi := range tc.workers {
				sink := &historySink{send: func(b []byte) error {
					if len(b) == 0 || b[len(b)-1] != '\n' {
						return fmt.Errorf("a chunk that is not whole lines: %q", b)
					}
					mu.Lock()
					defer mu.Unlock()
					return parts.add(wi, b)
				}}
				hw, err := history.NewWriter(sink)
				if err != nil {
					t.Fatal(err)
				}
				var tw sync.WaitGroup
				for th := range tc.threads {
					tw.Go(func() {
						for i := range tc.perThread {
							// the value names worker, thread and sequence: unique
							v := int64(wi)<<40 | int64(th)<<20 | int64(i)
							op := history.Op{Process: th, Name: "write", Invoke: int64(i), Complete: int64(i + 1),
								Mops: []history.Mop{{F: history.Write, Key: "k", Value: v}}}
							if err := hw.Write(&op); err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
				wg.Go(func() {
					tw.Wait()
					if err := hw.Close(); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			n, notes, err := parts.merge(context.Background(), tc.workers)
			if err != nil || len(notes) > 0 {
				t.Fatalf("merge: %v %v", err, notes)
			}
			want := tc.workers * tc.threads * tc.perThread
			ops, torn, err := history.ReadFile(filepath.Join(dir, history.FileName))
			if err != nil || torn {
				t.Fatalf("merged history: %v torn %v", err, torn)
			}
			seen := map[int64]int{}
			procOf := map[int]int64{} // merged process -> worker
			for _, op := range ops {
				v := op.Mops[0].Value
				seen[v]++
				w := v >> 40
				if pw, ok := procOf[op.Process]; ok && pw != w {
					t.Fatalf("process %d holds operations of workers %d and %d", op.Process, pw, w)
				}
				procOf[op.Process] = w
			}
			if n != want || len(ops) != want || len(seen) != want {
				t.Fatalf("merged %d, read %d operations, %d distinct; want %d each", n, len(ops), len(seen), want)
			}
			if len(procOf) != tc.workers*tc.threads {
				t.Errorf("%d processes, want %d", len(procOf), tc.workers*tc.threads)
			}
			if _, err := os.Stat(filepath.Join(dir, PartsDir)); !os.IsNotExist(err) {
				t.Errorf("the parts are left after the merge: %v", err)
			}
		})
	}
}
