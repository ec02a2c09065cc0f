package fault

import (
	"context"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/netns"
)

// nodesN is a cluster of n1..nN with the given roles by name (the others
// followers), all up.
func nodesN(n int, roles map[string]string) *launcher.Cluster {
	c := &launcher.Cluster{Name: "c"}
	for i := 1; i <= n; i++ {
		name := "n" + strconv.Itoa(i)
		role := roles[name]
		if role == "" {
			role = launcher.RoleFollower
		}
		c.Nodes = append(c.Nodes, launcher.Node{Name: name, PID: os.Getpid(), Role: role})
	}
	return c
}

// dropsText renders receiver <- senders, sorted: "n1<n2,n3 n2<n1".
func dropsText(d map[string][]string) string {
	var out []string
	for _, to := range sortedKeys(d) {
		from := append([]string(nil), d[to]...)
		sortNames(from)
		out = append(out, to+"<"+strings.Join(from, ","))
	}
	return strings.Join(out, " ")
}

// TestPartialPartitionShapes pins every shape's drops (receiver <-
// senders it does not hear) on 3 and 5 nodes, and the refusals.
func TestPartialPartitionShapes(t *testing.T) {
	leader3 := map[string]string{"n2": launcher.RoleLeader}
	leader5 := map[string]string{"n4": launcher.RoleLeader}
	prim := map[string]string{"n1": launcher.RolePrimary, "n3": launcher.RolePrimary, "n2": launcher.RoleReplica, "n4": launcher.RoleReplica}
	cases := []struct {
		name  string
		c     *launcher.Cluster
		arg   string
		drops string
		err   string
	}{
		{"pairs", nodesN(3, nil), "[[n1,n2],[n2,n3]]", "n1<n2 n2<n1,n3 n3<n2", ""},
		{"pairs spaced", nodesN(3, nil), "[[n1, n3]]", "n1<n3 n3<n1", ""},
		{"majority 3 holds the leader", nodesN(3, leader3), "majority", "n1<n2 n2<n1,n3 n3<n2", ""},
		{"majority 5", nodesN(5, leader5), "majority", "n1<n2,n3,n5 n2<n1,n4 n3<n1,n4 n4<n2,n3,n5 n5<n1,n4", ""},
		{"minority-third 5", nodesN(5, leader5), "minority-third", "n1<n4 n2<n4 n3<n4 n4<n1,n2,n3,n5 n5<n4", ""},
		{"minority-third 3", nodesN(3, nil), "minority-third", "", "at least 4 nodes"},
		{"bridge 5", nodesN(5, nil), "bridge", "n1<n4,n5 n2<n4,n5 n4<n1,n2 n5<n1,n2", ""},
		{"bridge 3", nodesN(3, nil), "bridge", "n1<n3 n3<n1", ""},
		// 3 nodes: majority 2, each hears itself and its left neighbour
		{"majorities-ring 3", nodesN(3, nil), "majorities-ring", "n1<n2 n2<n3 n3<n1", ""},
		// 5 nodes: majority 3, each hears its two neighbours: symmetric
		{"majorities-ring 5", nodesN(5, nil), "majorities-ring", "n1<n3,n4 n2<n4,n5 n3<n1,n5 n4<n1,n2 n5<n2,n3", ""},
		{"primaries", nodesN(4, prim), "primaries", "n1<n2,n3,n4 n2<n1,n3 n3<n1,n2,n4 n4<n1,n3", ""},
		{"primaries etcd", nodesN(3, leader3), "primaries", "n1<n2 n2<n1,n3 n3<n2", ""},
		{"primaries none", nodesN(3, nil), "primaries", "", "no node has role leader or primary"},
		{"unknown node", nodesN(3, nil), "[[n1,n9]]", "", "n9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &partialPartitionFault{}
			if err := f.checkArg(tc.arg); err != nil {
				t.Fatalf("checkArg: %v", err)
			}
			_, err := f.resolveArg(tc.c, NewResolver(nil), tc.arg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := dropsText(f.drops); got != tc.drops {
				t.Errorf("drops %q, want %q (%s)", got, tc.drops, f.desc)
			}
		})
	}
}

// TestMajoritiesRingSeesMajority checks the shape's promise for 3..9
// nodes: every node hears a majority (itself included), and no two nodes
// hear the same set.
func TestMajoritiesRingSeesMajority(t *testing.T) {
	for n := 3; n <= 9; n++ {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			f := &partialPartitionFault{}
			c := nodesN(n, nil)
			if _, err := f.resolveArg(c, NewResolver(nil), "majorities-ring"); err != nil {
				t.Fatal(err)
			}
			seen := map[string]string{}
			for _, nd := range c.Nodes {
				heard := n - len(f.drops[nd.Name])
				if heard != n/2+1 {
					t.Errorf("%s hears %d of %d nodes, want a bare majority %d", nd.Name, heard, n, n/2+1)
				}
				d := append([]string(nil), f.drops[nd.Name]...)
				sort.Strings(d)
				key := strings.Join(d, ",")
				if o, ok := seen[key]; ok {
					t.Errorf("%s and %s hear the same nodes", o, nd.Name)
				}
				seen[key] = nd.Name
			}
		})
	}
}

