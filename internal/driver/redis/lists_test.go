package redis

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	rlaunch "github.com/faultbench/faultbench/internal/launcher/redis"
)

// listRoundTrip appends n values to each of keys and reads every list
// back in order; a key never written reads as an empty list.
func listRoundTrip(t *testing.T, d *Driver, keys []string, n int) {
	t.Helper()
	ctx := opCtx(t, 30*time.Second)
	for i := range n {
		for _, k := range keys {
			if err := d.ListAppend(ctx, k, []byte(strconv.Itoa(i))); err != nil {
				t.Fatalf("ListAppend %s %d: %v", k, i, err)
			}
		}
	}
	for _, k := range keys {
		got, err := d.ListRead(ctx, k)
		if err != nil {
			t.Fatalf("ListRead %s: %v", k, err)
		}
		var b strings.Builder
		for _, e := range got {
			b.Write(e)
			b.WriteByte(',')
		}
		var want strings.Builder
		for i := range n {
			fmt.Fprintf(&want, "%d,", i)
		}
		if b.String() != want.String() {
			t.Fatalf("list %s = %s, want %s", k, b.String(), want.String())
		}
	}
	if got, err := d.ListRead(ctx, "never-written"); err != nil || len(got) != 0 {
		t.Fatalf("a missing list reads %q, %v; want empty", got, err)
	}
}

// TestLists: the list ability (RPUSH, LRANGE) on a standalone primary with
// WAIT for its replica, and on a Redis Cluster with lists on every master.
func TestLists(t *testing.T) {
	needRedis(t)
	t.Run("standalone with wait", func(t *testing.T) {
		_, c := launch(t, rlaunch.StandaloneLauncher{}, launcher.Spec{Name: "drv-redis-lists", Nodes: 1, Replicas: 1})
		d := open(t, PropAddr, c.Nodes[0].Addr, PropWait, "1")
		listRoundTrip(t, d, []string{"la", "lb"}, 20)
	})
	t.Run("cluster", func(t *testing.T) {
		_, c := launch(t, rlaunch.ClusterLauncher{}, launcher.Spec{Name: "drv-redis-cl-lists", Nodes: 3, Replicas: 0})
		d := open(t, PropAddr, c.Nodes[0].Addr, PropMode, ModeCluster)
		keys := make([]string, 12)
		for i := range keys {
			keys[i] = "list" + strconv.Itoa(i)
		}
		listRoundTrip(t, d, keys, 10)
	})
}
