package sqldb

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/faultbench/faultbench/internal/launcher/postgresha"
	"github.com/faultbench/faultbench/internal/outcome"
)

// TestColumnAddedUnderLoad reads every field while other workers' updates
// add a column (the lost-writes tag): no read may fail because a statement
// was prepared before the column existed.
func TestColumnAddedUnderLoad(t *testing.T) {
	c := upOrSkip(t, postgresha.Launcher{}, 1)
	p := props("postgres.hosts", strings.Join(postgresha.Endpoints(c), ","), "fieldcount", "10", "threads", "16")
	d, err := NewPostgres(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	drv := d.(*Driver)
	defer drv.Close()
	ctx := context.Background()
	v := map[string][]byte{}
	for i := range 10 {
		v[fmt.Sprintf("field%d", i)] = []byte("x")
	}
	for i := range 50 {
		if err := drv.Insert(ctx, "usertable", fmt.Sprint("k", i), v); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 300 {
				k := fmt.Sprint("k", (i*7+w)%50)
				var err error
				if i%2 == 0 {
					_, err = drv.Read(ctx, "usertable", k, nil)
				} else {
					err = drv.Update(ctx, "usertable", k, map[string][]byte{"field3": []byte("y"), "fbtag": []byte(fmt.Sprint(i))})
				}
				if err != nil && outcome.ClassOf(err) == outcome.Other {
					mu.Lock()
					seen[err.Error()]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for e, n := range seen {
		t.Errorf("%d × %s", n, e)
	}
	rec, err := drv.Read(ctx, "usertable", "k1", nil)
	if err != nil || len(rec) != 11 || rec["fbtag"] == nil {
		t.Fatalf("read of every field after the column was added: %d fields, %v", len(rec), err)
	}
}
