package fault

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/launcher"
)

// lostHost is a fakeNetHost whose SSH can be lost: then every call fails,
// and it says what a fault left on it (launcher.Leftovers).
type lostHost struct {
	*fakeNetHost
	name string
	lost bool
}

var errLost = errors.New("ssh: connection lost")

func (h *lostHost) RemoveNet(ctx context.Context, owner string) (bool, error) {
	if h.lost {
		return false, errLost
	}
	return h.fakeNetHost.RemoveNet(ctx, owner)
}

func (h *lostHost) NetOwners(ctx context.Context) ([]string, error) {
	if h.lost {
		return nil, errLost
	}
	return h.fakeNetHost.NetOwners(ctx)
}

func (h *lostHost) ClearNet(ctx context.Context) (bool, error) {
	if h.lost {
		return false, errLost
	}
	return h.fakeNetHost.ClearNet(ctx)
}

func (h *lostHost) NetLeftover(owner string) string {
	return "chain " + owner + " on " + h.name + "; remove it with nft delete chain inet faultbench " + owner
}

func (h *lostHost) StoppedLeftover(pid int) string {
	return fmt.Sprintf("pid %d on %s stopped; kill -s CONT %d", pid, h.name, pid)
}

type lostHosts map[string]*lostHost

func (hs lostHosts) Host(name string) (launcher.Host, error) {
	if h, ok := hs[name]; ok {
		return h, nil
	}
	return nil, fmt.Errorf("no host %s", name)
}
func (lostHosts) Inventory() string { return "/hosts.yaml" }

// TestLostHostLeftovers checks issue 30's must-holds on nodes of inventory
// hosts: a fault step's applied event carries its delay from the schedule
// and the hosts it went to, and a heal that cannot reach a host (SSH lost)
// fails with what is left there and how to remove it. Negative control:
// without the lost connection the heal succeeds and nothing is reported
// left.
func TestLostHostLeftovers(t *testing.T) {
	for _, lose := range []bool{false, true} {
		t.Run(fmt.Sprintf("ssh lost %v", lose), func(t *testing.T) {
			hs := lostHosts{}
			var nodes []launcher.Node
			for i := 1; i <= 3; i++ {
				h := fmt.Sprintf("h%d", i)
				hs[h] = &lostHost{name: h, fakeNetHost: &fakeNetHost{fakeHost: fakeHost{state: map[int]byte{100 + i: 'R'}}, drops: map[string]string{}}}
				nodes = append(nodes, launcher.Node{Name: fmt.Sprintf("n%d", i), PID: 100 + i, Host: h,
					Addr: fmt.Sprintf("198.18.0.%d:2379", i), PeerAddr: fmt.Sprintf("198.18.0.%d:2380", i)})
			}
			c := &launcher.Cluster{Kind: "fake", Name: "remote", Inventory: hs.Inventory(), Hosts: hs, Nodes: nodes}
			log := event.NewMemory(time.Now())
			tg := &Cluster{Launcher: &fakeLauncher{roles: map[string]string{}, down: map[string]bool{}}, Cluster: c, Events: log}
			if _, err := Apply(context.Background(), tg, NewRegistry(), ActionPartition, "n1"); err != nil {
				t.Fatal(err)
			}
			var injected *event.Event
			for _, e := range log.Events() {
				if e.Kind == event.FaultInjected {
					injected = &e
				}
			}
			if injected == nil || injected.DelayNS <= 0 || injected.Hosts != "h1" {
				t.Fatalf("fault-injected event %+v: want a delay and host h1 (the step's node's)", injected)
			}
			hs["h2"].lost = lose
			_, err := Apply(context.Background(), tg, NewRegistry(), ActionHeal, "all")
			if !lose {
				if err != nil {
					t.Fatalf("heal with every host reachable: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "left: chain") || !strings.Contains(err.Error(), "on h2; remove it with nft delete chain") {
				t.Fatalf("heal with h2's SSH lost: %v, want what is left on h2 and how to remove it", err)
			}
			t.Logf("reported: %v", err)
		})
	}
}
