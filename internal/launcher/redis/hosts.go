package redis

import (
	"context"
	"errors"
	"net"
	"path"
	"strconv"

	"github.com/faultbench/faultbench/internal/launcher"
)

// The ports a node on an inventory host listens on: Redis's own defaults,
// since every node has a host (an address) of its own.
const (
	HostPort    = 6379
	HostBusPort = 16379
)

// HostNeeds is what a node of kind needs on an inventory host (`cluster up
// --hosts`): redis-server on PATH and its ports free (the bus port for
// redis-cluster). The target entries declare it (targets.Target.OnHosts).
func HostNeeds(kind string) launcher.HostNeeds {
	n := launcher.HostNeeds{
		Programs: []string{"redis-server"},
		Setup:    "apt-get install redis-server (Redis 7 or later; scripts/setup.sh --only redis)",
		Ports:    []int{HostPort},
	}
	if kind == KindCluster {
		n.Ports = append(n.Ports, HostBusPort)
	}
	return n
}

// planOnHosts plans total nodes of kind, one per host of spec.Hosts (in
// order: node nK on the K-th host), each listening on its host's address
// (HostPort, HostBusPort) with its files in DIR/nodes/CLUSTER/nK on the
// host, and returns the cluster record (nodes not started) and the plans.
// The hosts are prepared first (faultbench installed, redis-server found,
// the ports free: launcher.PrepareHosts).
func planOnHosts(ctx context.Context, env *launcher.Env, spec launcher.Spec, kind string, cfg config, total int) (*launcher.Cluster, []nodePlan, error) {
	if spec.Dir != "" {
		return nil, nil, errors.New("a directory (--dir) is for a cluster on this machine; on hosts the nodes live under the inventory's dir")
	}
	if len(spec.Hosts) != total {
		return nil, nil, errors.New(strconv.Itoa(total) + " nodes on " + strconv.Itoa(len(spec.Hosts)) + " hosts: one node per host")
	}
	needs := HostNeeds(kind)
	prepared, err := launcher.PrepareHosts(ctx, env, spec.Hosts, needs)
	if err != nil {
		return nil, nil, err
	}
	c := launcher.NewCluster(kind, spec, "", false, cfg.options(kind == KindCluster))
	c.Detached, c.Inventory, c.Hosts = true, env.Remote.Inventory(), env.Remote
	plans := make([]nodePlan, total)
	for i := range plans {
		ph := prepared[i]
		p := &plans[i]
		p.name = "n" + strconv.Itoa(i+1)
		p.host = ph.Host.Address()
		p.onHost = ph.Name
		p.binary = ph.Programs["redis-server"]
		if cfg.binary != "" {
			p.binary = cfg.binary // option redis.binary: a path on the hosts
		}
		if p.binary == "" {
			p.binary = needs.Programs[0]
		}
		p.dir = ph.NodeDir(c.Name, p.name)
		p.dataDir = path.Join(p.dir, "data")
		p.logFile = path.Join(p.dir, "node.log")
		p.port = HostPort
		if kind == KindCluster {
			p.busPort = HostBusPort
		}
	}
	if kind == KindStandalone {
		for i := 1; i < total; i++ {
			plans[i].replicaOf = net.JoinHostPort(plans[0].host, strconv.Itoa(plans[0].port))
		}
	}
	for i := range plans {
		p := &plans[i]
		c.Nodes = append(c.Nodes, launcher.Node{
			Name: p.name, Addr: p.addr(), PeerAddr: p.peerAddr(),
			DataDir: p.dataDir, LogFile: p.logFile, Argv: p.argv(cfg),
			Down: true, Host: p.onHost,
		})
	}
	return c, plans, nil
}
