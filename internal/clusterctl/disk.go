package clusterctl

import (
	"context"
	"fmt"

	"github.com/faultbench/faultbench/internal/diskfs"
	"github.com/faultbench/faultbench/internal/launcher"
)

// Option keys of every launcher for the nodes' storage; see diskfs.OptDisk.
const (
	OptDisk  = diskfs.OptDisk
	DiskFuse = diskfs.DiskFuse
)

// diskLayer is the launcher.DiskLayer of clusters with disk faults: it
// starts a node's layer server (`faultbench diskfs serve`) through env,
// detached as the cluster is, before the node starts.
type diskLayer struct{ env *launcher.Env }

// Ready implements launcher.DiskLayer.
func (d diskLayer) Ready(ctx context.Context, c *launcher.Cluster, n *launcher.Node) error {
	return diskfs.Ensure(ctx, n.DataDir, d.env.Self, !c.Detached, func(argv []string, logFile string) error {
		_, err := d.env.Spawn(argv, logFile, c.Detached)
		return err
	})
}

// diskEnv returns base itself, or, when c's options ask for disk faults,
// a new Env like base whose nodes start on the layer.
func diskEnv(base *launcher.Env, opts map[string]string) (*launcher.Env, error) {
	if !diskfs.Wanted(opts) {
		return base, nil
	}
	env, err := launcher.NewEnv()
	if err != nil {
		return nil, err
	}
	env.Self, env.Addrs, env.OnExit, env.Remote = base.Self, base.Addrs, base.OnExit, base.Remote
	env.Disk = diskLayer{env: env}
	return env, nil
}

// checkDisk refuses what the layer cannot do: nodes on other hosts.
func checkDisk(spec launcher.Spec) error {
	if err := diskfs.CheckOption(spec.Options[OptDisk]); err != nil {
		return err
	}
	if diskfs.Wanted(spec.Options) && len(spec.Hosts) > 0 {
		return fmt.Errorf("disk faults (option %s=%s, --disk-faults) act on nodes of this machine only, not on inventory hosts", OptDisk, DiskFuse)
	}
	return nil
}

// recordDisk notes the layer in c's options (the launcher keeps its own).
func recordDisk(c *launcher.Cluster, opts map[string]string) {
	if !diskfs.Wanted(opts) {
		return
	}
	if c.Options == nil {
		c.Options = map[string]string{}
	}
	c.Options[OptDisk] = DiskFuse
}

// syncDisks makes what the launcher wrote while it set the cluster up
// (configuration files, initdb's and the first start's files) durable on
// every node's layer, as an installer's sync would: a power loss then
// takes what the database wrote since, not its installation.
func syncDisks(ctx context.Context, c *launcher.Cluster) error {
	if !diskfs.Wanted(c.Options) {
		return nil
	}
	for _, n := range c.Nodes {
		if n.Host != "" || n.DataDir == "" {
			continue
		}
		if _, err := diskfs.Call(ctx, diskfs.LayoutOf(n.DataDir).Ctl, diskfs.Request{Op: diskfs.CtlSync}); err != nil {
			return fmt.Errorf("disk layer of %s: making the set-up durable: %w", n.Name, err)
		}
	}
	return nil
}
