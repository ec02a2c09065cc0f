package targets

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/properties"
)

// TestBuiltinComplete walks the registry: every entry is complete, its docs
// page exists, its launcher is of its kind, its default victim is a valid
// selector, its node commands are unique, and its UPB sizing agrees with
// its fault tolerance.
func TestBuiltinComplete(t *testing.T) {
	reg := Builtin()
	seen := map[string]string{}
	for _, kind := range reg.Kinds() {
		t.Run(kind, func(t *testing.T) {
			tg, err := reg.Get(kind)
			if err != nil {
				t.Fatal(err)
			}
			if err := tg.Validate(); err != nil {
				t.Error(err)
			}
			if _, err := os.Stat(filepath.Join("..", "..", tg.Docs)); err != nil {
				t.Errorf("docs page: %v", err)
			}
			if tg.Launcher != nil && tg.Launcher.Kind() != kind {
				t.Errorf("launcher kind %q", tg.Launcher.Kind())
			}
			if err := (fault.Schedule{{Action: fault.ActionKill, Node: tg.DefaultVictim}}).ValidateFor(fault.NewRegistry(), nil); err != nil {
				t.Errorf("default victim: %v", err)
			}
			for name := range tg.NodeCommands {
				if other, dup := seen[name]; dup {
					t.Errorf("node command %q also registered by %s", name, other)
				}
				seen[name] = kind
				if f, _ := reg.NodeCommand(name); f == nil {
					t.Errorf("node command %q not found", name)
				}
			}
			if tg.Size.ForK != nil {
				for k := 0; k <= 2; k++ {
					if _, _, err := tg.ForK(k, 0); err != nil {
						t.Errorf("ForK(%d): %v", k, err)
					}
				}
			}
			if tg.Describe(tg.Size.Nodes, tg.Size.Replicas) == "" {
				t.Error("empty description")
			}
		})
	}
	if got := strings.Join(reg.Launchable(), ","); got != "cassandra,etcd,galera,hbase,postgres-ha,redis,redis-cluster,txkv" {
		t.Errorf("Launchable = %s", got)
	}
}

func TestForK(t *testing.T) {
	for _, tc := range []struct {
		kind            string
		k, masters      int
		nodes, replicas int
		err             string
	}{
		{kind: "etcd", k: 0, nodes: 1},
		{kind: "etcd", k: 1, nodes: 3},
		{kind: "etcd", k: 2, nodes: 5},
		{kind: "etcd", k: 1, masters: 5, err: "runs 2K+1 etcd members"},
		{kind: "redis-cluster", k: 0, nodes: 3, replicas: 0},
		{kind: "redis-cluster", k: 2, masters: 4, nodes: 4, replicas: 2},
		{kind: "redis", k: 1, err: "does not know how to realise"},
		{kind: "etcd", k: -1, err: "negative"},
		{kind: "cassandra", k: 0, nodes: 1},
		{kind: "cassandra", k: 1, nodes: 2},
		{kind: "cassandra", k: 2, nodes: 3},
		{kind: "cassandra", k: 3, err: "at most 3"},
		{kind: "cassandra", k: 1, masters: 3, err: "K+1 Cassandra nodes"},
	} {
		t.Run(tc.kind+"/"+strings.Repeat("K", tc.k+1), func(t *testing.T) {
			tg, err := Builtin().Get(tc.kind)
			if err != nil {
				t.Fatal(err)
			}
			n, r, err := tg.ForK(tc.k, tc.masters)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || n != tc.nodes || r != tc.replicas {
				t.Errorf("ForK = %d nodes, %d replicas, %v; want %d, %d", n, r, err, tc.nodes, tc.replicas)
			}
		})
	}
}

func TestIncompleteEntry(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    *Target
		want string
	}{
		{"empty", &Target{}, "target (no kind): incomplete entry: Kind (one word), Help"},
		{"no driver", &Target{Kind: "x", Help: "h", Docs: "docs/x.md", EndpointKey: "x.addr", DefaultVictim: "random",
			Size: Sizing{Nodes: 1, NodesAre: "nodes", FaultTolerance: func(int, int) int { return 0 }}}, "NewDriver"},
		{"replicas without HasReplicas", &Target{Kind: "x", Help: "h", Docs: "docs/x.md", EndpointKey: "x.addr", DefaultVictim: "random",
			NewDriver: Builtin().m["etcd"].NewDriver,
			Size:      Sizing{Nodes: 1, Replicas: 1, NodesAre: "nodes", FaultTolerance: func(int, int) int { return 0 }}}, "Size.HasReplicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.t); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := New(Entries()[0], Entries()[0]); err == nil || !strings.Contains(err.Error(), "registered twice") {
		t.Errorf("duplicate kind: %v", err)
	}
}

