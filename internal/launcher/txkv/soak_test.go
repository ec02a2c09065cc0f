package txkv_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/txkv/client"
	"github.com/faultbench/faultbench/internal/txkv/store"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// soakEnv reads a soak parameter from the environment.
func soakEnv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func soakDuration(t *testing.T, name, def string) time.Duration {
	v := soakEnv(name, def)
	d, err := time.ParseDuration(v)
	if err != nil {
		if s, err2 := strconv.Atoi(v); err2 == nil {
			return time.Duration(s) * time.Second
		}
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

func soakInt(t *testing.T, name, def string) int {
	v, err := strconv.Atoi(soakEnv(name, def))
	if err != nil || v <= 0 {
		t.Fatalf("%s: want a positive integer: %v", name, err)
	}
	return v
}

// rssKB returns a process's resident set in KiB (0 if it is gone).
func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return 0
}

// regionOpen loads every region's files as a region open does
// (store.LoadDir, the part of an open that grows with the run when files
// are not compacted; splitting a failed server's WAL and the
// transactional replay come on top) and returns the time it took, files
// and bytes, summed over regions. A file a compaction removes meanwhile
// makes it read that region again.
func regionOpen(t *testing.T, storage string, regions int) (time.Duration, store.Loaded) {
	var total time.Duration
	var all store.Loaded
	for _, r := range wire.DefaultSplits(regions) {
		for attempt := 0; ; attempt++ {
			start := time.Now()
			ld, err := store.New(r).LoadDir(store.Dir(storage, r.ID))
			if err == nil {
				total += time.Since(start)
				all.Files += ld.Files
				all.Bytes += ld.Bytes
				break
			}
			if attempt == 5 {
				t.Errorf("loading region %d: %v", r.ID, err)
				break
			}
		}
	}
	return total, all
}

// slope is the least-squares slope of ys over xs.
func slope(xs, ys []float64) (float64, bool) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	d := n*sxx - sx*sx
	if len(xs) < 2 || d == 0 {
		return 0, false
	}
	return (n*sxy - sx*sy) / d, true
}

