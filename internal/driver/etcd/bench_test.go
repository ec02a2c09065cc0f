package etcd_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/faultbench/faultbench/internal/driver/etcd"
	"github.com/faultbench/faultbench/internal/launcher"
	etcdlauncher "github.com/faultbench/faultbench/internal/launcher/etcd"
	"github.com/faultbench/faultbench/internal/properties"
)

// BenchmarkOps measures the driver's YCSB operations one at a time
// against a real one-member etcd, beside the bare client calls that
// bench/etcdloop makes for the same operation (driver/read vs bare/read:
// one Get; driver/update vs bare/update: a Get and a conditional Txn).
// The figures of interest are allocations and client CPU per operation
// (-benchmem, -cpuprofile); the time is loopback round trips and the
// server's work, which both sides share. Run with
//
//	go test -run XXX -bench Ops -benchmem ./internal/driver/etcd/
func BenchmarkOps(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a real etcd member (skipped with -short)")
	}
	env, err := launcher.NewEnv()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	c, err := etcdlauncher.Launcher{}.Up(ctx, env, launcher.Spec{Name: "bench-etcd", Nodes: 1})
	if c != nil {
		b.Cleanup(func() { _ = launcher.Down(context.Background(), c, 5*time.Second) })
	}
	if err != nil {
		b.Fatal(err)
	}
	p := properties.New()
	p.Set(etcd.PropEndpoints, strings.Join(c.Endpoints(), ","))
	d, err := etcd.NewDriver(ctx, p)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()

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
	value := string(make([]byte, 1100))
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
			if _, err := cli.Get(bg, "/usertable/"+keys[i%len(keys)]); err != nil {
				b.Fatal(err)
			}
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
			k := "/bare/" + keys[i%len(keys)]
			resp, err := cli.Get(bg, k)
			if err != nil {
				b.Fatal(err)
			}
			var rev int64
			if len(resp.Kvs) > 0 {
				rev = resp.Kvs[0].ModRevision
			}
			if _, err := cli.Txn(bg).If(clientv3.Compare(clientv3.ModRevision(k), "=", rev)).
				Then(clientv3.OpPut(k, value)).Else(clientv3.OpGet(k)).Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
