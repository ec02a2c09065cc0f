package fault

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/launcher"
)

func etcdRoles() map[string]string {
	return map[string]string{"n1": launcher.RoleFollower, "n2": launcher.RoleLeader, "n3": launcher.RoleFollower}
}

func redisRoles() map[string]string {
	return map[string]string{
		"n1": launcher.RolePrimary, "n2": launcher.RolePrimary, "n3": launcher.RolePrimary,
		"n4": launcher.RoleReplica, "n5": launcher.RoleReplica, "n6": launcher.RoleReplica,
	}
}

func TestResolveFixed(t *testing.T) {
	et, _ := fakeTarget(t, etcdRoles())
	rt, _ := fakeTarget(t, redisRoles(), "n1")
	cases := []struct {
		tgt  *Cluster
		sel  string
		want []string
	}{
		{et, "n3", []string{"n3"}},
		{et, "leader", []string{"n2"}},
		{et, "follower", []string{"n1"}},
		{et, "all", []string{"n1", "n2", "n3"}},
		{rt, "primary", []string{"n2"}}, // n1 is down: first up primary by name
		{rt, "replica", []string{"n4"}},
		{rt, "n1", []string{"n1"}}, // a name is taken as it is, down or not
		{rt, "all", []string{"n1", "n2", "n3", "n4", "n5", "n6"}},
	}
	for _, tc := range cases {
		r := NewResolver(nil)
		got, err := r.Resolve(tc.tgt.Snapshot(), tc.sel)
		if err != nil {
			t.Errorf("Resolve(%q): %v", tc.sel, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Resolve(%q) = %v, want %v", tc.sel, got, tc.want)
		}
	}
}

func TestResolveRandomPicksOnlyUpNodes(t *testing.T) {
	tg, _ := fakeTarget(t, redisRoles(), "n1", "n5")
	c := tg.Snapshot()
	r := NewResolver(rand.New(rand.NewPCG(42, 7)))
	seen := map[string]bool{}
	for range 200 {
		got, err := r.Resolve(c, "random")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] == "n1" || got[0] == "n5" {
			t.Fatalf("random picked %v (n1 and n5 are down)", got)
		}
		seen[got[0]] = true
		p, err := r.Resolve(c, "primary")
		if err != nil {
			t.Fatal(err)
		}
		if p[0] != "n2" && p[0] != "n3" {
			t.Fatalf("seeded primary picked %v, want n2 or n3", p)
		}
		seen["primary="+p[0]] = true
	}
	if len(seen) != 6 { // n2 n3 n4 n6, primary=n2, primary=n3
		t.Errorf("200 draws covered only %v", seen)
	}
}

func TestResolveSameSeedSameChoices(t *testing.T) {
	tg, _ := fakeTarget(t, redisRoles())
	c := tg.Snapshot()
	draw := func() []string {
		r := NewResolver(nil) // fixed seed
		var out []string
		for range 10 {
			got, err := r.Resolve(c, "any:2")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, strings.Join(got, ","))
		}
		return out
	}
	a, b := draw(), draw()
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, different picks: %v vs %v", a, b)
	}
}

func TestResolveAnyN(t *testing.T) {
	tg, _ := fakeTarget(t, redisRoles(), "n6")
	c := tg.Snapshot()
	r := NewResolver(nil)
	for range 50 {
		got, err := r.Resolve(c, "any:3")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("any:3 gave %v", got)
		}
		set := map[string]bool{}
		for _, n := range got {
			if n == "n6" || set[n] {
				t.Fatalf("any:3 gave %v (n6 down, names must be distinct)", got)
			}
			set[n] = true
		}
	}
	_, err := r.Resolve(c, "any:6")
	if err == nil || !strings.Contains(err.Error(), "only 5 up") {
		t.Errorf("any:6 with 5 up: err = %v", err)
	}
}

