package fault

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/launcher/etcd"
	"github.com/faultbench/faultbench/internal/netns"
)

// The test binary stands in for faultbench's netns-exec (see TestMain):
// execve from the main thread, as cmd/faultbench does.
func init() {
	if len(os.Args) > 1 && os.Args[1] == netns.ExecCommand {
		runtime.LockOSThread()
	}
}

// fiveNodes is a cluster of n1..n5 with n4 as leader, all up (pids of this
// test process, which runs).
func fiveNodes() *launcher.Cluster {
	c := &launcher.Cluster{Name: "c"}
	for i := 1; i <= 5; i++ {
		role := launcher.RoleFollower
		if i == 4 {
			role = launcher.RoleLeader
		}
		c.Nodes = append(c.Nodes, launcher.Node{Name: "n" + strconv.Itoa(i), PID: os.Getpid(), Role: role})
	}
	return c
}

func TestPartitionGroups(t *testing.T) {
	cases := []struct {
		arg    string
		groups string // groups joined by " | "
		oneWay bool
		err    string
	}{
		{arg: "leader", groups: "n4 | n1,n2,n3,n5"},
		{arg: "n2", groups: "n2 | n1,n3,n4,n5"},
		{arg: "halves", groups: "n1,n2,n3 | n4,n5"},
		{arg: "majority-minority", groups: "n1,n4 | n2,n3,n5"},
		{arg: "bridge", groups: "n1,n2 | n3 | n4,n5"},
		{arg: "n1,n2|n3,n4,n5", groups: "n1,n2 | n3,n4,n5"},
		{arg: "n1>n2,n3", groups: "n1 | n2,n3", oneWay: true},
		{arg: "oneway:leader", groups: "n4 | n1,n2,n3,n5", oneWay: true},
		{arg: "all", err: "one side is empty"},
		{arg: "n1,n2|n2,n3", err: "on both sides"},
		{arg: "n1|n2|n3", err: "exactly two groups"},
		{arg: "", err: "partition needs groups"},
		{arg: "oneway:bridge", err: "one direction is not defined"},
		{arg: "n9", err: "no such node"},
	}
	for _, tc := range cases {
		t.Run(tc.arg, func(t *testing.T) {
			f := &partitionFault{}
			_, err := f.resolveArg(fiveNodes(), NewResolver(nil), tc.arg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gs []string
			for _, g := range f.groups {
				gs = append(gs, joinNodes(g))
			}
			if got := strings.Join(gs, " | "); got != tc.groups || f.oneWay != tc.oneWay {
				t.Errorf("groups %q one-way %v, want %q %v", got, f.oneWay, tc.groups, tc.oneWay)
			}
			wantBlocks := 2
			if tc.oneWay {
				wantBlocks = 1
			}
			if len(f.blocks) != wantBlocks {
				t.Errorf("%d blocked directions, want %d", len(f.blocks), wantBlocks)
			}
		})
	}
}

func TestNetworkFaultArgs(t *testing.T) {
	reg := NewRegistry()
	cases := []struct {
		action Action
		arg    string
		err    string
	}{
		{ActionLoss, "n2 20%", ""},
		{ActionLoss, "n2 0.05", ""},
		{ActionLoss, "n2", "needs a node and a percentage"},
		{ActionLoss, "n2 0%", "more than 0"},
		{ActionLoss, "n2 150%", "at most 100%"},
		{ActionBandwidth, "leader 1mbit", ""},
		{ActionBandwidth, "n3 500kbps", ""},
		{ActionBandwidth, "n3 fast", "want a number with a unit"},
		{ActionBandwidth, "n3 1bit", "at least 8kbit"},
		{ActionDelay, "n1 200ms±20ms", ""},
		{ActionDelay, "n1", "needs a node and a duration"},
		{ActionDelay, "n1 20ms±50ms", "jitter"},
		{ActionHeal, "", ""},
		{ActionHeal, "all", ""},
		{ActionHeal, "n2", ""},
		{ActionPartition, "halves", ""},
		{ActionPartition, "n1,n2|n3", ""},
		{ActionPartition, "n1,|n3", "not a node name"},
	}
	for _, tc := range cases {
		t.Run(string(tc.action)+" "+tc.arg, func(t *testing.T) {
			f, err := reg.New(tc.action)
			if err != nil {
				t.Fatal(err)
			}
			err = f.(argFault).checkArg(tc.arg)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
	if r, _ := ParseRate("1mbit"); r != 125000 {
		t.Errorf("1mbit = %d bytes/s, want 125000", r)
	}
	if l, _ := ParseLoss("20%"); l != 0.2 {
		t.Errorf("20%% = %v, want 0.2", l)
	}
}

func TestScheduleValidatesNetworkArgs(t *testing.T) {
	ok := Schedule{
		{At: time.Second, Action: ActionPartition, Node: "n1,n2|n3"},
		{At: 2 * time.Second, Action: ActionLoss, Node: "n2 20%"},
		{At: 3 * time.Second, Action: ActionHeal, Node: "all"},
	}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid network schedule rejected: %v", err)
	}
	bad := Schedule{{At: time.Second, Action: ActionBandwidth, Node: "n3"}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "needs a node and a rate") {
		t.Errorf("bandwidth without a rate: %v", err)
	}
}

func TestNetworkFaultNeedsNamespaces(t *testing.T) {
	tg := &Cluster{Cluster: &launcher.Cluster{Kind: "etcd", Name: "c"}}
	f := &partitionFault{groups: [][]string{{"n1"}, {"n2"}}, blocks: []block{{from: []string{"n1"}, to: []string{"n2"}}}}
	err := f.Prepare(context.Background(), tg, nil)
	if err == nil || !strings.Contains(err.Error(), "--net") {
		t.Errorf("partition without namespaces: %v, want a hint at --net", err)
	}
}

// TestEtcdPartitionLeader starts a real 3-member etcd cluster with every
// member in its own network namespace, isolates the leader with Apply,
// checks by measurement that the old leader cannot reach the others while
// the client still reaches it, that the majority elects a new leader, and
// that heal removes every rule and restores reachability.
func TestEtcdPartitionLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real etcd processes in network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Skip("creates network namespaces: needs root")
	}
	ctx := context.Background()
	nw, err := netns.Create(ctx, t.TempDir(), "fault-test-"+strconv.Itoa(os.Getpid()), 3)
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
	if !strings.HasPrefix(c.Nodes[0].Addr, "198.18.") {
		t.Fatalf("member n1 at %s, want an address in 198.18.0.0/15", c.Nodes[0].Addr)
	}
	reg := NewRegistry()
	nodes, err := Apply(ctx, tg, reg, ActionPartition, "leader")
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 {
		t.Fatalf("partition acts on %v, want the leader only", nodes)
	}
	st, err := nw.State()
	if err != nil {
		t.Fatal(err)
	}
	holds := waitEvent(t, tg.Events, "partition holds", func(e event.Event) bool {
		return e.Kind == event.Note && strings.HasPrefix(e.Detail, "partition holds (measured)")
	})
	t.Logf("%s", holds.Detail)
	// the isolated node drops from both others
	old := nodes[0]
	for _, r := range st.Rules {
		if (r.Node == old) != (strings.Count(r.What, ",") == 1) {
			t.Errorf("rule %+v: only the isolated %s drops from two addresses", r, old)
		}
	}
	if len(st.Rules) != 3 {
		t.Fatalf("rules %+v: want one per member, the isolated one dropping from both others", st.Rules)
	}
	oldNode, _ := st.Node(old)
	for _, n := range c.Nodes {
		if n.Name == old {
			continue
		}
		if ok, _ := netns.Reach(ctx, oldNode.NS, n.PeerAddr, 300*time.Millisecond); ok {
			t.Errorf("isolated %s still reaches %s at %s", old, n.Name, n.PeerAddr)
		}
	}
	if err := launcher.WaitTCP(ctx, mustNode(t, tg, old).Addr); err != nil {
		t.Errorf("the client no longer reaches the isolated member: %v", err)
	}
	waitFor(t, "a new leader on the majority side", func() bool {
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
	})

	if _, err := Apply(ctx, tg, reg, ActionHeal, "all"); err != nil {
		t.Fatal(err)
	}
	if st, _ = nw.State(); len(st.Rules) != 0 {
		t.Errorf("rules left after heal: %+v", st.Rules)
	}
	for _, n := range c.Nodes {
		if n.Name != old {
			if ok, _ := netns.Reach(ctx, oldNode.NS, n.PeerAddr, time.Second); !ok {
				t.Errorf("%s does not reach %s after heal", old, n.Name)
			}
		}
	}
	if err := tg.WaitHealthy(ctx, "after heal"); err != nil {
		t.Error(err)
	}
}
