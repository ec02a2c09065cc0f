package sqldb

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/launcher/galera"
	"github.com/faultbench/faultbench/internal/launcher/postgresha"
)

// benchUp starts a one-node cluster with l for a benchmark, skipping when
// it cannot (-short, not root, not installed).
func benchUp(b *testing.B, l launcher.Launcher) *launcher.Cluster {
	b.Helper()
	if testing.Short() {
		b.Skip("starts a real database (skipped with -short)")
	}
	if os.Geteuid() != 0 {
		b.Skip("the SQL launchers run the servers as their system users, which needs root")
	}
	env, err := launcher.NewEnv()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := l.Up(ctx, env, launcher.Spec{Name: "bench-" + l.Kind(), Nodes: 1})
	if c != nil {
		b.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = launcher.Down(ctx, c, 10*time.Second)
		})
	}
	if err != nil {
		b.Skipf("%s: %v", l.Kind(), err)
	}
	return c
}

// BenchmarkOps measures the driver's YCSB operations one at a time against
// a real one-node server (PostgreSQL, MariaDB): the figure of interest is
// allocations and client CPU per operation (-benchmem, -cpuprofile); the
// time is loopback round trips and the server's work. Run with
//
//	go test -run XXX -bench Ops -benchmem ./internal/driver/sqldb/
func BenchmarkOps(b *testing.B) {
	for _, tc := range []struct {
		name  string
		l     launcher.Launcher
		hosts func(*launcher.Cluster) string
		open  func(context.Context, string) (*Driver, error)
	}{
		{"postgres", postgresha.Launcher{}, func(c *launcher.Cluster) string { return strings.Join(postgresha.Endpoints(c), ",") },
			func(ctx context.Context, h string) (*Driver, error) {
				return open(ctx, Postgres, props("postgres.hosts", h))
			}},
		{"mariadb", galera.Launcher{}, func(c *launcher.Cluster) string { return strings.Join(c.Endpoints(), ",") },
			func(ctx context.Context, h string) (*Driver, error) {
				return open(ctx, Galera, props("galera.hosts", h))
			}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := benchUp(b, tc.l)
			ctx := context.Background()
			d, err := tc.open(ctx, tc.hosts(c))
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			benchOps(b, d)
		})
	}
}

func benchOps(b *testing.B, d *Driver) {
	ctx := context.Background()
	vals := map[string][]byte{}
	for i := range 10 {
		vals["field"+strconv.Itoa(i)] = make([]byte, 100)
	}
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "user" + strconv.Itoa(i)
		if err := d.Insert(ctx, "usertable", keys[i], vals); err != nil && !strings.Contains(err.Error(), "uplicate") {
			b.Fatal(err)
		}
	}
	one := map[string][]byte{"field3": make([]byte, 100)}
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := d.Read(ctx, "usertable", keys[i%len(keys)], nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("update", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := d.Update(ctx, "usertable", keys[i%len(keys)], one); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scan10", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := d.Scan(ctx, "usertable", keys[i%len(keys)], 10, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	// a short SQL transaction as TPC-C's run them: the SQL ability's path
	b.Run("sqltxn", func(b *testing.B) {
		b.ReportAllocs()
		q := "SELECT field0 FROM usertable WHERE ycsb_key = ?"
		for i := 0; b.Loop(); i++ {
			t, err := d.BeginSQL(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var v []byte
			if err := t.Query(ctx, q, []any{keys[i%len(keys)]}, func(scan func(...any) error) error { return scan(&v) }); err != nil {
				b.Fatal(err)
			}
			if _, err := t.Exec(ctx, "UPDATE usertable SET field1 = ? WHERE ycsb_key = ?", v, keys[i%len(keys)]); err != nil {
				b.Fatal(err)
			}
			if err := t.Commit(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
