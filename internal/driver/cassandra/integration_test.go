package cassandra

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	claunch "github.com/faultbench/faultbench/internal/launcher/cassandra"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
)

// startCluster starts a real two-node Cassandra cluster (RF 2) and
// registers its teardown.
func startCluster(t *testing.T) *launcher.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real Cassandra JVMs (skipped with -short)")
	}
	lib, err := claunch.DefaultLibDir()
	if err == nil {
		_, err = os.Stat(lib + "/cassandra-all-" + claunch.Version + ".jar")
	}
	if err != nil {
		t.Skipf("Cassandra not installed (%v): scripts/setup.sh --only cassandra installs it; make test does", err)
	}
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := claunch.Launcher{}.Up(ctx, env, launcher.Spec{Name: "test-cassandra-driver", Nodes: 2, Options: map[string]string{"rf": "2"}})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("2 nodes up in %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := launcher.Down(ctx, c, 20*time.Second); err != nil {
			t.Errorf("Down: %v", err)
		}
		for _, n := range c.Nodes {
			if n.PID > 0 && launcher.Alive(n.PID) {
				t.Errorf("%s (pid %d) still runs after Down", n.Name, n.PID)
			}
		}
	})
	return c
}

func newDriver(t *testing.T, c *launcher.Cluster, props map[string]string) *Driver {
	t.Helper()
	p := properties.New()
	p.Set(PropHosts, strings.Join(c.Endpoints(), ","))
	p.Set("fieldcount", "3")
	for k, v := range props {
		p.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := New(ctx, p)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d.(*Driver)
}

// TestDriverAgainstCluster runs every operation and the compare-and-set
// against a real cluster, then kills one of two nodes and checks the error classes at consistency
// ALL (unavailable, or a write timeout with unknown outcome while the
// coordinator has not yet noticed) and that ONE still serves.
func TestDriverAgainstCluster(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	one := newDriver(t, c, map[string]string{PropConsistency: "ONE"})
	all := newDriver(t, c, map[string]string{PropConsistency: "ALL", PropTimeout: "4s"})

	t.Run("operations", func(t *testing.T) {
		for _, k := range []string{"user1", "user2", "user3", "user4"} {
			if err := all.Insert(ctx, "usertable", k, map[string][]byte{"field0": []byte("a-" + k), "field1": []byte("b"), "fbtag": []byte("t")}); err != nil {
				t.Fatalf("insert %s: %v", k, err)
			}
		}
		rec, err := one.Read(ctx, "usertable", "user1", nil)
		if err != nil || string(rec["field0"]) != "a-user1" || string(rec["fbtag"]) != "t" {
			t.Fatalf("read all fields = %v, %v", rec, err)
		}
		if strong, err := one.ReadStrong(ctx, "usertable", "user1", nil); err != nil || string(strong["field0"]) != "a-user1" {
			t.Fatalf("strong read (ALL) = %v, %v", strong, err)
		}
		if _, ok := rec["field2"]; ok {
			t.Errorf("a column never written (null) must be left out: %v", rec)
		}
		if err := all.Update(ctx, "usertable", "user1", map[string][]byte{"field1": []byte("updated")}); err != nil {
			t.Fatalf("update: %v", err)
		}
		rec, err = one.Read(ctx, "usertable", "user1", []string{"field0", "field1"})
		if err != nil || string(rec["field1"]) != "updated" || string(rec["field0"]) != "a-user1" || len(rec) != 2 {
			t.Fatalf("read after update = %v, %v", rec, err)
		}
		recs, err := one.Scan(ctx, "usertable", "user1", 3, nil)
		if err != nil || len(recs) < 1 || len(recs) > 3 {
			t.Fatalf("scan from user1, 3 records: %d records, %v", len(recs), err)
		}
		if string(recs[0]["field0"]) != "a-user1" {
			t.Errorf("a token-range scan starts at its start key's token: first record %v", recs[0])
		}
		// the rows are scanned through one buffer: each record keeps its own values
		seen := map[string]bool{}
		for _, r := range recs {
			seen[string(r["field0"])] = true
		}
		if len(seen) != len(recs) || string(rec["field0"]) != "a-user1" {
			t.Errorf("records share memory: scan %v, earlier read %v", recs, rec)
		}
		if err := all.Delete(ctx, "usertable", "user2"); err != nil {
			t.Fatalf("delete: %v", err)
		}
		_, err = one.Read(ctx, "usertable", "user2", nil)
		if !errors.Is(err, outcome.ErrNotFound) || outcome.ClassOf(err) != outcome.NotFound {
			t.Fatalf("read of a deleted key: %v, want ErrNotFound", err)
		}
		if err := one.Update(ctx, "usertable", "user1", map[string][]byte{"nosuchcolumn": []byte("x")}); outcome.ClassOf(err) != outcome.Rejected {
			t.Errorf("update of an unknown column: %v, want class rejected", err)
		}
	})

	t.Run("compare-and-set", func(t *testing.T) { testCompareAndSet(t, c) })

	t.Run("node killed", func(t *testing.T) {
		n2 := &c.Nodes[1]
		if err := launcher.Signal(n2.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := launcher.WaitExit(ctx, n2.PID); err != nil {
			t.Fatal(err)
		}
		var sawUnavailable, sawTimeout bool
		deadline := time.Now().Add(90 * time.Second)
		for i := 0; !sawUnavailable && time.Now().Before(deadline); i++ {
			err := all.Update(ctx, "usertable", "user3", map[string][]byte{"field0": []byte("x")})
			switch outcome.ClassOf(err) {
			case outcome.Unavailable:
				sawUnavailable = true
			case outcome.Timeout:
				sawTimeout = true
				var wt *WriteTimeoutError
				if errors.As(err, &wt) && !strings.Contains(err.Error(), "outcome unknown") {
					t.Errorf("write timeout does not say its outcome is unknown: %v", err)
				}
			case outcome.OK:
				t.Fatalf("update at ALL with one of two replicas dead succeeded")
			default:
				t.Logf("update at ALL with n2 dead: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if !sawUnavailable {
			t.Fatalf("no Unavailable error at ALL within 90 s of killing n2 (timeouts seen: %v)", sawTimeout)
		}
		t.Logf("at ALL: unavailable seen, write timeouts before it: %v", sawTimeout)
		// ONE keeps serving from n1: the first requests may still go to n2's
		// closed connections
		var err error
		for i := 0; i < 50; i++ {
			if err = one.Update(ctx, "usertable", "user3", map[string][]byte{"field0": []byte("y")}); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("update at ONE with n1 up: %v", err)
		}
		rec, err := one.Read(ctx, "usertable", "user3", nil)
		if err != nil || string(rec["field0"]) != "y" {
			t.Fatalf("read at ONE with n1 up: %v, %v", rec, err)
		}
	})
}

// TestRowsKeepTheirValues reads rows through the driver's pooled scan
// buffer on one node: every record of a scan, and a record read before,
// keeps its own values (gocql appends a blob into the slice it scans
// into, so a buffer not cleared per row would hand every record the same
// memory).
func TestRowsKeepTheirValues(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Cassandra JVM (skipped with -short)")
	}
	lib, err := claunch.DefaultLibDir()
	if err == nil {
		_, err = os.Stat(lib + "/cassandra-all-" + claunch.Version + ".jar")
	}
	if err != nil {
		t.Skipf("Cassandra not installed (%v): scripts/setup.sh --only cassandra", err)
	}
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c, err := claunch.Launcher{}.Up(ctx, env, launcher.Spec{Name: "test-cassandra-rows", Nodes: 1})
	if c != nil {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = launcher.Down(ctx, c, 20*time.Second)
		})
	}
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	d := newDriver(t, c, nil)
	keys := []string{"k1", "k2", "k3", "k4", "k5"}
	for _, k := range keys {
		if err := d.Insert(ctx, "usertable", k, map[string][]byte{"field0": []byte("v-" + k), "field1": []byte("w-" + k)}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := d.Read(ctx, "usertable", "k1", nil)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := d.Scan(ctx, "usertable", "k1", len(keys), nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if string(r["field1"]) != "w-"+string(r["field0"])[2:] {
			t.Errorf("a record's fields disagree: %q %q", r["field0"], r["field1"])
		}
		seen[string(r["field0"])] = true
	}
	if len(recs) < 2 || len(seen) != len(recs) {
		t.Errorf("scan of %d records: %d distinct values (%v)", len(recs), len(seen), seen)
	}
	if string(first["field0"]) != "v-k1" || string(first["field1"]) != "w-k1" {
		t.Errorf("a record read before the scan changed: %q %q", first["field0"], first["field1"])
	}
}
