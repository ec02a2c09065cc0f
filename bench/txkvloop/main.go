// Command txkvloop is the bare txkv client loop that bench/vs-peers.sh
// puts beside faultbench's txkv driver: the same client library
// (internal/txkv/client, one instance registered with the coordinator),
// the same calls per operation as the driver does for YCSB workload A (a
// read is Begin, Read of every field and Abort; an update is Begin, Write
// of one field of 100 bytes and Commit), closed loop on N goroutines — and
// nothing else: no workload generator, no recorder, no per-operation
// deadline. It loads its own records first (not timed: 10 fields of 100
// bytes, as YCSB's), then runs for the given duration and prints one
// line: operations, seconds, and its own CPU seconds (user+system,
// getrusage) of the timed part.
//
// Usage: txkvloop -coordinator 127.0.0.1:7000 -threads 16 -records 10000 -duration 20s
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/client"
)

const table = "txkvloop"

func main() {
	coordinator := flag.String("coordinator", "127.0.0.1:7000", "txkv coordinator host:port")
	threads := flag.Int("threads", 16, "goroutines, closed loop")
	records := flag.Int("records", 10000, "records to load and use")
	duration := flag.Duration("duration", 20*time.Second, "timed part")
	flag.Parse()
	if *threads < 1 || *records < 1 || *duration <= 0 {
		fmt.Fprintln(os.Stderr, "txkvloop: -threads, -records and -duration must be positive")
		os.Exit(2)
	}
	// the same core budget as faultbench's client (half the cores) unless set
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(max(1, runtime.NumCPU()/2))
	}
	if err := run(*coordinator, *threads, *records, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "txkvloop:", err)
		os.Exit(1)
	}
}

func run(coordinator string, threads, records int, duration time.Duration) error {
	ctx := context.Background()
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	cli, err := client.Open(octx, client.Config{Coordinator: coordinator, Name: "txkvloop/" + strconv.Itoa(os.Getpid())})
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_ = cli.Close(cctx)
	}()
	fields := make(map[string][]byte, 10)
	for i := range 10 {
		fields["field"+strconv.Itoa(i)] = make([]byte, 100)
	}
	key := func(i int) string { return "user" + strconv.Itoa(i) }
	// the load (not timed) on every goroutine: a serial one took most of a short round
	var loadErr atomic.Pointer[error]
	var lwg sync.WaitGroup
	for g := range threads {
		lwg.Go(func() {
			for i := g; i < records; i += threads {
				t, err := cli.Begin(ctx)
				if err == nil {
					if err = t.Write(table, key(i), fields); err == nil {
						_, err = t.Commit(ctx)
					}
				}
				if err != nil {
					loadErr.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	lwg.Wait()
	if err := loadErr.Load(); err != nil {
		return fmt.Errorf("load: %w", *err)
	}

	var ops, fails atomic.Int64
	cpu0 := cpuTime()
	start := time.Now()
	end := start.Add(duration)
	var wg sync.WaitGroup
	for g := range threads {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			one := map[string][]byte{"field0": make([]byte, 100)}
			for time.Now().Before(end) {
				k := key(rng.IntN(records))
				t, err := cli.Begin(ctx)
				if err == nil {
					if rng.IntN(2) == 0 {
						_, _, err = t.Read(ctx, table, k, nil)
						t.Abort()
					} else if err = t.Write(table, k, one); err == nil {
						_, err = t.Commit(ctx)
					}
				}
				if err != nil {
					fails.Add(1)
				}
				ops.Add(1)
			}
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	fmt.Printf("operations %d seconds %.3f cpu_seconds %.3f failed %d\n", ops.Load(), secs, (cpuTime() - cpu0).Seconds(), fails.Load())
	return nil
}

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
