package etcd_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCompareAndSet: the compare-and-set ability on a real 3-member etcd
// cluster: a missing record and a wrong expected value do not swap, the
// right one does, a record with other fields is compared by the field
// and keeps the others, and of concurrent compare-and-sets from the same
// value exactly one swaps.
func TestCompareAndSet(t *testing.T) {
	c, _ := cluster(t)
	d := newDriver(t, c)
	ctx := opCtx(t, 30*time.Second)
	cas := func(key, old, new string) bool {
		t.Helper()
		ok, err := d.CompareAndSet(ctx, "usertable", key, "field0", []byte(old), []byte(new))
		if err != nil {
			t.Fatalf("cas %s %s -> %s: %v", key, old, new, err)
		}
		return ok
	}
	read := func(key string) map[string][]byte {
		t.Helper()
		r, err := d.Read(ctx, "usertable", key, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if cas("r1", "1", "2") {
		t.Fatal("a missing record swapped")
	}
	if err := d.Update(ctx, "usertable", "r1", rec("field0", "1")); err != nil {
		t.Fatal(err)
	}
	if cas("r1", "0", "2") {
		t.Fatal("a wrong expected value swapped")
	}
	if !cas("r1", "1", "2") || !sameRec(read("r1"), rec("field0", "2")) {
		t.Fatalf("the expected value did not swap: %v", read("r1"))
	}
	if err := d.Insert(ctx, "usertable", "r2", rec("field0", "a", "field1", "keep")); err != nil {
		t.Fatal(err)
	}
	if cas("r2", "b", "c") || !cas("r2", "a", "c") || !sameRec(read("r2"), rec("field0", "c", "field1", "keep")) {
		t.Fatalf("a record with other fields: %v", read("r2"))
	}

	if err := d.Update(ctx, "usertable", "r3", rec("field0", "0")); err != nil {
		t.Fatal(err)
	}
	var swapped atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			ok, err := d.CompareAndSet(ctx, "usertable", "r3", "field0", []byte("0"), []byte(strconv.Itoa(i+1)))
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
