package hbase

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	hlaunch "github.com/faultbench/faultbench/internal/launcher/hbase"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
)

// startCluster starts a real three-node HBase cluster on HDFS and registers
// its teardown.
func startCluster(t *testing.T) *launcher.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real HBase, HDFS and ZooKeeper JVMs (skipped with -short)")
	}
	lib, err := hlaunch.DefaultLibDir()
	if err == nil {
		_, err = os.Stat(filepath.Join(lib, "hbase-server-"+hlaunch.Version+"-hadoop3.jar"))
	}
	if err != nil {
		t.Skipf("HBase not installed (%v): scripts/setup.sh --only hbase installs it; make test does", err)
	}
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := hlaunch.Launcher{}.Up(ctx, env, launcher.Spec{Name: "test-hbase-driver", Nodes: 3})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("3 nodes up in %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := launcher.Down(ctx, c, 10*time.Second); err != nil {
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

func clusterDriver(t *testing.T, c *launcher.Cluster, kv ...string) *Driver {
	t.Helper()
	thrift, err := c.Node(hlaunch.ThriftNode)
	if err != nil {
		t.Fatal(err)
	}
	p := properties.New()
	p.Set(PropThrift, thrift.Addr)
	for i := 0; i+1 < len(kv); i += 2 {
		p.Set(kv[i], kv[i+1])
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

const table = "usertable"

// writeAll writes value to field0 of every key and returns how many
// writes failed (every acknowledged write is in acked).
func writeAll(ctx context.Context, d *Driver, keys []string, value string, acked map[string]string) int {
	failed := 0
	for _, k := range keys {
		if err := d.Update(ctx, table, k, map[string][]byte{"field0": []byte(value), "field1": []byte(k)}); err != nil {
			failed++
			continue
		}
		acked[k] = value
	}
	return failed
}

// lostWrites reads every acknowledged key from its region's primary and
// counts those whose value is not the last acknowledged one.
func lostWrites(t *testing.T, ctx context.Context, d *Driver, acked map[string]string) int {
	t.Helper()
	lost := 0
	for k, want := range acked {
		rec, err := d.ReadStrong(ctx, table, k, nil)
		if err != nil {
			t.Fatalf("read %s after the failover: %v", k, err)
		}
		if string(rec["field0"]) != want {
			lost++
		}
	}
	return lost
}

// killAndWait kill -9s the region server name and waits until the master
// has reassigned its regions to the others.
func killAndWait(t *testing.T, ctx context.Context, c *launcher.Cluster, name string) {
	t.Helper()
	n, err := c.Node(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := launcher.Kill(ctx, n.PID); err != nil {
		t.Fatalf("kill -9 %s: %v", name, err)
	}
	n.PID, n.Down = 0, true
	if err := (hlaunch.Launcher{}).WaitHealthy(ctx, c); err != nil {
		t.Fatalf("regions of %s not reassigned: %v", name, err)
	}
}

// TestHBaseCluster: a YCSB-style load and run with no error, then a kill -9
// of a region server: its regions are reassigned and every acknowledged
// write (WAL hflushed to HDFS) is read back. The negative control writes
// without the write-ahead log (hbase.durability=skip_wal) and kills another
// region server: the same check must find lost writes.
func TestHBaseCluster(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	d := clusterDriver(t, c)
	keys := make([]string, 300)
	for i := range keys {
		// spread over the pre-split regions, as YCSB's hashed keys are
		keys[i] = fmt.Sprintf("user%d", 1000+(i*8999/len(keys)))
	}
	acked := map[string]string{}
	t.Run("load and run", func(t *testing.T) {
		for _, k := range keys {
			if err := d.Insert(ctx, table, k, map[string][]byte{"field0": []byte("v0"), "field1": []byte(k)}); err != nil {
				t.Fatalf("insert %s: %v", k, err)
			}
			acked[k] = "v0"
		}
		if n := writeAll(ctx, d, keys, "v1", acked); n > 0 {
			t.Fatalf("%d updates failed", n)
		}
		for _, k := range keys[:50] {
			rec, err := d.Read(ctx, table, k, []string{"field0"})
			if err != nil || string(rec["field0"]) != "v1" {
				t.Fatalf("read %s = %v, %v", k, rec, err)
			}
		}
		rs, err := d.Scan(ctx, table, keys[0], 10, nil)
		if err != nil || len(rs) != 10 {
			t.Fatalf("scan: %d records, %v", len(rs), err)
		}
		if _, err := d.Read(ctx, table, "user0000-missing", nil); outcome.ClassOf(err) != outcome.NotFound {
			t.Fatalf("read of a missing key: %v, want not found", err)
		}
		extra := "user0000-deleted"
		if err := d.Insert(ctx, table, extra, map[string][]byte{"field0": []byte("x")}); err != nil {
			t.Fatal(err)
		}
		if err := d.Delete(ctx, table, extra); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Read(ctx, table, extra, nil); outcome.ClassOf(err) != outcome.NotFound {
			t.Fatalf("read of a deleted key: %v, want not found", err)
		}
	})
	t.Run("region server killed, nothing lost", func(t *testing.T) {
		killAndWait(t, ctx, c, "n1")
		if lost := lostWrites(t, ctx, d, acked); lost != 0 {
			t.Errorf("%d of %d acknowledged writes lost with the WAL on HDFS", lost, len(acked))
		}
	})
	t.Run("negative control: no WAL loses writes", func(t *testing.T) {
		nowal := clusterDriver(t, c, PropDurability, "skip_wal")
		if n := writeAll(ctx, nowal, keys, "v2", acked); n > 0 {
			t.Fatalf("%d updates failed", n)
		}
		killAndWait(t, ctx, c, "n2")
		lost := lostWrites(t, ctx, d, acked)
		t.Logf("skip_wal: %d of %d acknowledged writes lost", lost, len(acked))
		if lost == 0 {
			t.Error("writes without the WAL survived a region server's kill -9: the check cannot fail")
		}
	})
}
