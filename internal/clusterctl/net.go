package clusterctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/netns"
)

// Option keys of every launcher for the cluster's network; see netns.OptNet.
const (
	OptNet        = netns.OptNet
	OptNetState   = netns.OptNetState
	NetNamespaces = netns.NetNamespaces
)

// netEnv returns the Env the launcher starts spec's nodes with: m.Env, or,
// when spec asks for namespaces, a new Env whose Addresser places and runs
// every node in the namespace of a cluster network created here.
func (m *Manager) netEnv(ctx context.Context, spec launcher.Spec) (*launcher.Env, *netns.Network, error) {
	switch v := spec.Options[OptNet]; {
	case v == "" || v == "loopback" || v == "127.0.0.1":
		return m.Env, nil, nil
	case netns.Wanted(spec.Options):
	default:
		return nil, nil, fmt.Errorf("option %s=%q: want %s (a network namespace per node) or loopback", OptNet, v, NetNamespaces)
	}
	nodes := spec.Nodes * (1 + max(spec.Replicas, 0))
	nodes++ // a spare for launchers with one extra node (txkv's coordinator)
	nw, err := netns.Create(ctx, m.Store.Dir, spec.Name, nodes)
	if err != nil {
		return nil, nil, err
	}
	a, err := nw.Addresser(m.Env.Self)
	if err != nil {
		_ = nw.Destroy(context.WithoutCancel(ctx))
		return nil, nil, err
	}
	env, err := launcher.NewEnv()
	if err != nil {
		_ = nw.Destroy(context.WithoutCancel(ctx))
		return nil, nil, err
	}
	env.Self, env.Addrs, env.OnExit = m.Env.Self, a, m.Env.OnExit
	return env, nw, nil
}

// recordNet notes c's cluster network in its options and names the
// network's nodes after c's (by address).
func recordNet(c *launcher.Cluster, nw *netns.Network) error {
	if nw == nil {
		return nil
	}
	names := c.HostNames()
	if c.Options == nil {
		c.Options = map[string]string{}
	}
	c.Options[OptNet] = NetNamespaces
	c.Options[OptNetState] = nw.Path()
	return nw.NameNodes(names)
}

// NetworkOf returns the cluster network of c, or nil when its nodes run on
// 127.0.0.1.
func NetworkOf(c *launcher.Cluster) (*netns.Network, error) {
	p := c.Options[OptNetState]
	if p == "" {
		return nil, nil
	}
	return netns.Open(p)
}

// downNet removes c's cluster network (namespaces, links, rules), if any.
func downNet(ctx context.Context, c *launcher.Cluster) error {
	p := c.Options[OptNetState]
	if p == "" {
		return nil
	}
	nw, err := netns.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return nw.Destroy(ctx)
}

// cleanupNets removes cluster networks whose cluster is no longer
// recorded (a faultbench killed while starting it) and reports them to w.
func (m *Manager) cleanupNets(ctx context.Context, w io.Writer) (int, error) {
	ents, err := os.ReadDir(netns.Dir(m.Store.Dir))
	if err != nil {
		return 0, nil
	}
	var errs []error
	n := 0
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(name, ".") {
			continue
		}
		if _, err := m.Store.Load(name); err == nil {
			continue // its cluster is recorded: removed with it
		}
		nw, err := netns.Open(filepath.Join(netns.Dir(m.Store.Dir), e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		st, _ := nw.State()
		if err := nw.Destroy(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
		if st != nil {
			fmt.Fprintf(w, "removed the network of %s: %d namespaces, %d rules\n", name, len(st.Namespaces), len(st.Rules))
		}
	}
	return n, errors.Join(errs...)
}

// netSummary describes c's cluster network for cleanup's report ("" when
// it has none).
func netSummary(c *launcher.Cluster) string {
	nw, err := NetworkOf(c)
	if err != nil || nw == nil {
		return ""
	}
	st, err := nw.State()
	if err != nil {
		return ""
	}
	return fmt.Sprintf(", network %s: %d namespaces, %d links, %d rules", st.Subnet, len(st.Namespaces), len(st.Links), len(st.Rules))
}

// launcherSpec returns spec without the network, disk and clock options, which
// are this package's business, not the launcher's.
func launcherSpec(spec launcher.Spec) launcher.Spec {
	_, net := spec.Options[OptNet]
	_, disk := spec.Options[OptDisk]
	_, clock := spec.Options[launcher.OptClock]
	if !net && !disk && !clock {
		return spec
	}
	o := make(map[string]string, len(spec.Options))
	for k, v := range spec.Options {
		if k != OptNet && k != OptNetState && k != OptDisk && k != launcher.OptClock {
			o[k] = v
		}
	}
	spec.Options = o
	return spec
}

// writeNetStatus writes c's cluster network and the network faults in
// place, for `cluster status` (nothing for a cluster on 127.0.0.1).
func writeNetStatus(w io.Writer, c *launcher.Cluster) {
	nw, err := NetworkOf(c)
	if err != nil {
		fmt.Fprintf(w, "network: %v\n", err)
		return
	}
	if nw == nil {
		return
	}
	st, err := nw.State()
	if err != nil {
		fmt.Fprintf(w, "network: %v\n", err)
		return
	}
	fmt.Fprintf(w, "network %s: a namespace per node (fb%s-*), client side %s on %s\n", st.Subnet, st.Tag, st.HostIP, st.HostLink)
	if len(st.Rules) == 0 {
		fmt.Fprintln(w, "network faults: none")
		return
	}
	for _, r := range st.Rules {
		fmt.Fprintf(w, "network fault %s on %s: %s (since %s; `faultbench fault heal` removes it)\n", r.Owner, r.Node, r.What, r.Added.Format("15:04:05"))
	}
}
