package cassandra

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
)

// testCompareAndSet: the lightweight-transaction compare-and-set on a real
// Cassandra cluster (TestDriverAgainstCluster's, both nodes up): a missing
// row and a wrong expected value do not swap, the right one does and keeps
// the row's other columns, and of concurrent compare-and-sets from the
// same value at most one swaps (exactly one when none timed out). It had
// a one-node cluster of its own, whose JVM start was most of its time.
func testCompareAndSet(t *testing.T, c *launcher.Cluster) {
	d := newDriver(t, c, map[string]string{PropConsistency: "ONE"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cas := func(key, old, new string) bool {
		t.Helper()
		ok, err := d.CompareAndSet(ctx, "usertable", key, "field0", []byte(old), []byte(new))
		if err != nil {
			t.Fatalf("cas %s %s -> %s: %v", key, old, new, err)
		}
		return ok
	}
	if cas("cas-missing", "1", "2") {
		t.Fatal("a missing row swapped")
	}
	if err := d.Update(ctx, "usertable", "cas1", map[string][]byte{"field0": []byte("1"), "field1": []byte("keep")}); err != nil {
		t.Fatal(err)
	}
	if cas("cas1", "0", "2") {
		t.Fatal("a wrong expected value swapped")
	}
	if !cas("cas1", "1", "2") {
		t.Fatal("the expected value did not swap")
	}
	rec, err := d.Read(ctx, "usertable", "cas1", nil)
	if err != nil || string(rec["field0"]) != "2" || string(rec["field1"]) != "keep" {
		t.Fatalf("after the swap: %q, %v", rec, err)
	}
	if err := d.Update(ctx, "usertable", "cas2", map[string][]byte{"field0": []byte("0")}); err != nil {
		t.Fatal(err)
	}
	var swapped, failed atomic.Int32
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			ok, err := d.CompareAndSet(ctx, "usertable", "cas2", "field0", []byte("0"), []byte(strconv.Itoa(i+1)))
			if err != nil {
				t.Logf("concurrent cas: %v", err) // Paxos contention may time out: outcome unknown
				failed.Add(1)
			}
			if ok {
				swapped.Add(1)
			}
		})
	}
	wg.Wait()
	if n := swapped.Load(); n > 1 {
		t.Fatalf("%d of 6 concurrent compare-and-sets from the same value swapped, want at most 1", n)
	}
	if failed.Load() > 0 {
		return // an unknown outcome may have swapped too
	}
	rec, err = d.Read(ctx, "usertable", "cas2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if swapped.Load() != 1 {
		t.Fatalf("no compare-and-set swapped and none failed")
	}
	if v := string(rec["field0"]); v == "0" {
		t.Fatalf("field0 = %s after %d swaps", v, swapped.Load())
	}
}
