package fault

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/launcher"
)

// Network faults on nodes that run on inventory hosts (Node.Host): the
// rules go into each affected host's own packet filter through the host's
// launcher.NetFaulter (over SSH, internal/launcher/sshhost), one group of
// rules per fault (its owner id), instead of into network namespaces of
// this machine. Partition, loss and heal are supported there; bandwidth
// and delay are refused (refuseOnHosts).

// hostNode is a node on an inventory host, with what network faults need.
type hostNode struct {
	name, host, ip string
	nf             launcher.NetFaulter
}

// hostNet returns the nodes of t's cluster by name when they run on
// inventory hosts (remote true); remote is false when every node runs on
// this machine. A cluster with nodes on both, a host that cannot apply
// network faults, or a node whose address is not an IP is an error.
func hostNet(t *Cluster) (nodes map[string]hostNode, remote bool, err error) {
	c := t.Snapshot()
	var here, there []string
	for _, n := range c.Nodes {
		if n.Host == "" {
			here = append(here, n.Name)
		} else {
			there = append(there, n.Name)
		}
	}
	if len(there) == 0 {
		return nil, false, nil
	}
	if len(here) > 0 {
		return nil, true, fmt.Errorf("network faults on a cluster with nodes on this machine (%s) and on inventory hosts (%s) are not supported", joinNodes(here), joinNodes(there))
	}
	nodes = map[string]hostNode{}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		nf, ok := c.ProcsOf(n).(launcher.NetFaulter)
		if !ok {
			return nil, true, fmt.Errorf("%s: host %s cannot apply network faults (is it in the inventory %s?)", n.Name, n.Host, c.Inventory)
		}
		addr := n.PeerAddr
		if addr == "" {
			addr = n.Addr
		}
		h, _, err := net.SplitHostPort(addr)
		if err != nil || net.ParseIP(h) == nil {
			return nil, true, fmt.Errorf("%s on host %s listens on %q: network faults on remote nodes need an IP address", n.Name, n.Host, addr)
		}
		nodes[n.Name] = hostNode{name: n.Name, host: n.Host, ip: h, nf: nf}
	}
	return nodes, true, nil
}

// hostDrops returns, per receiving node, the source addresses a
// partition's blocks drop there.
func hostDrops(nodes map[string]hostNode, blocks []block) (map[string][]string, error) {
	drops := map[string][]string{}
	for _, b := range blocks {
		var ips []string
		for _, n := range b.from {
			hn, ok := nodes[n]
			if !ok {
				return nil, fmt.Errorf("no node %s on the inventory hosts", n)
			}
			ips = append(ips, hn.ip)
		}
		for _, to := range b.to {
			if _, ok := nodes[to]; !ok {
				return nil, fmt.Errorf("no node %s on the inventory hosts", to)
			}
			drops[to] = append(drops[to], ips...)
		}
	}
	return drops, nil
}

// injectOnHosts installs the partition's drops on the receiving nodes' hosts.
func (f *partitionFault) injectOnHosts(ctx context.Context, t *Cluster, nodes map[string]hostNode) error {
	drops, err := hostDrops(nodes, f.blocks)
	if err != nil {
		return err
	}
	t.emit(event.Note, joinNodes(f.allNodes()), "partition start: "+f.describe()+" (nftables on the hosts)", "")
	f.applied = true
	var errs []error
	for _, to := range sortedKeys(drops) {
		hn := nodes[to]
		if err := hn.nf.AddDrops(ctx, f.owner, hn.ip, drops[to]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", to, err))
		}
	}
	return errors.Join(errs...)
}

