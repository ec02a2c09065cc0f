package seglog

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func rec(k uint64) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, k)
	binary.BigEndian.PutUint64(b[8:], k*7)
	return b
}

func keys(t *testing.T, l *Log, want func(Segment) bool) []uint64 {
	t.Helper()
	var out []uint64
	if err := l.Scan(want, func(r []byte) error {
		out = append(out, binary.BigEndian.Uint64(r))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGroupCommitScanTruncate(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Options{Dir: dir, SegmentBytes: 24 * 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := uint64(0)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				mu.Lock()
				next++
				k := next
				seq, err := l.Append(rec(k), k)
				mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				if err := l.WaitSynced(ctx, seq); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got := keys(t, l, nil)
	if len(got) != 200 {
		t.Fatalf("scanned %d records, want 200", len(got))
	}
	for i, k := range got {
		if k != uint64(i+1) {
			t.Fatalf("record %d has key %d", i, k)
		}
	}
	segs := l.Segments()
	if len(segs) < 3 {
		t.Fatalf("only %d segments with a small segment size", len(segs))
	}
	n, err := l.RemoveSealed(func(s Segment) bool { return s.MaxKey < 100 })
	if err != nil || n == 0 {
		t.Fatalf("removed %d, %v", n, err)
	}
	got = keys(t, l, nil)
	if got[0] >= 100 || got[len(got)-1] != 200 {
		t.Errorf("after truncation: first %d last %d", got[0], got[len(got)-1])
	}
	if _, err := l.Roll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// reopen: old segments are readable, with their bounds
	l2, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if got2 := keys(t, l2, func(s Segment) bool { return s.MaxKey > 150 }); len(got2) == 0 || got2[len(got2)-1] != 200 {
		t.Errorf("after reopen: %v", got2)
	}
}

func TestPeriodicSyncAndTornTail(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Options{Dir: dir, SyncInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for k := uint64(1); k <= 10; k++ {
		if _, err := l.Append(rec(k), k); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for l.Synced() < 10 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if l.Synced() != 10 {
		t.Fatalf("periodic sync did not happen: synced %d", l.Synced())
	}
	l.Close()
	segs, _ := listSegments(dir)
	f, _ := os.OpenFile(segs[0].Path, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte{0, 0, 0, 16, 1, 2, 3}) // a torn record
	f.Close()
	var n int
	if err := ReadDir(dir, func([]byte) error { n++; return nil }); err != nil || n != 10 {
		t.Fatalf("read %d records (%v), want 10", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, segName(1))); err != nil {
		t.Fatal(err)
	}
}
