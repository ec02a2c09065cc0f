package fault

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/faultbench/faultbench/internal/launcher"
)

// fakeHost is a launcher.Host whose processes live in a map: signals
// change their state, and every call is recorded.
type fakeHost struct {
	mu    sync.Mutex
	state map[int]byte // 'R' running, 'T' stopped; absent: gone
	sent  []string     // "KILL 101"
}

func (h *fakeHost) Signal(_ context.Context, pid int, sig syscall.Signal) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.state[pid]; !ok {
		return fmt.Errorf("no process %d", pid)
	}
	h.sent = append(h.sent, fmt.Sprintf("%s %d", map[syscall.Signal]string{syscall.SIGKILL: "KILL", syscall.SIGTERM: "TERM", syscall.SIGSTOP: "STOP", syscall.SIGCONT: "CONT"}[sig], pid))
	switch sig {
	case syscall.SIGKILL, syscall.SIGTERM:
		delete(h.state, pid)
	case syscall.SIGSTOP:
		h.state[pid] = 'T'
	case syscall.SIGCONT:
		h.state[pid] = 'R'
	}
	return nil
}

func (h *fakeHost) Alive(_ context.Context, pid int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.state[pid]
	return ok
}

func (h *fakeHost) Stopped(_ context.Context, pid int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state[pid] == 'T'
}

func (h *fakeHost) RunsNode(ctx context.Context, n *launcher.Node) bool { return h.Alive(ctx, n.PID) }
func (h *fakeHost) Address() string                                     { return "198.18.0.9" }
func (h *fakeHost) Prepare(context.Context) (string, string, error)     { return "/fb", "/dir", nil }
func (h *fakeHost) Spawn(context.Context, []string, string) (int, error) {
	return 0, errors.New("fake host: no spawn")
}
func (h *fakeHost) RemoveAll(context.Context, string) error     { return nil }
func (h *fakeHost) LogTail(context.Context, string, int) string { return "" }
func (h *fakeHost) Host(name string) (launcher.Host, error)     { return h, nil }
func (h *fakeHost) Inventory() string                           { return "/hosts.yaml" }
func (h *fakeHost) signals() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.sent...)
}

// TestFaultsGoToTheNodesHost checks that signal faults on a node with a
// Host act through that host's Procs, never on a local process with the
// same pid (the pids are this test process's own and init's).
func TestFaultsGoToTheNodesHost(t *testing.T) {
	tests := []struct {
		name    string
		actions []Action
		want    []string
		state   byte // n2's state afterwards; 0: gone
	}{
		{"kill", []Action{ActionKill}, []string{"KILL 1"}, 0},
		{"pause", []Action{ActionPause}, []string{"STOP 1"}, 'T'},
		{"pause and resume", []Action{ActionPause, ActionResume}, []string{"STOP 1", "CONT 1"}, 'R'},
		{"stop", []Action{ActionStop}, []string{"CONT 1", "TERM 1"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &fakeHost{state: map[int]byte{1: 'R', 2: 'R'}}
			c := &launcher.Cluster{Kind: "fake", Name: "remote", Inventory: h.Inventory(), Hosts: h, Nodes: []launcher.Node{
				{Name: "n1", PID: 2, Host: "h1"},
				{Name: "n2", PID: 1, Host: "h2"},
			}}
			tg := &Cluster{Launcher: &fakeLauncher{roles: map[string]string{}, down: map[string]bool{}}, Cluster: c}
			for _, a := range tc.actions {
				apply(t, tg, a, "n2")
			}
			if got := h.signals(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("signals sent to the host: %v, want %v", got, tc.want)
			}
			h.mu.Lock()
			st := h.state[1]
			h.mu.Unlock()
			if st != tc.state {
				t.Errorf("n2's process state on its host: %q, want %q", st, tc.state)
			}
		})
	}
}

// TestNodeWithoutReachableHost checks that a node of another host whose
// cluster has no inventory attached is refused with the reason, and not
// mistaken for a local pid.
func TestNodeWithoutReachableHost(t *testing.T) {
	c := &launcher.Cluster{Kind: "fake", Name: "remote", Inventory: "/gone.yaml", Nodes: []launcher.Node{
		{Name: "n1", PID: 1, Host: "h1"}, // pid 1 runs here, but not n1
	}}
	tg := &Cluster{Launcher: &fakeLauncher{roles: map[string]string{}, down: map[string]bool{}}, Cluster: c}
	_, err := Apply(context.Background(), tg, NewRegistry(), ActionKill, "n1")
	if err == nil {
		t.Fatal("kill of a node whose host cannot be reached succeeded")
	}
	if p := c.ProcsOf(&c.Nodes[0]); p.Signal(context.Background(), 1, 0) == nil {
		t.Error("signal through an unreachable host succeeded")
	}
}

