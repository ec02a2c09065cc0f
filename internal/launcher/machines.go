package launcher

import (
	"net"
	"sort"
	"strings"

	"github.com/faultbench/faultbench/internal/diskfs"
)

// HostNames maps every host (IP) that a node of c has a client address on
// to that node's name (the last such node in node order). It names the
// machines of a cluster network: each network namespace is named after the
// node serving clients there.
func (c *Cluster) HostNames() map[string]string {
	names := map[string]string{}
	for _, n := range c.Nodes {
		if host, _, err := net.SplitHostPort(n.Addr); err == nil {
			names[host] = n.Name
		}
	}
	return names
}

// Machines maps every node of c to the machine it runs on: nodes whose
// addresses (client, else peer) share a host run on one machine, named as
// HostNames names it. postgres-ha's nK-keeper (the pg_autoctl keeper, with
// only a peer address) and nK (its postgres server) are both on machine nK;
// on every other target each node is its own machine. A node with no
// address is a machine of its own. It also returns the machine names,
// sorted.
func (c *Cluster) Machines() (map[string]string, []string) {
	names := c.HostNames()
	of := make(map[string]string, len(c.Nodes))
	seen := map[string]bool{}
	var list []string
	for _, n := range c.Nodes {
		m := n.Name
		addr := n.Addr
		if addr == "" {
			addr = n.PeerAddr
		}
		if host, _, err := net.SplitHostPort(addr); err == nil && names[host] != "" {
			m = names[host]
		}
		of[n.Name] = m
		if !seen[m] {
			seen[m] = true
			list = append(list, m)
		}
	}
	sort.Strings(list)
	return of, list
}

// NetOptionKey is the option key of the cluster network ("net", see
// internal/netns: OptNet, and OptNetState "net.state"). The cluster manager
// records those keys in Cluster.Options beside the launcher's own.
const NetOptionKey = "net"

// OwnOptions returns the recorded options of a cluster without the cluster
// network's keys (NetOptionKey and NetOptionKey.*), the disk layer's
// (diskfs.OptDisk) and the clock faults' (OptClock), which belong to the
// cluster manager: what a launcher reads back with its own option parser.
func OwnOptions(opts map[string]string) map[string]string {
	out := make(map[string]string, len(opts))
	for k, v := range opts {
		if k == NetOptionKey || strings.HasPrefix(k, NetOptionKey+".") || k == diskfs.OptDisk || k == OptClock {
			continue
		}
		out[k] = v
	}
	return out
}
