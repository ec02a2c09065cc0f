package netns

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// nsListing is what `nft list ruleset` and `tc qdisc show` print in every
// namespace of s, the listing a heal or cleanup must return to.
func nsListing(t *testing.T, s *State) string {
	t.Helper()
	var b strings.Builder
	for _, ns := range s.Namespaces {
		for _, argv := range [][]string{{"nft", "list", "ruleset"}, {"tc", "qdisc", "show"}} {
			out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, argv...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s in %s: %v\n%s", strings.Join(argv, " "), ns, err, out)
			}
			b.WriteString("== " + ns + ": " + strings.Join(argv, " ") + "\n" + string(out))
		}
	}
	return b.String()
}

// udpCounter counts the datagrams arriving on a UDP socket in ns at addr.
type udpCounter struct {
	n    atomic.Int64
	addr string
}

func countUDP(t *testing.T, ns, addr string) *udpCounter {
	t.Helper()
	var pc net.PacketConn
	if err := Do(ns, func() error {
		var err error
		pc, err = net.ListenPacket("udp4", addr)
		return err
	}); err != nil {
		t.Fatalf("udp in %s on %s: %v", ns, addr, err)
	}
	t.Cleanup(func() { pc.Close() })
	u := &udpCounter{addr: addr}
	go func() {
		buf := make([]byte, 64)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			u.n.Add(1)
		}
	}()
	return u
}