// TestLinkFaultsRefusedOnHosts checks the clear refusal of bandwidth and
// delay (not supported on inventory hosts yet) on a cluster with nodes there.
func TestLinkFaultsRefusedOnHosts(t *testing.T) {
	for _, a := range []Action{ActionDelay, ActionBandwidth} {
		t.Run(string(a), func(t *testing.T) {
			h := &fakeHost{state: map[int]byte{1: 'R'}}
			c := &launcher.Cluster{Kind: "fake", Name: "remote", Hosts: h, Nodes: []launcher.Node{{Name: "n1", PID: 1, Host: "h1"}}}
			tg := &Cluster{Launcher: &fakeLauncher{roles: map[string]string{}, down: map[string]bool{}}, Cluster: c}
			f, err := NewRegistry().New(a)
			if err != nil {
				t.Fatal(err)
			}
			err = refuseOnHosts(tg, f)
			if err == nil || !strings.Contains(err.Error(), "on remote nodes is not supported yet") {
				t.Errorf("%s on a remote node: %v", a, err)
			}
			for _, ok := range []Action{ActionKill, ActionPartition, ActionLoss, ActionHeal} {
				if k, _ := NewRegistry().New(ok); refuseOnHosts(tg, k) != nil {
					t.Errorf("%s refused on a remote node", ok)
				}
			}
		})
	}
}

// fakeNetHost is a fakeHost with a packet filter: the drops of every owner.
type fakeNetHost struct {
	fakeHost
	drops map[string]string // owner -> "from,from>to"
}

func (h *fakeNetHost) AddDrops(_ context.Context, owner, to string, from []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.drops[owner] = strings.Join(from, ",") + ">" + to
	return nil
}

func (h *fakeNetHost) AddLoss(_ context.Context, owner, to string, p float64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.drops[owner] = fmt.Sprintf("%g>%s", p, to)
	return nil
}

func (h *fakeNetHost) RemoveNet(_ context.Context, owner string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.drops[owner]
	delete(h.drops, owner)
	return ok, nil
}

func (h *fakeNetHost) NetOwners(context.Context) ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for o := range h.drops {
		out = append(out, o)
	}
	return out, nil
}

func (h *fakeNetHost) ClearNet(context.Context) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ok := len(h.drops) > 0
	h.drops = map[string]string{}
	return ok, nil
}

func (h *fakeNetHost) rules() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, d := range h.drops {
		out = append(out, d)
	}
	return out
}

// fakeNetHosts is an inventory of fakeNetHosts by name.
type fakeNetHosts map[string]*fakeNetHost

func (hs fakeNetHosts) Host(name string) (launcher.Host, error) {
	h, ok := hs[name]
	if !ok {
		return nil, fmt.Errorf("no host %s", name)
	}
	return h, nil
}
func (fakeNetHosts) Inventory() string { return "/hosts.yaml" }

