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

// TestNetworkFaultsRefusedOnHosts checks the clear refusal of network
// faults on a cluster with nodes on inventory hosts.
func TestNetworkFaultsRefusedOnHosts(t *testing.T) {
	for _, a := range []Action{ActionPartition, ActionLoss, ActionDelay} {
		t.Run(string(a), func(t *testing.T) {
			h := &fakeHost{state: map[int]byte{1: 'R'}}
			c := &launcher.Cluster{Kind: "fake", Name: "remote", Hosts: h, Nodes: []launcher.Node{{Name: "n1", PID: 1, Host: "h1"}}}
			tg := &Cluster{Launcher: &fakeLauncher{roles: map[string]string{}, down: map[string]bool{}}, Cluster: c}
			f, err := NewRegistry().New(a)
			if err != nil {
				t.Fatal(err)
			}
			err = refuseOnHosts(tg, f)
			if err == nil || !strings.Contains(err.Error(), "network faults on remote nodes are not supported yet") {
				t.Errorf("%s on a remote node: %v", a, err)
			}
			if k, _ := NewRegistry().New(ActionKill); refuseOnHosts(tg, k) != nil {
				t.Error("kill refused on a remote node")
			}
		})
	}
}