// sendUDP sends k datagrams from ns to u and returns how many arrived
// (waiting until no more come).
func sendUDP(t *testing.T, ns string, u *udpCounter, k int) int64 {
	t.Helper()
	before := u.n.Load()
	if err := Do(ns, func() error {
		c, err := net.Dial("udp4", u.addr)
		if err != nil {
			return err
		}
		defer c.Close()
		for i := 0; i < k; i++ {
			if _, err := c.Write([]byte("x")); err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	}); err != nil {
		t.Fatalf("sending from %s: %v", ns, err)
	}
	last, stable := int64(-1), 0
	for stable < 5 {
		time.Sleep(20 * time.Millisecond)
		if n := u.n.Load(); n == last {
			stable++
		} else {
			last, stable = n, 0
		}
	}
	return last - before
}

// TestGrayRules checks each gray rule on a 3-node network by measurement,
// each against a negative control (the same measurement without the rule),
// and that removing the rules returns every namespace's nft ruleset and
// qdiscs to what they were.
func TestGrayRules(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	nw, err := Create(ctx, t.TempDir(), "gray-"+strconv.Itoa(os.Getpid()), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nw.Destroy(context.Background()) })
	s, err := nw.State()
	if err != nil {
		t.Fatal(err)
	}
	n1, n2, n3 := s.Nodes[0], s.Nodes[1], s.Nodes[2]
	u := map[string]*udpCounter{}
	for _, n := range s.Nodes {
		u[n.Name] = countUDP(t, n.NS, net.JoinHostPort(n.IP, "7100"))
		listenIn(t, n.NS, net.JoinHostPort(n.IP, "7000"))
	}
	const k = 20
	clean := nsListing(t, s)
	healed := func(t *testing.T, owner string) {
		t.Helper()
		if _, err := nw.RemoveRules(owner); err != nil {
			t.Fatal(err)
		}
		if got := nsListing(t, s); got != clean {
			t.Errorf("after removing the rules the namespaces hold\n%s\nbefore\n%s", got, clean)
		}
	}
	// negative control: without rules everything arrives both ways, once
	for _, p := range [][2]Node{{n1, n2}, {n2, n1}} {
		if got := sendUDP(t, p[0].NS, u[p[1].Name], k); got != k {
			t.Fatalf("without rules %s -> %s: %d of %d datagrams arrived", p[0].Name, p[1].Name, got, k)
		}
	}

	t.Run("blackhole-send", func(t *testing.T) {
		if err := nw.AddBlackholeSend("n1", "bs", []string{n2.IP}); err != nil {
			t.Fatal(err)
		}
		if l := nsListing(t, s); !strings.Contains(l, "table netdev faultbench_bs") || !strings.Contains(l, "hook egress") {
			t.Errorf("no netdev egress table in the listing:\n%s", l)
		}
		if got := sendUDP(t, n1.NS, u["n2"], k); got != 0 {
			t.Errorf("n1 -> n2: %d datagrams arrived through blackhole-send", got)
		}
		if got := sendUDP(t, n2.NS, u["n1"], k); got != k {
			t.Errorf("n2 -> n1: %d of %d arrived; n1 must still receive", got, k)
		}
		if got := sendUDP(t, n1.NS, u["n3"], k); got != k {
			t.Errorf("n1 -> n3: %d of %d arrived; n3 is not a chosen peer", got, k)
		}
		// TCP: the SYN leaves n1 and vanishes, a timeout and not an error
		start := time.Now()
		ok, err := Reach(ctx, n1.NS, net.JoinHostPort(n2.IP, "7000"), 300*time.Millisecond)
		if ok || err != nil || time.Since(start) < 250*time.Millisecond {
			t.Errorf("connect n1 -> n2: reached %v, error %v after %v; want a silent timeout", ok, err, time.Since(start))
		}
		healed(t, "bs")
		if got := sendUDP(t, n1.NS, u["n2"], k); got != k {
			t.Errorf("n1 -> n2 after removal: %d of %d", got, k)
		}
	})
	t.Run("blackhole-recv", func(t *testing.T) {
		if err := nw.AddBlackholeRecv("n1", "br", []string{n2.IP, s.HostIP}); err != nil {
			t.Fatal(err)
		}
		if got := sendUDP(t, n2.NS, u["n1"], k); got != 0 {
			t.Errorf("n2 -> n1: %d arrived through blackhole-recv", got)
		}
		if got := sendUDP(t, n1.NS, u["n2"], k); got != k {
			t.Errorf("n1 -> n2: %d of %d arrived; n1 must still send", got, k)
		}
		if reachRoot(net.JoinHostPort(n1.IP, "7000")) {
			t.Error("the client reaches n1 although its address is blackholed")
		}
		healed(t, "br")
	})
	t.Run("duplicate", func(t *testing.T) {
		if err := nw.AddDuplicate("n1", "du", 1, []string{n2.IP}); err != nil {
			t.Fatal(err)
		}
		got := sendUDP(t, n1.NS, u["n2"], k)
		if got < 2*k {
			t.Errorf("n1 -> n2 at 100%% duplication: %d of %d sent arrived, want at least twice as many", got, k)
		}
		t.Logf("100%% duplication: %d datagrams sent, %d arrived", k, got)
		if got := sendUDP(t, n1.NS, u["n3"], k); got != k {
			t.Errorf("n1 -> n3: %d of %d; n3 is not a chosen peer", got, k)
		}
		healed(t, "du")
		if got := sendUDP(t, n1.NS, u["n2"], k); got != k {
			t.Errorf("n1 -> n2 after removal: %d of %d", got, k)
		}
	})
	t.Run("tcp-reset", func(t *testing.T) {
		// n3 holds the connections it accepts open
		var l net.Listener
		if err := Do(n3.NS, func() error {
			var err error
			l, err = net.Listen("tcp4", net.JoinHostPort(n3.IP, "7200"))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		accepted := make(chan net.Conn, 4)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				accepted <- c
			}
		}()
		dial := func() net.Conn {
			var c net.Conn
			if err := Do(n1.NS, func() error {
				var err error
				c, err = net.DialTimeout("tcp4", net.JoinHostPort(n3.IP, "7200"), time.Second)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return c
		}
		// negative control: a connection nobody resets stays open
		c0 := dial()
		s0 := <-accepted
		_ = s0.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := s0.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("an untouched connection: read %v, want a timeout", err)
		}
		conns, err := nw.TCPConns("n1", []string{n3.IP})
		if err != nil || len(conns) != 1 {
			t.Fatalf("n1's connections to n3: %v, %v", conns, err)
		}
		reset, err := nw.ResetTCP(ctx, "n1", []string{n3.IP})
		if err != nil || len(reset) != 1 {
			t.Fatalf("ResetTCP: %v reset, %v", reset, err)
		}
		_ = s0.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := s0.Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), "reset") {
			t.Errorf("n3's end after the reset: read %v, want connection reset by peer", err)
		}
		if _, err := c0.Write([]byte("x")); err == nil {
			t.Error("n1's end still writes after the reset")
		}
		c0.Close()
		s0.Close()
		if conns, _ := nw.TCPConns("n1", []string{n3.IP}); len(conns) != 0 {
			t.Errorf("connections left after the reset: %v", conns)
		}
		if got := nsListing(t, s); got != clean {
			t.Errorf("tcp-reset left something behind:\n%s", got)
		}
	})
	t.Run("netem", func(t *testing.T) {
		f := Netem()
		t.Logf("netem: have %v: %s", f.Have, f.Why)
		if f.Have {
			if err := nw.AddNetem("n1", "ne", NetemSpec{Corrupt: 0.05}); err != nil {
				t.Fatal(err)
			}
			healed(t, "ne")
			return
		}
		err := nw.AddNetem("n1", "ne", NetemSpec{Corrupt: 0.05})
		if err == nil || !strings.Contains(err.Error(), f.Why) {
			t.Errorf("netem without the qdisc: %v, want the reason %q", err, f.Why)
		}
		if st, _ := nw.State(); len(st.Rules) != 0 {
			t.Errorf("a refused netem left rules recorded: %+v", st.Rules)
		}
	})
}
