package txkv_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// BenchmarkInsert measures one-write transactions of 1 KB rows on an
// in-process cluster (coordinator, 2 servers, one client, 32 goroutines).
func BenchmarkInsert(b *testing.B) {
	cfg := wire.Config{Persistence: wire.Async, Heartbeat: time.Second, SessionTimeout: 3 * time.Second, WALSyncInterval: time.Second, MemstoreFlushBytes: 16 << 20}
	c := startCluster(b, 2, cfg)
	cl := openClient(b, c.addr)
	defer cl.Close(context.Background())
	val := map[string][]byte{}
	for i := 0; i < 10; i++ {
		val[fmt.Sprintf("field%d", i)] = make([]byte, 100)
	}
	var n atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for {
				i := n.Add(1)
				if i > int64(b.N) {
					return
				}
				tx, err := cl.Begin(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				tx.Write("usertable", fmt.Sprintf("user%d", 1000000000+i*7919), val)
				if _, err := tx.Commit(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
