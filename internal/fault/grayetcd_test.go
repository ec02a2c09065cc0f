package fault

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/launcher/etcd"
	"github.com/faultbench/faultbench/internal/netns"
)

// etcdInNamespaces starts a real 3-member etcd cluster with every member in
// its own network namespace, both removed when the test ends.
func etcdInNamespaces(t *testing.T) (*Cluster, *netns.Network) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real etcd processes in network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Skip("creates network namespaces: needs root")
	}
	ctx := context.Background()
	nw, err := netns.Create(ctx, t.TempDir(), "gray-test-"+strconv.Itoa(os.Getpid()), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := nw.Destroy(context.Background()); err != nil {
			t.Errorf("Destroy: %v", err)
		}
	})
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	if env.Addrs, err = nw.Addresser(env.Self); err != nil {
		t.Fatal(err)
	}
	uctx, ucancel := context.WithTimeout(ctx, 90*time.Second)
	defer ucancel()
	c, err := etcd.Launcher{}.Up(uctx, env, launcher.Spec{Nodes: 3, Dir: filepath.Join(t.TempDir(), "etcd")})
	if err != nil {
		t.Fatalf("etcd Up: %v", err)
	}
	c.Options[netns.OptNetState] = nw.Path()
	tg := &Cluster{Launcher: etcd.Launcher{}, Env: env, Cluster: c, Events: event.NewMemory(time.Now()), HealthTimeout: 60 * time.Second}
	t.Cleanup(func() {
		if err := launcher.Down(context.Background(), tg.Snapshot(), 5*time.Second); err != nil {
			t.Errorf("Down: %v", err)
		}
	})
	return tg, nw
}

