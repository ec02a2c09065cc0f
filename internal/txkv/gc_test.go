package txkv_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/client"
	"github.com/faultbench/faultbench/internal/txkv/store"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// TestVersionGC: versions below the low-water mark (the oldest snapshot
// an open transaction reads) are dropped by the servers and the
// transaction manager forgets last commit timestamps below it, while
// every read at or above the mark is unchanged — including the open
// transaction's own reads at its old snapshot.
func TestVersionGC(t *testing.T) {
	c := startCluster(t, 2, testConfig(wire.Async))
	cl := openClient(t, c.addr)
	defer cl.Close(context.Background())
	reader := openClient(t, c.addr)
	defer reader.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	keys := []string{"user33", "user77"}
	var ts []uint64
	write := func(i int) {
		kv := map[string]string{}
		for _, k := range keys {
			kv[k] = fmt.Sprintf("v%d", i)
		}
		for {
			tx, err := cl.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range kv {
				tx.Write("t", k, map[string][]byte{"f": []byte(v)})
			}
			at, err := tx.Commit(ctx)
			if errors.Is(err, client.ErrAborted) {
				continue // the snapshot did not include the previous write yet
			}
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, at)
			return
		}
	}
	readAt := func(k string, at uint64) string {
		t.Helper()
		m, ok, err := cl.ReadAt(ctx, "t", k, nil, at)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return "(none)"
		}
		return string(m["f"])
	}
	for i := range 6 {
		write(i)
	}
	// the reader opens a transaction whose snapshot includes v5
	var pin *client.Txn
	eventually(t, 10*time.Second, "a snapshot with v5", func() bool {
		var err error
		pin, err = reader.Begin(ctx)
		if err == nil && pin.StartTS() < ts[5] {
			pin.Abort()
		}
		return err == nil && pin.StartTS() >= ts[5]
	})
	for i := 6; i < 20; i++ {
		write(i)
	}
	eventually(t, 10*time.Second, "the mark to reach the open snapshot", func() bool {
		return c.coord.Status().LowWater == pin.StartTS()
	})
	eventually(t, 20*time.Second, "versions below the mark to be dropped", func() bool {
		return readAt(keys[0], ts[0]) == "(none)" && readAt(keys[1], ts[4]) == "(none)"
	})
	// at and above the mark nothing changed
	if m, ok, err := pin.Read(ctx, "t", keys[1], nil); err != nil || !ok || string(m["f"]) != "v5" {
		t.Errorf("the open transaction reads %q %v %v at its snapshot %d, want v5", m["f"], ok, err, pin.StartTS())
	}
	for i := 5; i < 20; i++ {
		for _, k := range keys {
			if got, want := readAt(k, ts[i]), fmt.Sprintf("v%d", i); got != want {
				t.Errorf("%s at %d (at or above the mark %d): %s, want %s", k, ts[i], pin.StartTS(), got, want)
			}
		}
	}
	if n := c.coord.Status().ConflictKeys; n != len(keys) {
		t.Errorf("the transaction manager keeps %d keys' last commits, want %d (written after the mark)", n, len(keys))
	}
	// the open transaction ends: the mark moves on, old versions and the
	// conflict state go
	pin.Abort()
	eventually(t, 20*time.Second, "the mark to pass the last write and its state to be dropped", func() bool {
		st := c.coord.Status()
		return st.LowWater >= ts[19] && st.ConflictKeys == 0 && readAt(keys[0], ts[18]) == "(none)"
	})
	if got := readAt(keys[0], ts[19]); got != "v19" {
		t.Errorf("%s at %d: %s, want v19", keys[0], ts[19], got)
	}
	// and transactions go on
	write(20)
	eventually(t, 10*time.Second, "v20", func() bool { v, _ := get(t, cl, keys[1]); return v == "v20" })
}

// TestRegionFilesCompacted: under a load that keeps rewriting a few rows
// with a tiny memstore (a region file every flusher tick), the servers
// compact region files below the low-water mark, so the files of every
// region stay few and a region opens reading a bounded amount, while the
// latest values stay readable. Without the compactor the files pile up
// (a new one per region every 200 ms), and this test fails.
func TestRegionFilesCompacted(t *testing.T) {
	cfg := testConfig(wire.Async)
	cfg.MemstoreFlushBytes = 1 << 10
	cfg.SessionTimeout = 5 * time.Second // a loaded machine must not fail the writer
	c := startCluster(t, 2, cfg)
	cl := openClient(t, c.addr)
	defer cl.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	keys := []string{"user15", "user35", "user55", "user75", "user95"}
	var last string
	for i := 0; i < 400; i++ {
		tx, err := cl.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		v := fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", 300))
		for _, k := range keys {
			tx.Write("t", k, map[string][]byte{"f": []byte(v)})
		}
		if _, err := tx.Commit(ctx); err == nil {
			last = v
		} else if !errors.Is(err, client.ErrAborted) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	eventually(t, 10*time.Second, "the last write", func() bool { v, _ := get(t, cl, keys[2]); return v == last })
	// let the compactor catch up with the last flushes
	var files, bytes int64
	eventually(t, 20*time.Second, "few region files", func() bool {
		files, bytes = 0, 0
		for id := range c.regions {
			dir := store.Dir(filepath.Join(c.dir, "storage"), wire.RegionID(id))
			ld, err := store.New(wire.Region{ID: wire.RegionID(id)}).LoadDir(dir)
			if err != nil {
				return false
			}
			files += int64(ld.Files)
			bytes += ld.Bytes
		}
		return files <= int64(c.regions)*compactBound
	})
	t.Logf("after 400 commits of %d rows: %d region files, %d bytes in all", len(keys), files, bytes)
	for _, k := range keys {
		if v, _ := get(t, cl, k); v != last {
			t.Errorf("%s = %.20q..., want the last write", k, v)
		}
	}
}

// compactBound is how many region files a region may have in
// TestRegionFilesCompacted: the compactor's threshold plus what the
// flusher writes between two of its rounds.
const compactBound = 8
