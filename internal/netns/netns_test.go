package netns

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

// needRoot skips tests that create namespaces unless run as root and not
// under -short.
func needRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("creates network namespaces: skipped under -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("creates network namespaces: needs root (run the tests as root)")
	}
}

// listenIn starts a TCP listener inside namespace ns on addr that accepts
// and closes connections until the test ends.
func listenIn(t *testing.T, ns, addr string) {
	t.Helper()
	var l net.Listener
	if err := Do(ns, func() error {
		var err error
		l, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Fatalf("listen in %s on %s: %v", ns, addr, err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

func reach(t *testing.T, ns, addr string) bool {
	t.Helper()
	ok, err := Reach(context.Background(), ns, addr, 500*time.Millisecond)
	if err != nil {
		t.Fatalf("reach %s from %s: %v", addr, ns, err)
	}
	return ok
}

// reachRoot dials addr from the root namespace.
func reachRoot(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func TestNetworkLifecycle(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	dir := t.TempDir()
	nw, err := Create(ctx, dir, "test-"+strconv.Itoa(os.Getpid()), 3)
	if err != nil {
		t.Fatal(err)
	}
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			_ = nw.Destroy(context.Background())
		}
	})
	s, err := nw.State()
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range s.Namespaces {
		if !nsExists(ns) {
			t.Errorf("namespace %s does not exist after Create", ns)
		}
	}
	addr := func(i int) string { return net.JoinHostPort(s.Nodes[i].IP, "7000") }
	for i, n := range s.Nodes {
		listenIn(t, n.NS, addr(i))
	}

	t.Run("all reach all", func(t *testing.T) {
		for i := range s.Nodes {
			if !reachRoot(addr(i)) {
				t.Errorf("root namespace cannot reach %s", addr(i))
			}
			for j := range s.Nodes {
				if i != j && !reach(t, s.Nodes[i].NS, addr(j)) {
					t.Errorf("%s cannot reach %s", s.Nodes[i].Name, addr(j))
				}
			}
		}
	})
	t.Run("drop one direction", func(t *testing.T) {
		if err := nw.AddDrop("n2", "t1", []string{s.Nodes[0].IP}); err != nil {
			t.Fatal(err)
		}
		if reach(t, s.Nodes[0].NS, addr(1)) {
			t.Error("n1 still reaches n2 with n2 dropping from n1")
		}
		if !reach(t, s.Nodes[2].NS, addr(1)) {
			t.Error("n3 no longer reaches n2")
		}
		if !reachRoot(addr(1)) {
			t.Error("the root namespace no longer reaches n2")
		}
		st, _ := nw.State()
		if len(st.Rules) != 1 || st.Rules[0].Owner != "t1" {
			t.Errorf("recorded rules %+v, want one of owner t1", st.Rules)
		}
		removed, err := nw.RemoveRules("t1")
		if err != nil || len(removed) != 1 {
			t.Fatalf("RemoveRules: %v, removed %d", err, len(removed))
		}
		if !reach(t, s.Nodes[0].NS, addr(1)) {
			t.Error("n1 does not reach n2 after the rule was removed")
		}
	})
	t.Run("full loss", func(t *testing.T) {
		if err := nw.AddLoss("n3", "t2", 1); err != nil {
			t.Fatal(err)
		}
		if reach(t, s.Nodes[0].NS, addr(2)) {
			t.Error("n1 reaches n3 at 100 % loss")
		}
		if _, err := nw.RemoveRules(""); err != nil {
			t.Fatal(err)
		}
		if !reach(t, s.Nodes[0].NS, addr(2)) {
			t.Error("n1 does not reach n3 after heal")
		}
	})
	t.Run("bandwidth", func(t *testing.T) {
		if err := nw.AddBandwidth("n1", "t3", 125000); err != nil {
			t.Fatal(err)
		}
		if err := nw.AddBandwidth("n1", "t4", 125000); err == nil {
			t.Error("a second bandwidth limit on n1 was accepted")
		}
		h, err := handleIn(s.Nodes[0].NS)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		l, _ := h.LinkByName(NodeLinkName)
		qs, _ := h.QdiscList(l)
		found := false
		for _, q := range qs {
			if tb, ok := q.(*netlink.Tbf); ok && tb.Rate == 125000 {
				found = true
			}
		}
		if !found {
			t.Errorf("no tbf at 125000 bytes/s on n1's eth0: %v", qs)
		}
		if _, err := nw.RemoveRules("t3"); err != nil {
			t.Fatal(err)
		}
		qs, _ = h.QdiscList(l)
		for _, q := range qs {
			if q.Type() == "tbf" {
				t.Errorf("tbf left after removal: %v", q)
			}
		}
	})

	if err := nw.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	destroyed = true
	for _, ns := range s.Namespaces {
		if nsExists(ns) {
			t.Errorf("namespace %s left after Destroy", ns)
		}
	}
	if _, err := netlink.LinkByName(s.HostLink); err == nil {
		t.Errorf("root link %s left after Destroy", s.HostLink)
	}
	if _, err := os.Stat(nw.Path()); !os.IsNotExist(err) {
		t.Errorf("state file %s left after Destroy", nw.Path())
	}
}

func TestPlanNames(t *testing.T) {
	s := plan("etcd", "abcde", 257, MaxNodes)
	if s.Subnet != "198.19.1.0/24" || s.HostIP != "198.19.1.1" {
		t.Errorf("subnet %s host %s, want 198.19.1.0/24 and 198.19.1.1", s.Subnet, s.HostIP)
	}
	if s.Nodes[0].IP != "198.19.1.11" {
		t.Errorf("n1 at %s, want 198.19.1.11", s.Nodes[0].IP)
	}
	for _, l := range s.Links {
		if len(l.Name) > 15 {
			t.Errorf("link name %q longer than 15 bytes", l.Name)
		}
	}
	if k, ok := subnetNumber(s.Subnet); !ok || k != 257 {
		t.Errorf("subnetNumber(%s) = %d, %v", s.Subnet, k, ok)
	}
	if got := StatePath("/x", "c"); got != filepath.Join("/x", "netns", "c.json") {
		t.Errorf("StatePath = %s", got)
	}
}

func TestNotRootMessage(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("runs as root: the not-root message cannot show")
	}
	_, err := Create(context.Background(), t.TempDir(), "x", 1)
	if err != ErrNotRoot {
		t.Fatalf("Create as non-root: %v, want ErrNotRoot", err)
	}
}