func TestResolveErrorsSayWhatExists(t *testing.T) {
	tg, _ := fakeTarget(t, etcdRoles(), "n2") // the leader is down, no new one yet
	c := tg.Snapshot()
	r := NewResolver(nil)
	_, err := r.Resolve(c, "leader")
	if err == nil {
		t.Fatal("leader resolved with no up leader")
	}
	for _, want := range []string{`"leader"`, "no up node has role leader", "n1=follower", "n2=leader, down", "up: n1, n3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	_, err = r.Resolve(c, "primary")
	if err == nil || !strings.Contains(err.Error(), "role primary") {
		t.Errorf("primary on etcd: %v", err)
	}
	_, err = r.Resolve(c, "victim")
	if err == nil || !strings.Contains(err.Error(), "nodes: n1, n2, n3") || !strings.Contains(err.Error(), "bound: none") {
		t.Errorf("unknown name: %v", err)
	}
	for _, bad := range []string{"", "any:0", "any:x", "n 1", "-x"} {
		if _, err := r.Resolve(c, bad); err == nil {
			t.Errorf("Resolve(%q) succeeded", bad)
		}
	}
}

func TestResolverBindings(t *testing.T) {
	tg, _ := fakeTarget(t, etcdRoles())
	c := tg.Snapshot()
	r := NewResolver(nil)
	if err := r.Bind("victim", []string{"n2"}); err != nil {
		t.Fatal(err)
	}
	got, err := r.Resolve(c, "victim")
	if err != nil || !reflect.DeepEqual(got, []string{"n2"}) {
		t.Fatalf("victim = %v, %v", got, err)
	}
	if err := r.Bind("victim", []string{"n1"}); err == nil {
		t.Error("binding victim twice succeeded")
	}
	for _, kw := range []string{"leader", "all", "any:2", "random"} {
		if err := r.Bind(kw, []string{"n1"}); err == nil {
			t.Errorf("binding keyword %q succeeded", kw)
		}
	}
	var zero Resolver // the zero value works too
	if err := zero.Bind("x", []string{"n3"}); err != nil {
		t.Fatal(err)
	}
	if got, ok := zero.Bound("x"); !ok || got[0] != "n3" {
		t.Errorf("zero resolver: %v %v", got, ok)
	}
	if got, err := zero.Resolve(c, "random"); err != nil || len(got) != 1 {
		t.Errorf("zero resolver random: %v %v", got, err)
	}
}

func TestSortNamesNatural(t *testing.T) {
	got := []string{"n10", "n2", "n1", "rs2", "coordinator", "n11", "rs10"}
	sortNames(got)
	want := []string{"coordinator", "n1", "n2", "n10", "n11", "rs2", "rs10"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sorted %v, want %v", got, want)
	}
}

func TestResolveGroup(t *testing.T) {
	gt, _ := fakeTarget(t, map[string]string{"coord": "", "n1-s1": "", "n1-s2": "", "n2-s1": "", "n2-s2": "", "n12-s1": ""})
	for _, tc := range []struct {
		sel  string
		want []string
		err  string
	}{
		{sel: "group:n1", want: []string{"n1-s1", "n1-s2"}},
		{sel: "group:n2", want: []string{"n2-s1", "n2-s2"}},
		{sel: "group:n3", err: "no node is named n3-"},
		{sel: "group:", err: "needs a group name"},
		{sel: "n2-s1,n1-s1", want: []string{"n1-s1", "n2-s1"}},
		{sel: "group:n1,n2-s2,n1-s1", want: []string{"n1-s1", "n1-s2", "n2-s2"}},
		{sel: "n1-s1,", err: "empty node selector"},
		{sel: "n1-s1,n9-s9", err: "no such node"},
	} {
		t.Run(tc.sel, func(t *testing.T) {
			got, err := NewResolver(nil).Resolve(gt.Snapshot(), tc.sel)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Resolve(%q) = %v, %v; want error %q", tc.sel, got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Resolve(%q) = %v, %v; want %v", tc.sel, got, err, tc.want)
			}
		})
	}
}
