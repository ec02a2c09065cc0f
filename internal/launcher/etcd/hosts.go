package etcd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
)

// The ports a member on an inventory host listens on: etcd's own defaults,
// since every member has a host (an address) of its own.
const (
	HostClientPort = 2379
	HostPeerPort   = 2380
)

// HostNeeds is what a member needs on an inventory host: its ports free
// (the member runs from the faultbench binary, installed on every host).
// The target entry declares it (targets.Target.OnHosts).
func HostNeeds() launcher.HostNeeds {
	return launcher.HostNeeds{Ports: []int{HostClientPort, HostPeerPort}}
}

// upOnHosts starts one member per host of spec.Hosts (env.Remote): the
// faultbench binary installed there, the member run from it as locally,
// detached in a session of its own, listening on the host's address
// (HostClientPort, HostPeerPort), its files in DIR/nodes/CLUSTER/NODE on the
// host. On failure it stops the members it started and removes their
// directories.
func (l Launcher) upOnHosts(ctx context.Context, env *launcher.Env, spec launcher.Spec, o options, name string) (cl *launcher.Cluster, err error) {
	if env.Remote == nil {
		return nil, errors.New("etcd cluster: nodes on hosts need the inventory's hosts (env.Remote)")
	}
	if spec.Dir != "" {
		return nil, errors.New("etcd cluster: a directory (--dir) is for a local cluster; on hosts the members live under the inventory's dir")
	}
	c := &launcher.Cluster{
		Kind: Kind, Name: name, Options: o.asMap(), Detached: true, OwnerPID: os.Getpid(),
		KeepData: spec.KeepData, CreatedAt: time.Now().UTC(),
		Inventory: env.Remote.Inventory(), Hosts: env.Remote,
	}
	defer func() {
		if err != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopGrace+30*time.Second)
			defer cancel()
			if derr := launcher.Down(dctx, c, stopGrace); derr != nil {
				err = fmt.Errorf("%w (and cleaning up failed: %v)", err, derr)
			}
			cl = nil
		}
	}()
	prepared, err := launcher.PrepareHosts(ctx, env, spec.Hosts, HostNeeds())
	if err != nil {
		return c, fmt.Errorf("etcd cluster: %w", err)
	}
	plans := make([]memberPlan, len(spec.Hosts))
	selves := make([]string, len(spec.Hosts))
	dirs := make([]string, len(spec.Hosts))
	hosts := make([]launcher.Host, len(spec.Hosts))
	for i, p := range prepared {
		hosts[i], selves[i], dirs[i] = p.Host, p.Self, p.Dir
	}
	var ic []string
	for i, h := range hosts {
		dir := dirs[i]
		m := "n" + strconv.Itoa(i+1)
		nodeDir := path.Join(dir, "nodes", name, m)
		plans[i] = memberPlan{name: m, host: h.Address(), clientPort: HostClientPort, peerPort: HostPeerPort,
			dataDir: path.Join(nodeDir, "data"), logFn: path.Join(nodeDir, "node.log")}
		ic = append(ic, m+"="+plans[i].peerURL())
	}
	initialCluster := strings.Join(ic, ",")
	token := "faultbench-" + name + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for i, p := range plans {
		c.Nodes = append(c.Nodes, launcher.Node{
			Name: p.name, Host: spec.Hosts[i],
			Addr: hostPort(p.host, p.clientPort), PeerAddr: hostPort(p.host, p.peerPort),
			DataDir: p.dataDir, LogFile: p.logFn,
			Argv: nodeArgv(selves[i], p, initialCluster, token, "new", o, o.startTimeout),
			Down: true,
		})
	}
	if err := startMembers(ctx, env, c); err != nil {
		return c, err
	}
	if err := l.waitUp(ctx, c, o, len(plans)); err != nil {
		return c, err
	}
	for i := range c.Nodes {
		c.Nodes[i].Argv = nodeArgv(selves[i], plans[i], initialCluster, token, "existing", o, 0)
	}
	return c, nil
}
