package cassandra

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/faultbench/faultbench/internal/launcher"
	claunch "github.com/faultbench/faultbench/internal/launcher/cassandra"
	"github.com/faultbench/faultbench/internal/properties"
)

// BenchmarkOps measures the driver's YCSB operations one at a time
// against a real one-node Cassandra, beside the bare gocql calls that
// bench/cqlloop makes for the same operation on the same session
// (driver/read vs bare/read: one SELECT of the ten fields by key, scanned
// into byte slices; driver/update vs bare/update: one UPDATE of one
// field). The figures of interest are allocations and client CPU per
// operation (-benchmem, -cpuprofile); the time is loopback round trips
// and the server's work, which both sides share. Run with
//
//	go test -run XXX -bench Ops -benchmem ./internal/driver/cassandra/
func BenchmarkOps(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a Cassandra JVM (skipped with -short)")
	}
	lib, err := claunch.DefaultLibDir()
	if err == nil {
		_, err = os.Stat(lib + "/cassandra-all-" + claunch.Version + ".jar")
	}
	if err != nil {
		b.Skipf("Cassandra not installed (%v): scripts/setup.sh --only cassandra", err)
	}
	env, err := launcher.NewEnv()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := claunch.Launcher{}.Up(ctx, env, launcher.Spec{Name: "bench-cassandra-driver", Nodes: 1})
	if c != nil {
		b.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = launcher.Down(ctx, c, 20*time.Second)
		})
	}
	if err != nil {
		b.Fatalf("Up: %v", err)
	}
	p := properties.New()
	p.Set(PropHosts, strings.Join(c.Endpoints(), ","))
	dd, err := New(ctx, p)
	if err != nil {
		b.Fatal(err)
	}
	d := dd.(*Driver)
	defer d.Close()

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
	cols := d.all
	readQ := "SELECT " + strings.Join(cols, ", ") + " FROM " + d.ks + ".usertable WHERE y_id = ?"
	updateQ := "UPDATE " + d.ks + ".usertable SET field3 = ? WHERE y_id = ?"
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
		out := make([][]byte, len(cols))
		dest := make([]any, len(cols))
		for i := range out {
			dest[i] = &out[i]
		}
		for i := 0; b.Loop(); i++ {
			iter := d.s.Query(readQ, keys[i%len(keys)]).Consistency(gocql.One).WithContext(bg).Iter()
			iter.Scan(dest...)
			if err := iter.Close(); err != nil {
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
		v := one["field3"]
		for i := 0; b.Loop(); i++ {
			if err := d.s.Query(updateQ, v, keys[i%len(keys)]).Consistency(gocql.One).WithContext(bg).Exec(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