// TestPartitionOnHosts checks that partition, loss and heal on nodes of
// inventory hosts put drop rules on the receiving nodes' hosts (through
// launcher.NetFaulter) with the nodes' addresses, and that heal removes
// them from every host.
func TestPartitionOnHosts(t *testing.T) {
	tests := []struct {
		name string
		arg  string
		heal string
		want map[string][]string // host -> drops
	}{
		{name: "isolate n1, heal all", arg: "n1", heal: "all", want: map[string][]string{
			"h1": {"198.18.0.2,198.18.0.3>198.18.0.1"}, "h2": {"198.18.0.1>198.18.0.2"}, "h3": {"198.18.0.1>198.18.0.3"}}},
		{name: "loss on n2, heal n2", arg: "loss n2 20%", heal: "n2", want: map[string][]string{"h2": {"0.2>198.18.0.2"}}},
		{name: "one way, heal one receiving node heals the fault everywhere", arg: "n1>n2,n3", heal: "n2", want: map[string][]string{
			"h2": {"198.18.0.1>198.18.0.2"}, "h3": {"198.18.0.1>198.18.0.3"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hs := fakeNetHosts{}
			var nodes []launcher.Node
			for i := 1; i <= 3; i++ {
				h := fmt.Sprintf("h%d", i)
				hs[h] = &fakeNetHost{fakeHost: fakeHost{state: map[int]byte{100 + i: 'R'}}, drops: map[string]string{}}
				nodes = append(nodes, launcher.Node{Name: fmt.Sprintf("n%d", i), PID: 100 + i, Host: h,
					Addr: fmt.Sprintf("198.18.0.%d:2379", i), PeerAddr: fmt.Sprintf("198.18.0.%d:2380", i)})
			}
			c := &launcher.Cluster{Kind: "fake", Name: "remote", Inventory: hs.Inventory(), Hosts: hs, Nodes: nodes}
			tg := &Cluster{Launcher: &fakeLauncher{roles: map[string]string{}, down: map[string]bool{}}, Cluster: c}
			action, arg := ActionPartition, tc.arg
			if a, rest, ok := strings.Cut(tc.arg, " "); ok {
				action, arg = Action(a), rest
			}
			if _, err := Apply(context.Background(), tg, NewRegistry(), action, arg); err != nil {
				t.Fatal(err)
			}
			for h, want := range tc.want {
				if got := hs[h].rules(); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("host %s drops %v, want %v", h, got, want)
				}
			}
			for h, fh := range hs {
				if _, ok := tc.want[h]; !ok && len(fh.rules()) > 0 {
					t.Errorf("host %s drops %v, want none", h, fh.rules())
				}
			}
			if _, err := Apply(context.Background(), tg, NewRegistry(), ActionHeal, tc.heal); err != nil {
				t.Fatal(err)
			}
			for h, fh := range hs {
				if r := fh.rules(); len(r) > 0 {
					t.Errorf("host %s still drops %v after heal %s", h, r, tc.heal)
				}
			}
		})
	}
}

// TestPartitionOnHostsWithoutNetFaulter checks that a host that cannot
// apply network faults is refused with the reason.
func TestPartitionOnHostsWithoutNetFaulter(t *testing.T) {
	h := &fakeHost{state: map[int]byte{1: 'R', 2: 'R'}}
	c := &launcher.Cluster{Kind: "fake", Name: "remote", Hosts: h, Nodes: []launcher.Node{
		{Name: "n1", PID: 1, Host: "h1", Addr: "198.18.0.1:1"}, {Name: "n2", PID: 2, Host: "h2", Addr: "198.18.0.2:1"}}}
	tg := &Cluster{Launcher: &fakeLauncher{roles: map[string]string{}, down: map[string]bool{}}, Cluster: c}
	_, err := Apply(context.Background(), tg, NewRegistry(), ActionPartition, "n1")
	if err == nil || !strings.Contains(err.Error(), "cannot apply network faults") {
		t.Fatalf("partition through a host without network faults: %v", err)
	}
}

// TestPartitionOnHostsRestore checks a partition's own Restore on
// inventory hosts (a scenario's fault with a down time): its chains go
// from every host, another fault's stay.
func TestPartitionOnHostsRestore(t *testing.T) {
	hs := fakeNetHosts{}
	var nodes []launcher.Node
	for i := 1; i <= 3; i++ {
		h := fmt.Sprintf("h%d", i)
		hs[h] = &fakeNetHost{fakeHost: fakeHost{state: map[int]byte{100 + i: 'R'}}, drops: map[string]string{"other": "x>y"}}
		nodes = append(nodes, launcher.Node{Name: fmt.Sprintf("n%d", i), PID: 100 + i, Host: h, Addr: fmt.Sprintf("198.18.0.%d:2379", i)})
	}
	c := &launcher.Cluster{Kind: "fake", Name: "remote", Hosts: hs, Nodes: nodes}
	tg := &Cluster{Launcher: &fakeLauncher{roles: map[string]string{}, down: map[string]bool{}}, Cluster: c}
	f, err := NewRegistry().New(ActionPartition)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sel, err := resolveFault(ctx, tg, newTimeResolver(), f, "halves")
	if err != nil {
		t.Fatal(err)
	}
	for _, phase := range []func(context.Context, *Cluster, []string) error{f.Prepare, f.Inject, f.WaitEffective} {
		if err := phase(ctx, tg, sel); err != nil {
			t.Fatal(err)
		}
	}
	for h, fh := range hs {
		if len(fh.rules()) != 2 {
			t.Errorf("host %s: rules %v, want the other fault's and the partition's", h, fh.rules())
		}
	}
	for _, phase := range []func(context.Context, *Cluster, []string) error{f.Restore, f.WaitRestored} {
		if err := phase(ctx, tg, sel); err != nil {
			t.Fatal(err)
		}
	}
	for h, fh := range hs {
		if r := fh.rules(); fmt.Sprint(r) != "[x>y]" {
			t.Errorf("host %s after restore: %v, want only the other fault's", h, r)
		}
	}
}
