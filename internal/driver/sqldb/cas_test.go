package sqldb

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checkCAS checks the compare-and-set ability on a real database: a
// missing row and a wrong expected value do not swap, the right one does
// and keeps the row's other fields, and of concurrent compare-and-sets
// from the same value exactly one swaps.
func checkCAS(t *testing.T, drv *Driver) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cas := func(key, old, new string) bool {
		t.Helper()
		ok, err := drv.CompareAndSet(ctx, "usertable", key, "field0", []byte(old), []byte(new))
		if err != nil {
			t.Fatalf("cas %s %s -> %s: %v", key, old, new, err)
		}
		return ok
	}
	if cas("cas-missing", "1", "2") {
		t.Fatal("a missing row swapped")
	}
	if err := drv.Insert(ctx, "usertable", "cas1", map[string][]byte{"field0": []byte("1"), "field1": []byte("keep")}); err != nil {
		t.Fatal(err)
	}
	if cas("cas1", "0", "2") {
		t.Fatal("a wrong expected value swapped")
	}
	if !cas("cas1", "1", "2") {
		t.Fatal("the expected value did not swap")
	}
	rec, err := drv.Read(ctx, "usertable", "cas1", nil)
	if err != nil || string(rec["field0"]) != "2" || string(rec["field1"]) != "keep" {
		t.Fatalf("after the swap: %q, %v", rec, err)
	}
	if err := drv.Insert(ctx, "usertable", "cas2", map[string][]byte{"field0": []byte("0")}); err != nil {
		t.Fatal(err)
	}
	var swapped atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			ok, err := drv.CompareAndSet(ctx, "usertable", "cas2", "field0", []byte("0"), []byte(strconv.Itoa(i+1)))
			if err != nil {
				t.Error(err)
			}
			if ok {
				swapped.Add(1)
			}
		})
	}
	wg.Wait()
	if n := swapped.Load(); n != 1 {
		t.Fatalf("%d of 8 concurrent compare-and-sets from the same value swapped, want 1", n)
	}
}