// TestNodeNames: the names scenario schedules are checked against are the
// names each launcher gives its nodes.
func TestNodeNames(t *testing.T) {
	reg := Builtin()
	cases := []struct {
		kind            string
		nodes, replicas int
		want            string
	}{
		{"etcd", 3, 0, "n1 n2 n3"},
		{"redis-cluster", 3, 1, "n1 n2 n3 n4 n5 n6"},
		{"redis-cluster", 2, 0, "n1 n2"},
		{"redis", 1, 2, "n1 n2 n3"},
		{"txkv", 2, 0, "coord s1 s2"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s-%d-%d", tc.kind, tc.nodes, tc.replicas), func(t *testing.T) {
			tg, err := reg.Get(tc.kind)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(tg.NodeNames(tc.nodes, tc.replicas), " "); got != tc.want {
				t.Errorf("NodeNames(%d, %d) = %s, want %s", tc.nodes, tc.replicas, got, tc.want)
			}
		})
	}
}

// TestScalingAbilities pins which kinds can scale (add-node, remove-node):
// the launchers of cassandra, etcd and redis-cluster have both abilities,
// the others neither, so a scaling scenario on them is refused before it
// starts (fault.CheckScaling).
func TestScalingAbilities(t *testing.T) {
	scales := map[string]bool{"cassandra": true, "etcd": true, "redis-cluster": true}
	reg := Builtin()
	for _, kind := range reg.Kinds() {
		t.Run(kind, func(t *testing.T) {
			tg, err := reg.Get(kind)
			if err != nil {
				t.Fatal(err)
			}
			_, add := tg.Launcher.(launcher.Scaler)
			_, remove := tg.Launcher.(launcher.Shrinker)
			if add != scales[kind] || remove != scales[kind] {
				t.Errorf("Scaler %v, Shrinker %v; want both %v", add, remove, scales[kind])
			}
			sched := fault.Schedule{{Action: fault.ActionAddNode}, {Action: fault.ActionRemoveNode, Node: "n1"}}
			if err := fault.CheckScaling(sched, tg.Launcher); (err == nil) != scales[kind] {
				t.Errorf("CheckScaling: %v", err)
			}
		})
	}
}

// TestEntryAbilities: what used to be kind switches in cmd/faultbench is in
// the entries: which kinds run nodes on inventory hosts, which have a
// whole node apart from a node, and which launcher option keys a kind
// takes.
func TestEntryAbilities(t *testing.T) {
	reg := Builtin()
	if got := strings.Join(reg.OnNodeHosts(), ","); got != "etcd,redis,redis-cluster" {
		t.Errorf("OnNodeHosts = %s, want etcd,redis,redis-cluster", got)
	}
	t.Run("whole node", func(t *testing.T) {
		pg, _ := reg.Get("postgres-ha")
		etcd, _ := reg.Get("etcd")
		if pg.WholeNode == nil || etcd.WholeNode != nil {
			t.Fatalf("WholeNode set on postgres-ha %t, etcd %t; want only postgres-ha", pg.WholeNode != nil, etcd.WholeNode != nil)
		}
		c := &launcher.Cluster{Kind: pg.Kind}
		for _, n := range pg.NodeNames(2, 0) {
			c.Nodes = append(c.Nodes, launcher.Node{Name: n})
		}
		for in, want := range map[string]string{"n1": "n1-keeper", "n2": "n2-keeper", "n1-keeper": "n1-keeper", "monitor": "monitor"} {
			if got := pg.WholeNode(c, in); got != want {
				t.Errorf("WholeNode(%s) = %s, want %s", in, got, want)
			}
		}
	})
	t.Run("option keys", func(t *testing.T) {
		cs, _ := reg.Get("cassandra")
		for _, k := range []string{"cassandra.rf", "net", "disk", "clock"} {
			if err := cs.CheckOptionKey(k); err != nil {
				t.Errorf("CheckOptionKey(%s): %v", k, err)
			}
		}
		err := cs.CheckOptionKey("cassandra.typo")
		if err == nil || !strings.Contains(err.Error(), "unknown launcher option for cassandra (allowed: ") || !strings.Contains(err.Error(), "cassandra.rf") ||
			!strings.Contains(err.Error(), "net, disk, clock; see docs/targets-cassandra.md)") {
			t.Errorf("CheckOptionKey(cassandra.typo) = %v, want the allowed keys and the docs page", err)
		}
	})
	t.Run("an ability without a launcher is an incomplete entry", func(t *testing.T) {
		etcd, _ := reg.Get("etcd")
		bad := *etcd
		bad.Launcher = nil
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "OnHosts") {
			t.Errorf("Validate = %v, want the missing launcher named", err)
		}
	})
}

// TestDriverProperties: the SQL targets declare and check sqldb.isolation
// before a cluster starts; a bad level is refused naming the property.
func TestDriverProperties(t *testing.T) {
	reg := Builtin()
	for _, kind := range []string{"postgres-ha", "galera"} {
		tg, err := reg.Get(kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name, value, want string
		}{
			{name: "unset"},
			{name: "serializable", value: "serializable"},
			{name: "unknown level", value: "snapshot", want: "sqldb.isolation"},
		} {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				p := properties.New()
				if tc.value != "" {
					p.Set("sqldb.isolation", tc.value)
				}
				err := tg.DriverProperties(p)
				if tc.want == "" {
					if err != nil || len(p.Unknown()) > 0 {
						t.Fatalf("error %v, unknown %v", err, p.Unknown())
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one naming %s", err, tc.want)
				}
			})
		}
	}
}