// listing is `nft list ruleset` and `tc qdisc show` in every namespace of
// the network.
func listing(t *testing.T, nw *netns.Network) string {
	t.Helper()
	st, err := nw.State()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, ns := range st.Namespaces {
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

// udpArrives reports whether datagrams sent from namespace fromNS arrive at
// a UDP socket opened for the test at toIP in namespace toNS.
func udpArrives(t *testing.T, fromNS, toNS, toIP string) bool {
	t.Helper()
	var pc net.PacketConn
	if err := netns.Do(toNS, func() error {
		var err error
		pc, err = net.ListenPacket("udp4", net.JoinHostPort(toIP, "0"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if err := netns.Do(fromNS, func() error {
		c, err := net.Dial("udp4", pc.LocalAddr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		for i := 0; i < 5; i++ {
			_, _ = c.Write([]byte("x"))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_ = pc.SetReadDeadline(time.Now().Add(time.Second))
	_, _, err := pc.ReadFrom(make([]byte, 8))
	return err == nil
}

func leaderOtherThan(ctx context.Context, tg *Cluster, old string) func() bool {
	return func() bool {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		cp, err := tg.Refresh(rctx)
		if err != nil {
			return false
		}
		for _, l := range cp.WithRole(launcher.RoleLeader) {
			if l != old {
				return true
			}
		}
		return false
	}
}

// TestEtcdBlackholeSendLeader: with what the leader sends dropped, the
// followers elect a new leader while the old leader still receives (a
// follower's datagrams arrive there, its own do not arrive at the
// follower) and the client still reaches it; heal returns every
// namespace's ruleset and qdiscs to what they were, and the cluster is
// healthy again. Then tcp-reset aborts a member's peer connections (each
// connection it had is gone, the database reconnects on new ones), against
// the control that without it the same connections stay.
func TestEtcdBlackholeSendLeader(t *testing.T) {
	tg, nw := etcdInNamespaces(t)
	ctx := context.Background()
	reg := NewRegistry()
	clean := listing(t, nw)
	nodes, err := Apply(ctx, tg, reg, ActionBlackholeSend, "leader")
	if err != nil {
		t.Fatal(err)
	}
	old := nodes[0]
	st, _ := nw.State()
	oldNode, _ := st.Node(old)
	var follower netns.Node
	for _, n := range st.Nodes {
		if n.Name != old && !strings.HasPrefix(n.Name, "spare") {
			follower = n
			break
		}
	}
	if len(st.Rules) != 1 || st.Rules[0].Node != old || st.Rules[0].Kind != netns.RuleNFNetdev {
		t.Fatalf("rules %+v: want one netdev table on the leader %s", st.Rules, old)
	}
	waitFor(t, "a new leader among the followers", leaderOtherThan(ctx, tg, old))
	if !udpArrives(t, follower.NS, oldNode.NS, oldNode.IP) {
		t.Errorf("the old leader %s no longer receives from %s", old, follower.Name)
	}
	if udpArrives(t, oldNode.NS, follower.NS, follower.IP) {
		t.Errorf("what the old leader %s sends still arrives at %s", old, follower.Name)
	}
	if err := launcher.WaitTCP(ctx, mustNode(t, tg, old).Addr); err != nil {
		t.Errorf("the client no longer reaches the old leader: %v", err)
	}
	if _, err := Apply(ctx, tg, reg, ActionHeal, "all"); err != nil {
		t.Fatal(err)
	}
	if got := listing(t, nw); got != clean {
		t.Errorf("after heal the namespaces hold\n%s\nbefore the fault\n%s", got, clean)
	}
	if !udpArrives(t, oldNode.NS, follower.NS, follower.IP) {
		t.Errorf("after heal %s's datagrams do not arrive at %s", old, follower.Name)
	}
	if err := tg.WaitHealthy(ctx, "after heal"); err != nil {
		t.Fatal(err)
	}

	// tcp-reset: the connections a member has to its peers
	var peers []string
	for _, n := range st.Nodes {
		if n.Name != follower.Name && !strings.HasPrefix(n.Name, "spare") {
			peers = append(peers, n.IP)
		}
	}
	conns := func() map[netns.Conn]bool {
		cs, err := nw.TCPConns(follower.Name, peers)
		if err != nil {
			t.Fatal(err)
		}
		out := map[netns.Conn]bool{}
		for _, c := range cs {
			out[c] = true
		}
		return out
	}
	before := conns()
	if len(before) == 0 {
		t.Fatalf("%s has no connections to its peers", follower.Name)
	}
	// control: without a reset the same connections are still there a
	// second later (etcd's peer streams are long-lived)
	time.Sleep(time.Second)
	kept := 0
	for c := range conns() {
		if before[c] {
			kept++
		}
	}
	if kept == 0 {
		t.Fatalf("control: none of %s's %d peer connections lasted a second without a reset", follower.Name, len(before))
	}
	before = conns()
	if _, err := Apply(ctx, tg, reg, ActionTCPReset, follower.Name); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, tg.Events, "tcp-reset note", func(e event.Event) bool {
		return e.Kind == event.Note && strings.HasPrefix(e.Detail, "tcp-reset towards") && !strings.Contains(e.Detail, ": 0 connections")
	})
	for c := range conns() {
		if before[c] {
			t.Errorf("connection %s -> %s survived tcp-reset", c.Local, c.Remote)
		}
	}
	if got := listing(t, nw); got != clean {
		t.Errorf("tcp-reset left rules behind:\n%s", got)
	}
	if err := tg.WaitHealthy(ctx, "after tcp-reset"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "new peer connections", func() bool { return len(conns()) > 0 })
}

// TestEtcdPartialPartitionPairs cuts n1 and n2 off from each other with
// n3 reaching both: measured (WaitEffective's probes), the cluster keeps a
// leader (n3 can lead both), and heal removes every rule.
func TestEtcdPartialPartitionPairs(t *testing.T) {
	tg, nw := etcdInNamespaces(t)
	ctx := context.Background()
	reg := NewRegistry()
	clean := listing(t, nw)
	nodes, err := Apply(ctx, tg, reg, ActionPartialPartition, "[[n1,n2]]")
	if err != nil {
		t.Fatal(err)
	}
	if joinNodes(nodes) != "n1,n2" {
		t.Errorf("acts on %v, want n1,n2", nodes)
	}
	st, _ := nw.State()
	n1, _ := st.Node("n1")
	n2, _ := st.Node("n2")
	n3, _ := st.Node("n3")
	if udpArrives(t, n1.NS, n2.NS, n2.IP) || udpArrives(t, n2.NS, n1.NS, n1.IP) {
		t.Error("n1 and n2 still hear each other")
	}
	if !udpArrives(t, n3.NS, n1.NS, n1.IP) || !udpArrives(t, n2.NS, n3.NS, n3.IP) {
		t.Error("n3 no longer bridges n1 and n2")
	}
	waitFor(t, "a leader", func() bool {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		cp, err := tg.Refresh(rctx)
		return err == nil && len(cp.WithRole(launcher.RoleLeader)) > 0
	})
	if _, err := Apply(ctx, tg, reg, ActionHeal, "all"); err != nil {
		t.Fatal(err)
	}
	if got := listing(t, nw); got != clean {
		t.Errorf("after heal the namespaces hold\n%s\nbefore\n%s", got, clean)
	}
	if !udpArrives(t, n1.NS, n2.NS, n2.IP) {
		t.Error("n1 does not reach n2 after heal")
	}
}
