// Command cqlloop is the bare Cassandra client loop that bench/vs-peers.sh
// puts beside faultbench's Cassandra driver, in place of cassandra-stress,
// which this project cannot obtain (docs/PERFORMANCE.md says why): the
// same client library (gocql, one session, protocol 4, the driver's
// default connections per node and token-aware routing, no retries), the
// same statements per operation as the driver for YCSB workload A at the
// same consistency level (a read is one SELECT of the ten fields by key,
// prepared by gocql; an update is one UPDATE of one field of 100 bytes),
// closed loop on N goroutines — and nothing else: no workload generator,
// no recorder, no per-operation deadline. It creates its own table of
// YCSB's shape (y_id text key, ten blob columns) in the keyspace and
// loads its records first (not timed: ten fields of 100 bytes), then runs
// for the given duration and prints one line: operations, seconds, and
// its own CPU seconds (user+system, getrusage) of the timed part.
//
// Usage: cqlloop -hosts 127.0.0.1:9042 -threads 16 -records 10000 -duration 20s -consistency ONE
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gocql/gocql"
)

func main() {
	hosts := flag.String("hosts", "127.0.0.1:9042", "Cassandra host:port (comma-separated, one port)")
	keyspace := flag.String("keyspace", "ycsb", "keyspace (must exist)")
	table := flag.String("table", "cqlloop", "table to create and use")
	threads := flag.Int("threads", 16, "goroutines, closed loop")
	records := flag.Int("records", 10000, "records to load and use")
	conns := flag.Int("conns", 2, "connections per node (the driver's cassandra.numconns default)")
	consistency := flag.String("consistency", "ONE", "consistency level of reads and writes")
	duration := flag.Duration("duration", 20*time.Second, "timed part")
	flag.Parse()
	if *threads < 1 || *records < 1 || *conns < 1 || *duration <= 0 {
		fmt.Fprintln(os.Stderr, "cqlloop: -threads, -records, -conns and -duration must be positive")
		os.Exit(2)
	}
	// the same core budget as faultbench's client (half the cores) unless set
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(max(1, runtime.NumCPU()/2))
	}
	if err := run(*hosts, *keyspace, *table, *consistency, *threads, *records, *conns, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "cqlloop:", err)
		os.Exit(1)
	}
}

func run(hosts, keyspace, table, consistency string, threads, records, conns int, duration time.Duration) error {
	cl, err := gocql.ParseConsistencyWrapper(consistency)
	if err != nil {
		return fmt.Errorf("-consistency: %w", err)
	}
	var addrs []string
	port := 0
	for _, h := range strings.Split(hosts, ",") {
		host, p, err := net.SplitHostPort(strings.TrimSpace(h))
		if err != nil {
			return fmt.Errorf("-hosts: %q is not host:port", h)
		}
		if port, err = strconv.Atoi(p); err != nil {
			return fmt.Errorf("-hosts: %q: bad port", h)
		}
		addrs = append(addrs, host)
	}
	c := gocql.NewCluster(addrs...)
	c.Port = port
	c.ProtoVersion = 4
	c.NumConns = conns
	c.Consistency = cl
	c.Timeout = 12 * time.Second
	c.ConnectTimeout = 5 * time.Second
	c.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 0}
	c.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	c.Logger = log.New(io.Discard, "", 0)
	s, err := c.CreateSession()
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", hosts, err)
	}
	defer s.Close()
	ctx := context.Background()
	fq := keyspace + "." + table
	cols := make([]string, 10)
	for i := range cols {
		cols[i] = "field" + strconv.Itoa(i)
	}
	if err := s.Query("CREATE TABLE IF NOT EXISTS " + fq + " (y_id text PRIMARY KEY, " + strings.Join(cols, " blob, ") + " blob)").Exec(); err != nil {
		return fmt.Errorf("creating %s: %w", fq, err)
	}
	if err := s.AwaitSchemaAgreement(ctx); err != nil {
		return err
	}
	insertQ := "INSERT INTO " + fq + " (y_id, " + strings.Join(cols, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(cols)) + ")"
	readQ := "SELECT " + strings.Join(cols, ", ") + " FROM " + fq + " WHERE y_id = ?"
	updateQ := "UPDATE " + fq + " SET field0 = ? WHERE y_id = ?"
	value := make([]byte, 100)
	key := func(i int) string { return "user" + strconv.Itoa(i) }
	// the load (not timed) on every goroutine
	var loadErr atomic.Pointer[error]
	var lwg sync.WaitGroup
	for g := range threads {
		lwg.Go(func() {
			args := make([]any, 1+len(cols))
			for i := 1; i < len(args); i++ {
				args[i] = value
			}
			for i := g; i < records; i += threads {
				args[0] = key(i)
				if err := s.Query(insertQ, args...).Consistency(cl).Exec(); err != nil {
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
			vals := make([][]byte, len(cols))
			dest := make([]any, len(cols))
			for i := range vals {
				dest[i] = &vals[i]
			}
			for time.Now().Before(end) {
				k := key(rng.IntN(records))
				var err error
				if rng.IntN(2) == 0 {
					iter := s.Query(readQ, k).Consistency(cl).WithContext(ctx).Iter()
					iter.Scan(dest...)
					err = iter.Close()
				} else {
					err = s.Query(updateQ, value, k).Consistency(cl).WithContext(ctx).Exec()
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
