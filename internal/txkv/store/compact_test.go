package store

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// history writes rounds of flushes to dir: in round i every key k0..k9
// gets field f = "r<i>" at version 10*(i+1), k3 is deleted at round 5 and
// written again at 7; it returns the region as written (every version).
func history(t *testing.T, dir string, rounds int) *Region {
	t.Helper()
	r := New(wire.Region{ID: 1})
	for i := 0; i < rounds; i++ {
		ts := uint64(10 * (i + 1))
		for k := 0; k < 10; k++ {
			key := fmt.Sprintf("k%d", k)
			if k == 3 && i == 5 {
				r.Apply(ts, &wire.Write{Table: "t", Key: key, Delete: true})
				continue
			}
			if k == 3 && i == 6 {
				continue
			}
			r.Apply(ts, &wire.Write{Table: "t", Key: key, Fields: fields("f", fmt.Sprintf("r%d", i))})
		}
		if _, err := r.Flush(dir, "s1", nil); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// sameFrom reports the first difference between a and b at snapshots
// from lw to hi (every key), or "".
func sameFrom(a, b *Region, lw, hi uint64) string {
	for ts := lw; ts <= hi; ts++ {
		for k := 0; k < 10; k++ {
			key := fmt.Sprintf("k%d", k)
			fa, oka := a.Read("t", key, nil, ts)
			fb, okb := b.Read("t", key, nil, ts)
			if oka != okb || len(fa) != len(fb) || (len(fa) > 0 && string(fa[0].Value) != string(fb[0].Value)) {
				return fmt.Sprintf("ts %d %s: %v %v vs %v %v", ts, key, fa, oka, fb, okb)
			}
		}
	}
	return ""
}

func loadFresh(t *testing.T, dir string) (*Region, Loaded) {
	t.Helper()
	r := New(wire.Region{ID: 1})
	ld, err := r.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r, ld
}

// TestCompact: the region files merge into one that reads the same at
// every snapshot at or above the low-water mark, and is smaller.
func TestCompact(t *testing.T) {
	dir := t.TempDir()
	want := history(t, dir, 20)
	const lw, hi = 185, 210
	c, err := Compact(wire.Region{ID: 1}, dir, "s1", lw, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, ld := loadFresh(t, dir)
	if ld.Files != 1 || c.Files != 20 {
		t.Fatalf("after compaction: %+v (compaction %+v), want 1 file replacing 20", ld, c)
	}
	if d := sameFrom(want, got, lw, hi); d != "" {
		t.Fatalf("compacted region differs: %s", d)
	}
	if c.OutBytes >= c.InBytes/2 {
		t.Errorf("compacted %d bytes into %d: versions below the low-water mark were kept", c.InBytes, c.OutBytes)
	}
	// k3 was deleted at 60 and written again at 80
	if _, ok := got.Read("t", "k3", nil, lw); !ok {
		t.Error("k3 missing at the low-water mark")
	}
	t.Logf("%+v", c)
}

// TestCompactCrashInTheMiddle: a compaction that stops at any step (before
// the merged file is renamed into place, or after it with some of the old
// files not yet removed; a crash or a lost lease) leaves a directory that
// loads the same data at every snapshot at or above the low-water mark,
// and a later compaction finishes the job.
func TestCompactCrashInTheMiddle(t *testing.T) {
	const rounds, lw, hi = 6, 35, 70
	for stop := 1; stop <= rounds+1; stop++ {
		name := "before-rename"
		if stop > 1 {
			name = fmt.Sprintf("after-rename-%d-of-%d-removed", stop-2, rounds)
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			want := history(t, dir, rounds)
			calls := 0
			crash := errors.New("crashed")
			_, err := Compact(wire.Region{ID: 1}, dir, "s1", lw, func() error {
				calls++
				if calls == stop {
					return crash
				}
				return nil
			})
			if !errors.Is(err, crash) {
				t.Fatalf("compaction: %v, want it stopped by the crash", err)
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if !isRegionFile(e.Name()) {
					t.Errorf("left behind: %s", e.Name())
				}
			}
			got, ld := loadFresh(t, dir)
			if d := sameFrom(want, got, lw, hi); d != "" {
				t.Fatalf("after a crash at step %d (%d files): %s", stop, ld.Files, d)
			}
			if _, err := Compact(wire.Region{ID: 1}, dir, "s1", lw, nil); err != nil {
				t.Fatal(err)
			}
			got, ld = loadFresh(t, dir)
			if ld.Files != 1 {
				t.Errorf("the next compaction left %d files", ld.Files)
			}
			if d := sameFrom(want, got, lw, hi); d != "" {
				t.Fatalf("after the next compaction: %s", d)
			}
		})
	}
}

func isRegionFile(name string) bool {
	return len(name) > len(fileSuffix) && name[len(name)-len(fileSuffix):] == fileSuffix
}

// TestRegionOpenBounded: a region flushed many times and compacted as a
// server does it (once it has 4 files, at the current low-water mark)
// opens reading a bounded amount, however many flushes there were;
// without compaction what an open reads grows with every flush.
func TestRegionOpenBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		compact bool
	}{{"compacted", true}, {"not-compacted", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var sizes []int64
			for _, flushes := range []int{50, 400} {
				dir := t.TempDir()
				r := New(wire.Region{ID: 1})
				for i := 0; i < flushes; i++ {
					ts := uint64(10 * (i + 1))
					for k := 0; k < 10; k++ {
						r.Apply(ts, &wire.Write{Table: "t", Key: fmt.Sprintf("k%d", k), Fields: fields("f", fmt.Sprintf("value-%04d-of-round", i))})
					}
					if _, err := r.Flush(dir, "s1", nil); err != nil {
						t.Fatal(err)
					}
					if tc.compact && r.Files() >= 4 {
						c, err := Compact(wire.Region{ID: 1}, dir, "s1", ts-20, nil)
						if err != nil {
							t.Fatal(err)
						}
						r.Compacted(c)
					}
				}
				got, ld := loadFresh(t, dir)
				if v := get(t, got, "k7", uint64(10*flushes)); v["f"] != fmt.Sprintf("value-%04d-of-round", flushes-1) {
					t.Fatalf("after %d flushes: k7 = %v", flushes, v)
				}
				t.Logf("%d flushes: open reads %d files, %d bytes", flushes, ld.Files, ld.Bytes)
				sizes = append(sizes, ld.Bytes)
			}
			bounded := sizes[1] <= sizes[0]*3/2
			if tc.compact && !bounded {
				t.Errorf("open reads %d bytes after 50 flushes and %d after 400: it grows with the run", sizes[0], sizes[1])
			}
			if !tc.compact && bounded {
				t.Errorf("negative control: without compaction open read %d then %d bytes, want growth", sizes[0], sizes[1])
			}
		})
	}
}
