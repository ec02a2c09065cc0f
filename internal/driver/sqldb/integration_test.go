package sqldb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/launcher/galera"
	"github.com/faultbench/faultbench/internal/launcher/postgresha"
	"github.com/faultbench/faultbench/internal/outcome"
)

// upOrSkip starts a cluster with l, skipping when the database is not
// installed, and registers its teardown.
func upOrSkip(t *testing.T, l launcher.Launcher, nodes int) *launcher.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real database cluster (skipped with -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("the SQL launchers run the servers as their system users, which needs root")
	}
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := l.Up(ctx, env, launcher.Spec{Name: "test-" + l.Kind(), Nodes: nodes})
	if c != nil {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := launcher.Down(ctx, c, 10*time.Second); err != nil {
				t.Errorf("Down: %v", err)
			}
		})
	}
	if err != nil {
		if strings.Contains(err.Error(), "scripts/setup.sh") {
			t.Skipf("not installed: %v", err)
		}
		t.Fatalf("Up: %v", err)
	}
	return c
}

// failover runs 4 writers inserting fresh keys, calls kill once writes
// flow, keeps writing until writes have succeeded again for 2 s, and then
// checks that every acknowledged insert can be read back. It returns the
// time from the kill to the first successful write after the first failure.
func failover(t *testing.T, drv *Driver, kill func() error) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu        sync.Mutex
		acked     []string
		classes   = map[outcome.Class]int{}
		firstFail time.Time
		lastOK    time.Time
		killed    time.Time
		recovered time.Duration
	)
	val := map[string][]byte{"field0": []byte("v0"), "field1": []byte("v1")}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("user%d-%07d", w, i)
				octx, ocancel := context.WithTimeout(ctx, 5*time.Second)
				err := drv.Insert(octx, "usertable", key, val)
				ocancel()
				now := time.Now()
				mu.Lock()
				if err == nil {
					acked = append(acked, key)
					if !firstFail.IsZero() && recovered == 0 {
						recovered = now.Sub(killed)
					}
					lastOK = now
				} else {
					classes[outcome.ClassOf(err)]++
					if firstFail.IsZero() && !killed.IsZero() {
						firstFail = now
					}
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	time.Sleep(2 * time.Second)
	mu.Lock()
	killed = time.Now()
	mu.Unlock()
	if err := kill(); err != nil {
		close(stop)
		wg.Wait()
		t.Fatalf("kill: %v", err)
	}
	for {
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		done := recovered > 0 && time.Since(lastOK) < time.Second && time.Since(killed) > recovered+2*time.Second
		noFailure := firstFail.IsZero() && time.Since(killed) > 10*time.Second
		mu.Unlock()
		if done || noFailure || ctx.Err() != nil {
			break
		}
	}
	close(stop)
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("writes did not succeed again after the kill (errors by class: %v)", classes)
	}
	t.Logf("%d inserts acknowledged; errors by class %v; writes back %v after the kill", len(acked), classes, recovered.Round(time.Millisecond))
	for class := range classes {
		if class == outcome.Other {
			t.Errorf("%d errors of class other: the driver should classify failover errors", classes[class])
		}
	}
	lost := 0
	for _, k := range acked {
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := drv.Read(rctx, "usertable", k, nil)
		rcancel()
		if errors.Is(err, outcome.ErrNotFound) {
			lost++
		} else if err != nil {
			t.Fatalf("read %s: %v", k, err)
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged inserts lost", lost, len(acked))
	}
	return recovered
}

func TestPostgresFailoverNoLostWrites(t *testing.T) {
	c := upOrSkip(t, postgresha.Launcher{}, 2)
	p := props("postgres.hosts", strings.Join(postgresha.Endpoints(c), ","), "fieldcount", "2", "threads", "4")
	d, err := NewPostgres(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	drv := d.(*Driver)
	defer drv.Close()
	ctx := context.Background()
	if err := (postgresha.Launcher{}).Refresh(ctx, c); err != nil {
		t.Fatal(err)
	}
	prim := c.WithRole(launcher.RolePrimary)
	if len(prim) != 1 {
		t.Fatalf("primaries %v", prim)
	}
	k, _ := c.Node(prim[0] + postgresha.KeeperSuffix)
	failover(t, drv, func() error { return launcher.Kill(ctx, k.PID) })
	checkCRUD(t, drv)
	checkCAS(t, drv)
}

func TestGaleraFailoverNoLostWrites(t *testing.T) {
	c := upOrSkip(t, galera.Launcher{}, 3)
	p := props("galera.hosts", strings.Join(c.Endpoints(), ","), "fieldcount", "2", "threads", "4")
	d, err := NewGalera(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	drv := d.(*Driver)
	defer drv.Close()
	n1, _ := c.Node("n1") // the node the driver connects to first
	failover(t, drv, func() error { return launcher.Kill(context.Background(), n1.PID) })
	checkCRUD(t, drv)
	checkCAS(t, drv)
}

// checkCRUD runs every operation once on a live cluster.
func checkCRUD(t *testing.T, drv *Driver) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		if err := drv.Insert(ctx, "usertable", "crud"+strconv.Itoa(i), map[string][]byte{"field0": {0, 1, 2}, "field1": []byte("b")}); err != nil {
			t.Fatalf("insert: %v", err)
		}
	}
	if err := drv.Insert(ctx, "usertable", "crud0", map[string][]byte{"field0": []byte("x")}); outcome.ClassOf(err) != outcome.Rejected {
		t.Fatalf("duplicate insert: %v, want rejected", err)
	}
	if err := drv.Update(ctx, "usertable", "crud1", map[string][]byte{"field1": []byte("new"), "fbtag": []byte("t1")}); err != nil {
		t.Fatalf("update with a field beyond fieldcount: %v", err)
	}
	if rec, err := drv.Read(ctx, "usertable", "crud1", []string{"fbtag"}); err != nil || string(rec["fbtag"]) != "t1" {
		t.Fatalf("read of the added field: %q %v", rec, err)
	}
	rec, err := drv.Read(ctx, "usertable", "crud1", []string{"field1"})
	if err != nil || string(rec["field1"]) != "new" || len(rec) != 1 {
		t.Fatalf("read after update: %v %v", rec, err)
	}
	rec, err = drv.Read(ctx, "usertable", "crud0", nil)
	if err != nil || string(rec["field0"]) != "\x00\x01\x02" || len(rec) != 2 { // fbtag is NULL: left out
		t.Fatalf("read of all fields: %q %v", rec, err)
	}
	recs, err := drv.Scan(ctx, "usertable", "crud0", 3, nil)
	if err != nil || len(recs) != 3 || string(recs[1]["field1"]) != "new" {
		t.Fatalf("scan: %d records %v", len(recs), err)
	}
	if err := drv.Delete(ctx, "usertable", "crud2"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := drv.Read(ctx, "usertable", "crud2", nil); !errors.Is(err, outcome.ErrNotFound) || outcome.ClassOf(err) != outcome.NotFound {
		t.Fatalf("read after delete: %v, want not found", err)
	}
}
