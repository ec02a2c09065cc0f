package txkv_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	txkvdriver "github.com/faultbench/faultbench/internal/driver/txkv"
	"github.com/faultbench/faultbench/internal/launcher"
	txkvl "github.com/faultbench/faultbench/internal/launcher/txkv"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/txkv/client"
)

// BenchmarkOps measures the driver's YCSB operations one at a time
// against a real two-node txkv cluster, beside the bare client calls that
// bench/txkvloop makes for the same operation (driver/read vs bare/read:
// Begin, Read, Abort; driver/update vs bare/update: Begin, Write of one
// field, Commit). The figures of interest are allocations and client CPU
// per operation (-benchmem, -cpuprofile). Run with
//
//	go test -run XXX -bench Ops -benchmem ./internal/driver/txkv/
func BenchmarkOps(b *testing.B) {
	if testing.Short() {
		b.Skip("starts real txkv processes (skipped with -short)")
	}
	b.Setenv("TMPDIR", b.TempDir())
	env, err := launcher.NewEnv()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := txkvl.Launcher{}.Up(ctx, env, launcher.Spec{Name: "bench-txkv", Nodes: 2})
	if c != nil {
		b.Cleanup(func() { _ = launcher.Down(context.Background(), c, 10*time.Second) })
	}
	if err != nil {
		b.Fatal(err)
	}
	p := properties.New()
	txkvl.Connect(p, c)
	d, err := txkvdriver.NewDriver(ctx, p)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	cli, err := client.Open(ctx, client.Config{Coordinator: p.String(txkvdriver.PropCoordinator, ""), Name: "bench-bare"})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = cli.Close(cctx)
	}()

	bg := context.Background()
	vals := map[string][]byte{}
	for i := range 10 {
		vals["field"+strconv.Itoa(i)] = make([]byte, 100)
	}
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "user" + strconv.Itoa(i)
		if err := d.Insert(bg, "usertable", keys[i], vals); err != nil {
			b.Fatal(err)
		}
	}
	one := map[string][]byte{"field3": make([]byte, 100)}
	b.Run("driver/read", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := d.Read(bg, "usertable", keys[i%len(keys)], nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bare/read", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			t, err := cli.Begin(bg)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := t.Read(bg, "usertable", keys[i%len(keys)], nil); err != nil {
				b.Fatal(err)
			}
			t.Abort()
		}
	})
	b.Run("driver/update", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := d.Update(bg, "usertable", keys[i%len(keys)], one); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bare/update", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			t, err := cli.Begin(bg)
			if err != nil {
				b.Fatal(err)
			}
			if err := t.Write("usertable", keys[i%len(keys)], one); err != nil {
				b.Fatal(err)
			}
			if _, err := t.Commit(bg); err != nil {
				b.Fatal(err)
			}
		}
	})
}