func TestSlope(t *testing.T) {
	for _, tc := range []struct {
		name   string
		xs, ys []float64
		want   float64
		ok     bool
	}{
		{"flat", []float64{0, 1, 2}, []float64{5, 5, 5}, 0, true},
		{"rising", []float64{0, 1, 2, 3}, []float64{1, 3, 5, 7}, 2, true},
		{"one sample", []float64{1}, []float64{1}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := slope(tc.xs, tc.ys)
			if ok != tc.ok || (ok && (got-tc.want > 1e-9 || tc.want-got > 1e-9)) {
				t.Errorf("slope = %v %v, want %v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestSoak is issue 26's measurement of txkv's memory and region-open time
// over a long run (bench/txkv-soak.sh runs it; docs/targets-txkv.md):
// a coordinator and FAULTBENCH_TXKV_SERVERS region servers (real
// processes), RECORDS rows, an update-heavy load (90 % transactions that
// rewrite every field of a random row, 10 % read-only ones) at RATE
// transactions/s through one client library instance for
// FAULTBENCH_TXKV_SOAK (e.g. 1h). It samples every node process's RSS
// every SAMPLE, and prints the least-squares slope in MB per hour of each
// process's samples after WARMUP (5m), and the region-open load (time,
// files, bytes) at WARMUP and at the end. It asserts nothing about the
// figures: they are measured on a quiet machine. Skipped unless
// FAULTBENCH_TXKV_SOAK is set.
func TestSoak(t *testing.T) {
	if os.Getenv("FAULTBENCH_TXKV_SOAK") == "" {
		t.Skip("the soak measurement runs only with FAULTBENCH_TXKV_SOAK=DURATION (bench/txkv-soak.sh)")
	}
	dur := soakDuration(t, "FAULTBENCH_TXKV_SOAK", "1h")
	warmup := soakDuration(t, "WARMUP", "5m")
	sample := soakDuration(t, "SAMPLE", "30s")
	rate := soakInt(t, "RATE", "3000")
	records := soakInt(t, "RECORDS", "200")
	fieldLen := soakInt(t, "FIELDLENGTH", "1000")
	fieldCount := soakInt(t, "FIELDCOUNT", "10")
	threads := soakInt(t, "THREADS", "8")
	servers := soakInt(t, "FAULTBENCH_TXKV_SERVERS", "1")
	if warmup >= dur {
		t.Fatalf("WARMUP %v must be shorter than the run (%v)", warmup, dur)
	}
	env, _ := isolate(t)
	c := up(t, env, servers, nil)
	addr := coordAddr(t, c)
	storage := filepath.Join(c.Dir, "storage")
	regions := 8
	cl := open(t, addr)
	defer cl.Close(context.Background())

	value := func(i int) map[string][]byte {
		m := make(map[string][]byte, fieldCount)
		for f := 0; f < fieldCount; f++ {
			v := []byte(strings.Repeat(strconv.Itoa(i%10), fieldLen))
			m["field"+strconv.Itoa(f)] = v
		}
		return m
	}
	key := func(i int) string { return fmt.Sprintf("user%02d%06d", 10+i%90, i) }
	ctx, cancel := context.WithTimeout(context.Background(), dur+5*time.Minute)
	defer cancel()
	for i := 0; i < records; i++ {
		tx, err := cl.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tx.Write("usertable", key(i), value(i))
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}

	fmt.Printf("txkv soak: %v at %d txn/s (90 %% updates of %d fields x %d bytes, %d rows), %d threads, %d region servers, RSS every %v, slope after %v; %s, load average %s\n",
		dur, rate, fieldCount, fieldLen, records, threads, servers, sample, warmup,
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), loadAvg())
	var commits, aborts, failed atomic.Int64
	lctx, stopLoad := context.WithTimeout(ctx, dur)
	defer stopLoad()
	start := time.Now()
	var wg sync.WaitGroup
	per := time.Duration(float64(time.Second) * float64(threads) / float64(rate))
	for w := 0; w < threads; w++ {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 26))
			next := time.Now()
			for lctx.Err() == nil {
				next = next.Add(per)
				if d := time.Until(next); d > 0 {
					select {
					case <-lctx.Done():
						return
					case <-time.After(d):
					}
				}
				i := rng.IntN(records)
				octx, ocancel := context.WithTimeout(lctx, 10*time.Second)
				tx, err := cl.Begin(octx)
				if err != nil {
					ocancel()
					failed.Add(1)
					continue
				}
				if rng.IntN(10) == 0 {
					_, _, err = tx.Read(octx, "usertable", key(i), nil)
					tx.Abort()
				} else {
					tx.Write("usertable", key(i), value(rng.IntN(10)))
					_, err = tx.Commit(octx)
				}
				ocancel()
				switch {
				case err == nil:
					commits.Add(1)
				case errors.Is(err, client.ErrAborted):
					aborts.Add(1)
				default:
					failed.Add(1)
				}
			}
		})
	}

	type series struct{ xs, ys []float64 }
	rss := map[string]*series{}
	var names []string
	for _, n := range c.Nodes {
		names = append(names, n.Name)
		rss[n.Name] = &series{}
	}
	fmt.Printf("%8s", "t (s)")
	for _, n := range names {
		fmt.Printf(" %12s", n+" (MB)")
	}
	fmt.Printf(" %10s %8s %8s\n", "commits", "aborts", "failed")
	type openAt struct {
		at    time.Duration
		took  time.Duration
		files int
		bytes int64
	}
	var opens []openAt
	tick := time.NewTicker(sample)
	defer tick.Stop()
	measuredOpen := false
	for done := false; !done; {
		select {
		case <-lctx.Done():
			done = true
		case <-tick.C:
		}
		el := time.Since(start)
		fmt.Printf("%8.0f", el.Seconds())
		for _, n := range c.Nodes {
			kb := rssKB(n.PID)
			fmt.Printf(" %12.1f", float64(kb)/1024)
			if el >= warmup && kb > 0 {
				rss[n.Name].xs = append(rss[n.Name].xs, el.Hours())
				rss[n.Name].ys = append(rss[n.Name].ys, float64(kb)/1024)
			}
		}
		fmt.Printf(" %10d %8d %8d\n", commits.Load(), aborts.Load(), failed.Load())
		if (el >= warmup && !measuredOpen) || done {
			took, ld := regionOpen(t, storage, regions)
			opens = append(opens, openAt{el, took, ld.Files, ld.Bytes})
			measuredOpen = true
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	fmt.Printf("%d commits (%.0f/s), %d aborts, %d failed in %v\n", commits.Load(), float64(commits.Load())/elapsed.Seconds(), aborts.Load(), failed.Load(), elapsed.Round(time.Second))
	for _, n := range names {
		s := rss[n]
		if m, ok := slope(s.xs, s.ys); ok {
			fmt.Printf("RSS slope of %s after %v: %+.2f MB per hour (%d samples, last %.1f MB)\n", n, warmup, m, len(s.xs), s.ys[len(s.ys)-1])
		} else {
			fmt.Printf("RSS slope of %s after %v: too few samples (run longer or sample more often)\n", n, warmup)
		}
	}
	for _, o := range opens {
		fmt.Printf("region open at %v: %v to load %d region files, %d bytes (all %d regions)\n",
			o.at.Round(time.Second), o.took.Round(time.Microsecond), o.files, o.bytes, regions)
	}
	st, err := cl.ClusterStatus(ctx)
	if err == nil {
		fmt.Printf("coordinator: low-water mark %d of %d, %d keys in the conflict state, %d log segments\n", st.LowWater, st.Now, st.ConflictKeys, st.LogSegments)
	}
	for _, n := range c.Nodes {
		if !launcher.Alive(n.PID) {
			t.Errorf("%s (pid %d) died during the soak", n.Name, n.PID)
		}
	}
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
