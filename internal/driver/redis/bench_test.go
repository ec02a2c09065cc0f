package redis

import (
	"context"
	"strconv"
	"testing"

	"github.com/faultbench/faultbench/internal/launcher"
	rlaunch "github.com/faultbench/faultbench/internal/launcher/redis"
)

// BenchmarkOps measures one operation at a time against a real standalone
// redis-server (allocations per operation are the figure of interest; the
// latency is loopback round trips on this machine).
func BenchmarkOps(b *testing.B) {
	if testing.Short() {
		b.Skip("starts redis-server")
	}
	env, err := launcher.NewEnv()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	c, err := rlaunch.StandaloneLauncher{}.Up(ctx, env, launcher.Spec{Name: "bench-redis", Nodes: 1})
	if err != nil {
		b.Skipf("redis-server: %v", err)
	}
	b.Cleanup(func() { _ = launcher.Down(context.Background(), c, 0) })
	dd, err := New(ctx, props(PropAddr, c.Nodes[0].Addr))
	if err != nil {
		b.Fatal(err)
	}
	defer dd.Close()
	d := dd.(*Driver)
	vals := map[string][]byte{}
	for i := range 10 {
		vals["field"+strconv.Itoa(i)] = make([]byte, 100)
	}
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "user" + strconv.Itoa(i)
		if err := d.Insert(ctx, table, keys[i], vals); err != nil {
			b.Fatal(err)
		}
	}
	one := map[string][]byte{"field3": make([]byte, 100)}
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := d.Read(ctx, table, keys[i%len(keys)], nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("update", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := d.Update(ctx, table, keys[i%len(keys)], one); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("insert", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := d.Insert(ctx, table, keys[i%len(keys)], vals); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scan10", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := d.Scan(ctx, table, keys[i%len(keys)], 10, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
