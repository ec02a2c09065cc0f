package clusterctl

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/netns"
)

func TestLauncherSpecDropsNetOptions(t *testing.T) {
	in := launcher.Spec{Nodes: 3, Options: map[string]string{OptNet: NetNamespaces, "etcd.log-level": "info"}}
	out := launcherSpec(in)
	if _, ok := out.Options[OptNet]; ok {
		t.Errorf("launcher spec still has %s: %v", OptNet, out.Options)
	}
	if out.Options["etcd.log-level"] != "info" {
		t.Errorf("launcher spec lost the launcher's own option: %v", out.Options)
	}
	if in.Options[OptNet] != NetNamespaces {
		t.Errorf("the caller's options were changed: %v", in.Options)
	}
}

func TestNetEnv(t *testing.T) {
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	m := &Manager{Store: launcher.StateStore{Dir: t.TempDir()}, Env: env}
	cases := []struct {
		name, value, err string
		same             bool // the Manager's own Env, no network
	}{
		{name: "unset", value: "", same: true},
		{name: "loopback", value: "loopback", same: true},
		{name: "bad value", value: "bridge", err: `option net="bridge": want netns`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := launcher.Spec{Name: "x", Nodes: 1, Options: map[string]string{}}
			if tc.value != "" {
				spec.Options[OptNet] = tc.value
			}
			got, nw, err := m.netEnv(context.Background(), spec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || nw != nil || (tc.same && got != env) {
				t.Errorf("netEnv = %p, %v, %v; want the Manager's Env and no network", got, nw, err)
			}
		})
	}
	t.Run("not root", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("runs as root: the not-root message cannot show")
		}
		_, _, err := m.netEnv(context.Background(), launcher.Spec{Name: "x", Nodes: 1, Options: map[string]string{OptNet: NetNamespaces}})
		if err == nil || !strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("error %v, want the one-line hint at 127.0.0.1", err)
		}
	})
}

// TestCleanupOrphanNetwork: a cluster network whose cluster was never
// recorded (faultbench killed while the cluster started) is removed by
// Cleanup, and one of a recorded cluster is left to that cluster.
func TestCleanupOrphanNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("creates network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Skip("creates network namespaces: needs root")
	}
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m := &Manager{Store: launcher.StateStore{Dir: dir}, Env: env}
	ctx := context.Background()
	orphan, err := netns.Create(ctx, dir, "orphan", 2)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := netns.Create(ctx, dir, "kept", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = orphan.Destroy(ctx); _ = kept.Destroy(ctx) })
	// "kept" belongs to a recorded cluster started by `cluster up`
	if err := m.Store.Save(&launcher.Cluster{Kind: "etcd", Name: "kept", Detached: true,
		Options: map[string]string{OptNetState: kept.Path()}}); err != nil {
		t.Fatal(err)
	}
	ost, _ := orphan.State()
	var out strings.Builder
	if err := m.Cleanup(ctx, false, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "removed the network of orphan") {
		t.Errorf("cleanup said %q, want the orphan network removed", out.String())
	}
	for _, ns := range ost.Namespaces {
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			t.Errorf("namespace %s of the orphan network left", ns)
		}
	}
	if _, err := kept.State(); err != nil {
		t.Errorf("the recorded cluster's network was touched: %v", err)
	}
}
