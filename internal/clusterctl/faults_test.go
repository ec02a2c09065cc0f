package clusterctl

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/targets"
)

// stubLauncher knows its kind; Refresh marks every node up, nothing starts.
type stubLauncher struct{ kind string }

func (l stubLauncher) Kind() string { return l.kind }
func (l stubLauncher) Up(context.Context, *launcher.Env, launcher.Spec) (*launcher.Cluster, error) {
	return nil, errors.New("stub")
}
func (l stubLauncher) StartNode(context.Context, *launcher.Env, *launcher.Cluster, string) error {
	return errors.New("stub")
}
func (l stubLauncher) Refresh(_ context.Context, c *launcher.Cluster) error {
	for i := range c.Nodes {
		c.Nodes[i].Role = "replica"
		if i == 1 {
			c.Nodes[i].Role = "primary"
		}
	}
	return nil
}
func (l stubLauncher) WaitHealthy(context.Context, *launcher.Cluster) error { return nil }

func stubRegistry(t *testing.T) *targets.Registry {
	t.Helper()
	entry := func(kind string, up time.Duration, whole func(*launcher.Cluster, string) string) *targets.Target {
		return &targets.Target{Kind: kind, Help: kind, Docs: "docs/targets.md", EndpointKey: kind + ".addr", DefaultVictim: "random",
			NewDriver: func(context.Context, *properties.Properties) (driver.Driver, error) { return nil, errors.New("stub") }, Launcher: stubLauncher{kind}, UpTimeout: up, WholeNode: whole,
			Size: targets.Sizing{Nodes: 2, NodesAre: "nodes", FaultTolerance: func(n, _ int) int { return n - 1 }}}
	}
	keeper := func(c *launcher.Cluster, n string) string {
		if _, err := c.Node(n + "-k"); err == nil {
			return n + "-k"
		}
		return n
	}
	ts := []*targets.Target{entry("plain", 0, nil), entry("slow", 5*time.Minute, keeper)}
	reg, err := targets.New(ts...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestFaultCluster: the one constructor of the cluster faults act on takes
// the launcher from the registry, the manager's env and store, and the
// kind's UpTimeout unless a timeout is given.
func TestFaultCluster(t *testing.T) {
	reg := stubRegistry(t)
	env := &launcher.Env{}
	m := New(t.TempDir(), env, reg)
	for _, tc := range []struct {
		name, kind string
		given      time.Duration
		want       time.Duration
	}{
		{"kind without UpTimeout", "plain", 0, 0},
		{"kind's UpTimeout", "slow", 0, 5 * time.Minute},
		{"given timeout wins", "slow", time.Minute, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &launcher.Cluster{Kind: tc.kind, Name: "c"}
			fc, err := m.FaultCluster(c, nil, tc.given)
			if err != nil {
				t.Fatal(err)
			}
			if fc.Launcher.Kind() != tc.kind || fc.Env != env || fc.Cluster != c || fc.Save == nil || fc.HealthTimeout != tc.want {
				t.Errorf("got launcher %s env %p cluster %p save %t timeout %v", fc.Launcher.Kind(), fc.Env, fc.Cluster, fc.Save != nil, fc.HealthTimeout)
			}
		})
	}
	if _, err := m.FaultCluster(&launcher.Cluster{Kind: "nosuch"}, nil, 0); err == nil {
		t.Error("FaultCluster of an unknown kind: no error")
	}
}

// TestChoose: the cluster a command acts on when none is named is the only
// running one; none or several is an error that says what to do.
func TestChoose(t *testing.T) {
	m := New(t.TempDir(), &launcher.Env{}, stubRegistry(t))
	if _, err := m.Choose(""); !errors.Is(err, ErrNoneRunning) {
		t.Errorf("no cluster: %v, want ErrNoneRunning", err)
	}
	for _, name := range []string{"a", "b"} {
		if err := m.Save(&launcher.Cluster{Kind: "plain", Name: name, Detached: true}); err != nil {
			t.Fatal(err)
		}
		c, err := m.Choose("")
		var amb *AmbiguousError
		switch {
		case name == "a" && (err != nil || c.Name != "a"):
			t.Errorf("one cluster: %v %v, want a", c, err)
		case name == "b" && (!errors.As(err, &amb) || err.Error() != "several clusters are recorded (a, b): choose one with --cluster"):
			t.Errorf("two clusters: %v, want an AmbiguousError naming a, b", err)
		}
	}
	if c, err := m.Choose("b"); err != nil || c.Name != "b" {
		t.Errorf("named: %v %v", c, err)
	}
}

// TestWholeNodeSelector: a kind with WholeNode maps every resolved node
// (roles resolved after a refresh) to its whole node; other kinds keep the
// selector.
func TestWholeNodeSelector(t *testing.T) {
	m := New(t.TempDir(), &launcher.Env{}, stubRegistry(t))
	nodes := func(kind string) *launcher.Cluster {
		c := &launcher.Cluster{Kind: kind, Name: "c"}
		for _, n := range []string{"n1", "n1-k", "n2", "n2-k"} {
			c.Nodes = append(c.Nodes, launcher.Node{Name: n, PID: 1})
		}
		return c
	}
	for _, tc := range []struct{ kind, sel, want string }{
		{"plain", "primary", "primary"},
		{"slow", "n1", "n1-k"},
		{"slow", "primary", "n1-k"},
	} {
		got, err := m.WholeNodeSelector(context.Background(), nodes(tc.kind), tc.sel)
		if err != nil || got != tc.want {
			t.Errorf("%s %s: %q %v, want %q", tc.kind, tc.sel, got, err, tc.want)
		}
	}
	if _, err := m.WholeNodeSelector(context.Background(), nodes("slow"), "n9"); err == nil || !strings.HasPrefix(err.Error(), "--whole-node: ") {
		t.Errorf("unknown node: %v, want a --whole-node error", err)
	}
}