// waitOwnerOnHosts waits until owner's rules are in place (want true) or
// gone (want false) on the hosts of every node of names.
func waitOwnerOnHosts(ctx context.Context, nodes map[string]hostNode, names []string, owner string, want bool) error {
	for _, name := range names {
		hn := nodes[name]
		what := fmt.Sprintf("fault %s's rules in place on %s's host %s", owner, name, hn.host)
		if !want {
			what = fmt.Sprintf("fault %s's rules gone from %s's host %s", owner, name, hn.host)
		}
		var last error
		err := waitState(ctx, what, func() bool {
			owners, err := hn.nf.NetOwners(ctx)
			last = err
			return err == nil && has(owners, owner) == want
		})
		if err != nil {
			return errors.Join(err, last)
		}
	}
	return nil
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// receivers returns the nodes whose hosts hold the partition's drops.
func (f *partitionFault) receivers() []string {
	seen := map[string]bool{}
	var out []string
	for _, b := range f.blocks {
		for _, n := range b.to {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sortNames(out)
	return out
}

// restoreOnHosts removes the partition's rules from every host it touched.
func (f *partitionFault) restoreOnHosts(ctx context.Context, t *Cluster, nodes map[string]hostNode) error {
	var errs []error
	for _, n := range f.receivers() {
		if _, err := nodes[n].nf.RemoveNet(ctx, f.owner); err != nil {
			errs = append(errs, leftNet(n, nodes[n], f.owner, err))
		}
	}
	t.emit(event.Note, joinNodes(f.allNodes()), "partition healed: "+f.describe(), "")
	return errors.Join(errs...)
}

// healOnHosts removes the network faults on the selected nodes' hosts (all
// hosts when f.nodes is nil): every fault with rules on one of them is
// removed from every host, as a local heal removes every rule of a fault
// that has one on a selected node. Heal all also deletes the table.
func (f *healFault) healOnHosts(ctx context.Context, t *Cluster, nodes map[string]hostNode) error {
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	sortNames(names)
	var errs []error
	owners := map[string]bool{}
	for _, n := range names {
		if f.nodes != nil && !f.nodes[n] {
			continue
		}
		ows, err := nodes[n].nf.NetOwners(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
		}
		for _, o := range ows {
			owners[o] = true
		}
	}
	var removed []string
	for _, n := range names {
		hn := nodes[n]
		for _, o := range sortedOwners(owners) {
			ok, err := hn.nf.RemoveNet(ctx, o)
			if err != nil {
				errs = append(errs, leftNet(n, hn, o, err))
			}
			if ok {
				removed = append(removed, n+"@"+hn.host+": fault "+o)
			}
		}
		if f.nodes == nil {
			ok, err := hn.nf.ClearNet(ctx)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", n, err))
			}
			if ok {
				removed = append(removed, n+"@"+hn.host+": leftover rules")
			}
		}
	}
	detail := "nothing to heal"
	if len(removed) > 0 {
		detail = "healed " + strings.Join(removed, "; ")
	}
	t.emit(event.Note, "", detail, "")
	return errors.Join(errs...)
}

// hostsHaveFaults reports whether any host of nodes holds network fault rules.
func hostsHaveFaults(ctx context.Context, nodes map[string]hostNode) (bool, error) {
	var errs []error
	for _, hn := range nodes {
		ows, err := hn.nf.NetOwners(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", hn.name, err))
		}
		if len(ows) > 0 {
			return true, nil
		}
	}
	return false, errors.Join(errs...)
}

// injectOnHosts puts the loss on the selected nodes' hosts.
func (f *linkFault) injectOnHosts(ctx context.Context, t *Cluster, nodes map[string]hostNode, names []string) error {
	if f.action != ActionLoss {
		return fmt.Errorf("%s on remote nodes is not supported yet", f.action)
	}
	var errs []error
	for _, n := range names {
		hn, ok := nodes[n]
		if !ok {
			errs = append(errs, fmt.Errorf("no node %s on the inventory hosts", n))
			continue
		}
		if err := hn.nf.AddLoss(ctx, f.owner, hn.ip, f.loss); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
		}
	}
	t.emit(event.Note, joinNodes(names), fmt.Sprintf("loss %.2f%% of the packets arriving (nftables on the hosts, SSH spared)", f.loss*100), "")
	return errors.Join(errs...)
}

// leftNet is the error of a network fault owner that could not be removed
// from node's host (SSH lost, nft failed): what is left there and how to
// remove it, when the host can say (launcher.Leftovers).
func leftNet(node string, hn hostNode, owner string, err error) error {
	if l, ok := hn.nf.(launcher.Leftovers); ok {
		return fmt.Errorf("%s: %w; left: %s", node, err, l.NetLeftover(owner))
	}
	return fmt.Errorf("%s: %w; left: fault %s's rules on host %s", node, err, owner, hn.host)
}
