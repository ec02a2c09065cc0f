package fault

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/launcher"
)

// TestRandomOfDraw: random-of draws one up node of the named roles or
// names; the same seed draws the same node, different seeds spread over
// every candidate, and down nodes and other roles are never drawn.
func TestRandomOfDraw(t *testing.T) {
	et, _ := fakeTarget(t, etcdRoles())              // n2 leader, n1 n3 followers
	rt, _ := fakeTarget(t, redisRoles(), "n1", "n5") // n1, n5 down
	for _, tc := range []struct {
		name string
		tgt  *Cluster
		sel  string
		want []string // every node the draws may give, all of them drawn
	}{
		{"followers", et, "random-of(followers)", []string{"n1", "n3"}},
		{"singular role", et, "random-of(follower)", []string{"n1", "n3"}},
		{"names", et, "random-of(n2,n3)", []string{"n2", "n3"}},
		{"role and name", et, "random-of(leader, n1)", []string{"n1", "n2"}},
		{"only up primaries", rt, "random-of(primaries)", []string{"n2", "n3"}},
		{"only up names", rt, "random-of(n1,n4,n5,n6)", []string{"n4", "n6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.tgt.Snapshot()
			draw := func(seed uint64) string {
				got, err := NewDrawResolver(rand.New(rand.NewPCG(seed, 1))).Resolve(c, tc.sel)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 1 {
					t.Fatalf("%s gave %v, want one node", tc.sel, got)
				}
				return got[0]
			}
			seen := map[string]bool{}
			for seed := range uint64(64) {
				a, b := draw(seed), draw(seed)
				if a != b {
					t.Fatalf("seed %d drew %s then %s", seed, a, b)
				}
				seen[a] = true
			}
			for n := range seen {
				if !strings.Contains(","+strings.Join(tc.want, ",")+",", ","+n+",") {
					t.Errorf("drew %s, allowed %v", n, tc.want)
				}
			}
			if len(seen) != len(tc.want) {
				t.Errorf("64 seeds drew %v, want every one of %v", seen, tc.want)
			}
		})
	}
}

func TestRandomOfBadInput(t *testing.T) {
	et, _ := fakeTarget(t, etcdRoles(), "n1", "n3")
	for _, tc := range []struct {
		name, sel, msg string
	}{
		{"empty", "random-of()", "random-of takes roles"},
		{"unclosed", "random-of(n1", "roles or node names"},
		{"nested keyword", "random-of(any:2)", "random-of takes roles"},
		{"no such node", "random-of(n9)", "no such node"},
		{"none up", "random-of(followers)", "none of these nodes is up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewDrawResolver(rand.New(rand.NewPCG(1, 1))).Resolve(et.Snapshot(), tc.sel)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err %v, want one saying %q", err, tc.msg)
			}
		})
	}
	plan := &launcher.Cluster{Name: "etcd", Nodes: []launcher.Node{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}}}
	err := Schedule{{Action: ActionKill, Node: "random-of(n1,n9)"}}.ValidateFor(NewRegistry(), plan)
	if err == nil || !strings.Contains(err.Error(), `"n9"`) {
		t.Fatalf("schedule naming n9 of 3 nodes in random-of: %v", err)
	}
	if err := (Schedule{{Action: ActionKill, Node: "random-of(followers)"}}).ValidateFor(NewRegistry(), plan); err != nil {
		t.Fatalf("random-of(followers): %v", err)
	}
}
