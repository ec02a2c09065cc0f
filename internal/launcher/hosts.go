package launcher

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
)

// HostNeeds is what a kind's node needs on an inventory host (`cluster up
// --hosts`): the programs it runs, how to install them, and the ports it
// takes on the host's address. A target entry declares it
// (targets.Target.OnHosts); the hosts path checks it on every host before a
// node starts (PrepareHosts) and never asks which kind it is.
type HostNeeds struct {
	// Programs are executables the node runs that must be on the host's
	// PATH (e.g. redis-server); none for kinds run from the faultbench
	// binary itself, which is installed on every host.
	Programs []string
	// Setup says how to install the programs on a host (a command a user
	// runs there), for the error when one is missing.
	Setup string
	// Ports are the TCP ports one node takes on its host's address; they
	// must be free there (one cluster of the kind per host).
	Ports []int
}

// HostChecker is an optional ability of a Host (found by type assertion):
// it checks needs on the host and returns the absolute path of each
// program by name.
type HostChecker interface {
	CheckNeeds(ctx context.Context, needs HostNeeds) (map[string]string, error)
}

// DirMaker is an optional ability of a Host: it creates a directory inside
// the host's node directories (the data directory a program wants to exist
// before it starts).
type DirMaker interface {
	MkdirAll(ctx context.Context, path string) error
}

// PreparedHost is an inventory host made ready for a node: the faultbench
// binary installed, the kind's needs checked.
type PreparedHost struct {
	Name string // inventory name (Node.Host)
	Host Host
	// Self is the faultbench binary's path there, Dir faultbench's
	// absolute directory there.
	Self, Dir string
	// Programs are the absolute paths of HostNeeds.Programs there.
	Programs map[string]string
}

// NodeDir is where node (of cluster) keeps its files on the host:
// DIR/nodes/CLUSTER/NODE (data/, node.log, pid). Down and `cleanup --hosts`
// rely on this layout.
func (p PreparedHost) NodeDir(cluster, node string) string {
	return path.Join(p.Dir, "nodes", cluster, node)
}

// PrepareHosts makes the hosts names of env.Remote ready for nodes, every
// host at once: the faultbench binary installed (Host.Prepare) and needs
// checked (programs found, ports free) where the host can check them
// (HostChecker). The errors name each host and what it lacks.
func PrepareHosts(ctx context.Context, env *Env, names []string, needs HostNeeds) ([]PreparedHost, error) {
	if env.Remote == nil {
		return nil, errors.New("nodes on hosts need the inventory's hosts (env.Remote)")
	}
	out := make([]PreparedHost, len(names))
	for i, hn := range names {
		h, err := env.Remote.Host(hn)
		if err != nil {
			return nil, err
		}
		out[i] = PreparedHost{Name: hn, Host: h}
	}
	errs := make([]error, len(out))
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &out[i]
			var err error
			if p.Self, p.Dir, err = p.Host.Prepare(ctx); err != nil {
				errs[i] = fmt.Errorf("preparing host %s: %w", p.Name, err)
				return
			}
			if hc, ok := p.Host.(HostChecker); ok && (len(needs.Programs) > 0 || len(needs.Ports) > 0) {
				if p.Programs, err = hc.CheckNeeds(ctx, needs); err != nil {
					errs[i] = fmt.Errorf("host %s: %w", p.Name, err)
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// MkdirOn creates dir on n's host (DirMaker), or does nothing when the host
// cannot (its program then creates the directory itself).
func (c *Cluster) MkdirOn(ctx context.Context, n *Node, dir string) error {
	h, err := c.host(n)
	if err != nil {
		return err
	}
	if dm, ok := h.(DirMaker); ok {
		return dm.MkdirAll(ctx, dir)
	}
	return nil
}
