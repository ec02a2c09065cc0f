package cassandra

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"github.com/faultbench/faultbench/internal/launcher"
)

var _ launcher.Scaler = Launcher{}

// AddNode starts node n(N+1) on the next loopback address with the
// cluster's ports and recorded options, n1 as its seed and auto_bootstrap
// on: it joins the ring, takes over token ranges and streams their data
// from the other nodes before it serves. It returns once every running
// node sees it NORMAL (see WaitHealthy), with the node recorded in c.
// Taking a node out again (decommission) is not there yet: Cassandra offers
// it only through JMX/nodetool, which faultbench does not use.
func (Launcher) AddNode(ctx context.Context, env *launcher.Env, c *launcher.Cluster) (string, error) {
	if c.Kind != Kind {
		return "", fmt.Errorf("cluster %s is of kind %q, not %q", c.Name, c.Kind, Kind)
	}
	if len(c.Nodes) == 0 {
		return "", fmt.Errorf("cluster %s has no nodes to join", c.Name)
	}
	if len(c.Nodes) >= 16 {
		return "", fmt.Errorf("cluster %s has %d nodes, the most faultbench starts on one machine", c.Name, len(c.Nodes))
	}
	cfg, err := parseOptions(c.Options)
	if err != nil {
		return "", fmt.Errorf("cassandra: the cluster's recorded options: %w", err)
	}
	if err := cfg.resolvePaths(); err != nil {
		return "", fmt.Errorf("cassandra: %w", err)
	}
	first := &c.Nodes[0]
	_, np, err1 := net.SplitHostPort(first.Addr)
	_, sp, err2 := net.SplitHostPort(first.PeerAddr)
	native, err3 := strconv.Atoi(np)
	storage, err4 := strconv.Atoi(sp)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return "", fmt.Errorf("cassandra: %s's recorded addresses %q and %q are not host:port", first.Name, first.Addr, first.PeerAddr)
	}
	i := len(c.Nodes)
	p := nodePlan{name: "n" + strconv.Itoa(i+1), host: host(env, i), nativePort: native, storagePort: storage}
	for _, port := range []int{native, storage} {
		l, err := net.Listen("tcp", net.JoinHostPort(p.host, strconv.Itoa(port)))
		if err != nil {
			return "", fmt.Errorf("cassandra: new node %s cannot use the cluster's port %d on %s: %w", p.name, port, p.host, err)
		}
		_ = l.Close()
	}
	p.dir = filepath.Join(c.Dir, p.name)
	p.dbDir = filepath.Join(p.dir, "db")
	p.confDir = filepath.Join(p.dir, "conf")
	p.logFile = filepath.Join(p.dir, "node.log")
	if err := p.writeConfig(cfg, []string{first.PeerAddr}); err != nil {
		return "", fmt.Errorf("cassandra: %w", err)
	}
	c.Nodes = append(c.Nodes, launcher.Node{
		Name: p.name, Addr: p.addr(), PeerAddr: p.peerAddr(), DataDir: p.dbDir,
		LogFile: p.logFile, Argv: p.argv(cfg), Down: true,
	})
	ctx, cancel := launcher.WithDefaultTimeout(ctx, nodeStartTimeout)
	defer cancel()
	if err := startAndJoin(ctx, env, c, i, len(c.Nodes)); err != nil {
		// the node never joined: forget it (its files stay for the log)
		c.Nodes = c.Nodes[:i]
		return "", fmt.Errorf("cassandra: adding %s: %w", p.name, err)
	}
	return p.name, nil
}