func TestGrayArgs(t *testing.T) {
	reg := NewRegistry()
	cases := []struct {
		action Action
		arg    string
		err    string
	}{
		{ActionPartialPartition, "majorities-ring", ""},
		{ActionPartialPartition, "[[n1,n2],[n2,n3]]", ""},
		{ActionPartialPartition, "[[n1,n1]]", "one node twice"},
		{ActionPartialPartition, "[[n1,n2,n3]]", "two node names"},
		{ActionPartialPartition, "ring", "want a shape"},
		{ActionBlackholeSend, "leader", ""},
		{ActionBlackholeRecv, "n1,n2", ""},
		{ActionTCPReset, "", "empty node selector"},
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
	// parameters through the kinds' declarations
	for _, tc := range []struct {
		st  Step
		err string
	}{
		{Step{Action: ActionBlackholeSend, Node: "leader", Params: map[string]string{"peers": "n2,n3", "client": "true"}}, ""},
		{Step{Action: ActionBlackholeSend, Node: "leader", Params: map[string]string{"peers": "n2; rm"}}, "want a node selector"},
		{Step{Action: ActionDuplicate, Node: "n1", Params: map[string]string{"percent": "0"}}, "allowed 1..100"},
		{Step{Action: ActionReorder, Node: "n1", Params: map[string]string{"delay": "1h"}}, "allowed more than 0"},
		{Step{Action: ActionTCPReset, Node: "n1", Params: map[string]string{"percent": "5"}}, "not of tcp-reset"},
	} {
		_, perrs := reg.CheckParams(tc.st)
		var msgs []string
		for _, e := range perrs {
			msgs = append(msgs, e.Error())
		}
		got := strings.Join(msgs, "; ")
		if (tc.err == "") != (got == "") || !strings.Contains(got, tc.err) {
			t.Errorf("%s %v: errors %q, want %q", tc.st.Action, tc.st.Params, got, tc.err)
		}
	}
}

// TestCheckGray: what cannot work is refused before a run, with why.
func TestCheckGray(t *testing.T) {
	net := map[string]string{netns.OptNet: netns.NetNamespaces}
	step := func(a Action, node string) Schedule { return Schedule{{At: time.Second, Action: a, Node: node}} }
	if err := CheckGray(step(ActionBlackholeSend, "leader"), nil, SelectLeader); err == nil || !strings.Contains(err.Error(), "net: netns") {
		t.Errorf("blackhole-send without namespaces: %v", err)
	}
	err := CheckGray(step(ActionPartialPartition, "primaries"), net, SelectRandom)
	if err == nil || !strings.Contains(err.Error(), "no such role") {
		t.Errorf("primaries on a target without primaries: %v", err)
	}
	if os.Geteuid() == 0 {
		if err := CheckGray(step(ActionPartialPartition, "primaries"), net, SelectPrimary); err != nil {
			t.Errorf("primaries on a target with primaries: %v", err)
		}
		if err := CheckGray(step(ActionKill, "n1"), nil, SelectRandom); err != nil {
			t.Errorf("a kill is not CheckGray's: %v", err)
		}
	} else if err := CheckGray(step(ActionTCPReset, "n1"), net, SelectLeader); err == nil || !strings.Contains(err.Error(), "needs root") {
		t.Errorf("tcp-reset without root: %v", err)
	}
	nf := netns.Netem()
	err = CheckGray(step(ActionReorder, "n1"), net, SelectLeader)
	if nf.Have {
		t.Logf("this kernel has netem (%s): reorder is accepted", nf.Why)
		return
	}
	if err == nil || !strings.Contains(err.Error(), "netem") || !strings.Contains(err.Error(), nf.Why) {
		t.Errorf("reorder without netem: %v, want the reason %q", err, nf.Why)
	}
}

// TestGrayPrepareRefuses: a gray fault fired outside a scenario (faultbench
// fault) refuses in Prepare, before anything is changed: without root,
// and without network namespaces.
func TestGrayPrepareRefuses(t *testing.T) {
	tg := &Cluster{Cluster: &launcher.Cluster{Kind: "etcd", Name: "c", Nodes: nodesN(3, nil).Nodes}}
	want := "--net"
	if os.Geteuid() != 0 {
		want = "needs root"
	}
	for _, a := range []Action{ActionBlackholeSend, ActionPartialPartition, ActionTCPReset} {
		f, _ := NewRegistry().New(a)
		if err := f.Prepare(context.Background(), tg, []string{"n1"}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Prepare %v, want %q", a, err, want)
		}
	}
}
