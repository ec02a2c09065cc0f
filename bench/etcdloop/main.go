// Command etcdloop is the bare etcd client loop that bench/vs-peers.sh
// puts beside faultbench's etcd driver: the same client library
// (go.etcd.io/etcd/client/v3, one client), the same RPCs per operation as
// the driver's defaults for YCSB workload A (a read is one linearizable
// Get; an update is a Get and a Txn that puts the record if its
// ModRevision is unchanged), closed loop on N goroutines — and nothing
// else: no workload generator, no recorder, no per-operation deadline.
// It loads its own records first (not timed), then runs for the given
// duration and prints one line: operations, seconds, and its own CPU
// seconds (user+system, getrusage) of the timed part.
//
// Usage: etcdloop -endpoints 127.0.0.1:2379 -threads 16 -records 10000 -duration 20s
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

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func main() {
	endpoints := flag.String("endpoints", "127.0.0.1:2379", "etcd endpoint")
	threads := flag.Int("threads", 16, "goroutines, closed loop")
	records := flag.Int("records", 10000, "records to load and use")
	size := flag.Int("size", 1100, "bytes per record (10 fields of 100 bytes, encoded)")
	duration := flag.Duration("duration", 20*time.Second, "timed part")
	flag.Parse()
	if *threads < 1 || *records < 1 || *size < 1 || *duration <= 0 {
		fmt.Fprintln(os.Stderr, "etcdloop: -threads, -records, -size and -duration must be positive")
		os.Exit(2)
	}
	// the same core budget as faultbench's client (half the cores) unless set
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(max(1, runtime.NumCPU()/2))
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{*endpoints}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdloop:", err)
		os.Exit(1)
	}
	defer cli.Close()
	value := string(make([]byte, *size))
	key := func(i int) string { return "/etcdloop/user" + strconv.Itoa(i) }
	ctx := context.Background()
	// the load (not timed) on every goroutine: a serial one took most of a short round
	var loadErr atomic.Pointer[error]
	var lwg sync.WaitGroup
	for t := 0; t < *threads; t++ {
		lwg.Go(func() {
			for i := t; i < *records; i += *threads {
				if _, err := cli.Put(ctx, key(i), value); err != nil {
					loadErr.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	lwg.Wait()
	if err := loadErr.Load(); err != nil {
		fmt.Fprintln(os.Stderr, "etcdloop: load:", *err)
		os.Exit(1)
	}

	var ops, fails atomic.Int64
	cpu0 := cpuTime()
	start := time.Now()
	end := start.Add(*duration)
	var wg sync.WaitGroup
	for t := 0; t < *threads; t++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			for time.Now().Before(end) {
				k := key(rng.IntN(*records))
				resp, err := cli.Get(ctx, k)
				if err == nil && rng.IntN(2) == 1 {
					var rev int64
					if len(resp.Kvs) > 0 {
						rev = resp.Kvs[0].ModRevision
					}
					_, err = cli.Txn(ctx).
						If(clientv3.Compare(clientv3.ModRevision(k), "=", rev)).
						Then(clientv3.OpPut(k, value)).
						Else(clientv3.OpGet(k)).
						Commit()
				}
				if err != nil {
					fails.Add(1)
				}
				ops.Add(1)
			}
		}(uint64(t))
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	fmt.Printf("operations %d seconds %.3f cpu_seconds %.3f failed %d\n", ops.Load(), secs, (cpuTime() - cpu0).Seconds(), fails.Load())
}

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
