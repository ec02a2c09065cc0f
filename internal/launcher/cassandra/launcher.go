// Package cassandra launches local Apache Cassandra clusters from the jars
// scripts/setup.sh resolves from Maven Central (org.apache.cassandra:
// cassandra-all, see Version). Every node is one JVM started through
// launcher.Env.Spawn, with its own loopback address (127.0.0.1, .2, ... —
// the native protocol drivers reach every node on one port, so nodes differ
// by address), its own cassandra.yaml and logback.xml written by faultbench
// under DIR/nK/conf, its data, commit log, hints and saved caches under
// DIR/nK/db and its log in DIR/nK/node.log. Heaps are small (512 MiB by
// default) so that three or four nodes fit next to the load on one machine.
//
// Nodes start one after the other: n1 is the seed, every later node
// bootstraps into the ring. A node counts as up (Cassandra's "UN") when it
// answers CQL over the native protocol, system.local says it finished
// bootstrapping, and every running node's gossip view (the virtual table
// system_views.gossip_info) shows it NORMAL with its current generation —
// no nodetool and no JMX. Once all are up, the launcher creates the
// keyspace (SimpleStrategy, cassandra.rf replicas). Cassandra has no
// leader: every up node has role replica.
package cassandra

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
)

// Kind is the target kind this launcher starts.
const Kind = "cassandra"

// Timeouts used where the caller's context has no deadline, so that no wait
// hangs forever. A JVM node takes 10-20 s to start on a loaded two-core
// machine.
const (
	defaultUpTimeout      = 5 * time.Minute
	defaultHealthyTimeout = 2 * time.Minute
	nodeStartTimeout      = 2 * time.Minute
	stopGrace             = 20 * time.Second
	queryTimeout          = 2 * time.Second
	schemaTimeout         = 30 * time.Second // a schema change waits for every node
	pingTimeout           = 2 * time.Second  // a loaded machine delays answers by a second at times
	pollInterval          = 250 * time.Millisecond
)

// Launcher starts local Cassandra clusters. It implements launcher.Launcher
// and holds no state: the zero value is ready to use.
type Launcher struct{}

var _ launcher.Launcher = Launcher{}

// Kind implements launcher.Launcher.
func (Launcher) Kind() string { return Kind }

// host returns node i's address: env.Addrs decides, except that the
// loopback addresser's single 127.0.0.1 is spread over 127.0.0.1, .2, ...
// (Linux routes all of 127.0.0.0/8 to lo), because Cassandra's drivers
// expect every node on the same native port.
func host(env *launcher.Env, i int) string {
	h := env.Addrs.Host(i)
	if h == "127.0.0.1" && i < 254 {
		return "127.0.0." + strconv.Itoa(i+1)
	}
	return h
}

// commonPort returns a port that env.Addrs found free on hosts[0] and that
// is free on every other host too, avoiding ports in used. In a cluster
// network (nodes in namespaces of their own, see launcher.ArgvWrapper)
// every port of a fresh namespace is free and the other hosts' addresses
// are not bound here, so only used is checked.
func commonPort(env *launcher.Env, hosts []string, used map[int]bool) (int, error) {
	_, ownNamespaces := env.Addrs.(launcher.ArgvWrapper)
	for range 50 {
		p, err := env.Addrs.Port(hosts[0])
		if err != nil {
			return 0, err
		}
		if used[p] {
			continue
		}
		ok := true
		for _, h := range hosts[1:] {
			if ownNamespaces {
				break
			}
			l, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(p)))
			if err != nil {
				ok = false
				break
			}
			_ = l.Close()
		}
		if ok {
			used[p] = true
			return p, nil
		}
	}
	return 0, fmt.Errorf("no port free on all of %s after 50 tries", strings.Join(hosts, ", "))
}

// planNodes assigns names, directories, addresses and the two cluster-wide
// ports to n nodes.
func planNodes(env *launcher.Env, dir string, n int) ([]nodePlan, error) {
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = host(env, i)
	}
	used := map[int]bool{}
	native, err := commonPort(env, hosts, used)
	if err != nil {
		return nil, err
	}
	storage, err := commonPort(env, hosts, used)
	if err != nil {
		return nil, err
	}
	plans := make([]nodePlan, n)
	for i := range plans {
		p := &plans[i]
		p.name = "n" + strconv.Itoa(i+1)
		p.host = hosts[i]
		p.nativePort, p.storagePort = native, storage
		p.dir = filepath.Join(dir, p.name)
		p.dbDir = filepath.Join(p.dir, "db")
		p.confDir = filepath.Join(p.dir, "conf")
		p.logFile = filepath.Join(p.dir, "node.log")
		if p.jmxPort, err = jmxPort(); err != nil {
			return nil, err
		}
		p.wrap, _ = launcher.SplitWrapper(env.NodeArgv(i, []string{"java"}))
	}
	return plans, nil
}

// checkJava runs `java -version` and accepts Java 11 to 17 (Cassandra 5.0
// supports those).
func checkJava(ctx context.Context, java string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, java, "-version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s -version: %w (%s)", java, err, strings.TrimSpace(string(out)))
	}
	major, err := javaMajor(string(out))
	if err != nil {
		return fmt.Errorf("%s -version: %w", java, err)
	}
	if major < 11 || major > 17 {
		return fmt.Errorf("%s is Java %d; Cassandra %s runs on Java 11 or 17 (apt-get install openjdk-17-jre-headless, or set option %s)", java, major, Version, OptJava)
	}
	return nil
}

// javaMajor reads the major version from `java -version` output
// (`openjdk version "17.0.15" ...`, or "1.8.0_392" for Java 8).
func javaMajor(out string) (int, error) {
	i := strings.Index(out, "version \"")
	if i < 0 {
		return 0, fmt.Errorf("no version in %q", strings.TrimSpace(out))
	}
	v := out[i+len("version \""):]
	if j := strings.IndexByte(v, '"'); j >= 0 {
		v = v[:j]
	}
	parts := strings.Split(v, ".")
	if parts[0] == "1" && len(parts) > 1 {
		parts = parts[1:]
	}
	n, err := strconv.Atoi(strings.SplitN(parts[0], "-", 2)[0])
	if err != nil {
		return 0, fmt.Errorf("cannot read the Java version %q", v)
	}
	return n, nil
}

// Up starts the nodes one at a time (each waits until it is up and seen
// NORMAL by the nodes before it), creates the keyspace and returns once
// every node is up. On error every started node is stopped again.
func (l Launcher) Up(ctx context.Context, env *launcher.Env, spec launcher.Spec) (*launcher.Cluster, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	if spec.Replicas > 0 {
		return nil, fmt.Errorf("cassandra: replicas do not apply (every node holds data); set the replication factor with option %s", OptRF)
	}
	if spec.Nodes > 16 {
		return nil, fmt.Errorf("cassandra: at most 16 nodes on one machine (each is a JVM of several hundred MB), got %d", spec.Nodes)
	}
	cfg, err := parseOptions(spec.Options)
	if err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	if err := cfg.resolveRF(spec.Nodes); err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	if err := cfg.resolvePaths(); err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	if err := checkJava(ctx, cfg.java); err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	ctx, cancel := launcher.WithDefaultTimeout(ctx, defaultUpTimeout)
	defer cancel()
	dir, temp, err := launcher.ClusterDir(spec, "cassandra", launcher.NodeDataDirs(spec.Nodes, "db"))
	if err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	plans, err := planNodes(env, dir, spec.Nodes)
	if err != nil {
		if temp {
			_ = os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	c := newCluster(spec, dir, temp, cfg, plans)
	ok := false
	defer func() {
		if !ok {
			stopAll(c)
		}
	}()
	seeds := []string{plans[0].peerAddr()}
	for i := range plans {
		if err := plans[i].writeConfig(cfg, seeds); err != nil {
			return nil, fmt.Errorf("cassandra: %w", err)
		}
	}
	for i := range c.Nodes {
		if err := startRetryingGossip(ctx, env, c, i, i+1); err != nil {
			return nil, fmt.Errorf("cassandra: %w", err)
		}
	}
	if err := createKeyspace(ctx, c, cfg); err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	if err := l.Refresh(ctx, c); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// newCluster returns the Cluster record for plans (nodes not yet started).
func newCluster(spec launcher.Spec, dir string, temp bool, cfg config, plans []nodePlan) *launcher.Cluster {
	c := launcher.NewCluster(Kind, spec, dir, temp, cfg.options())
	for i := range plans {
		p := &plans[i]
		c.Nodes = append(c.Nodes, launcher.Node{
			Name:     p.name,
			Addr:     p.addr(),
			PeerAddr: p.peerAddr(),
			DataDir:  p.dbDir,
			LogFile:  p.logFile,
			Argv:     p.argv(cfg),
			Down:     true,
		})
	}
	return c
}

// startAndJoin spawns node i and waits until nodes 0..upTo-1 are all up
// and see each other NORMAL (for a first start upTo is i+1: the nodes
// started so far).
func startAndJoin(ctx context.Context, env *launcher.Env, c *launcher.Cluster, i, upTo int) error {
	n := &c.Nodes[i]
	if len(n.Argv) == 0 {
		return fmt.Errorf("node %s has no recorded command line", n.Name)
	}
	pid, err := env.SpawnNode(ctx, c, n)
	if err != nil {
		return fmt.Errorf("starting %s: %w", n.Name, err)
	}
	n.PID, n.Down = pid, false
	sctx, cancel := launcher.WithDefaultTimeout(ctx, nodeStartTimeout)
	defer cancel()
	if err := waitUp(sctx, c, upTo, i); err != nil {
		_ = launcher.Kill(context.WithoutCancel(ctx), pid)
		n.PID, n.Down = 0, true
		return err
	}
	n.Role = launcher.RoleReplica
	return nil
}

// StartNode starts a stopped node again with its recorded command line
// (same address, ports, data and commit log: Cassandra replays the commit
// log) and waits until every running node sees it up.
func (Launcher) StartNode(ctx context.Context, env *launcher.Env, c *launcher.Cluster, name string) error {
	if c.Kind != Kind {
		return fmt.Errorf("cluster %s is of kind %q, not %q", c.Name, c.Kind, Kind)
	}
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	if n.PID > 0 && launcher.Alive(n.PID) {
		state := "running"
		if launcher.Stopped(n.PID) {
			state = "paused (resume it instead)"
		}
		return fmt.Errorf("node %s is already %s (pid %d)", name, state, n.PID)
	}
	i := 0
	for ; i < len(c.Nodes) && c.Nodes[i].Name != name; i++ {
	}
	return startAndJoin(ctx, env, c, i, len(c.Nodes))
}

// Refresh marks each node up (role replica) or down: a node whose process
// is gone is down with pid 0; one that runs but does not answer a native
// protocol OPTIONS request within pingTimeout (paused, or still starting)
// is down and keeps its pid. The nodes are asked at once, so one slow node
// does not delay the others. It fails only when no running node answers.
func (Launcher) Refresh(ctx context.Context, c *launcher.Cluster) error {
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.PID <= 0 || !launcher.Alive(n.PID) {
			n.PID, n.Down, n.Role = 0, true, launcher.RoleUnknown
			continue
		}
		wg.Add(1)
		go func(i int, addr string) {
			defer wg.Done()
			errs[i] = ping(ctx, addr)
		}(i, n.Addr)
	}
	wg.Wait()
	answered, running := 0, 0
	var lastErr error
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.PID <= 0 {
			continue
		}
		running++
		if errs[i] != nil {
			lastErr = fmt.Errorf("%s: %w", n.Name, errs[i])
			n.Down, n.Role = true, launcher.RoleUnknown
			continue
		}
		answered++
		n.Down, n.Role = false, launcher.RoleReplica
	}
	if running > 0 && answered == 0 {
		return fmt.Errorf("cassandra %s: no running node answered on the native protocol (last error: %v)", c.Name, lastErr)
	}
	return nil
}

// WaitHealthy waits until every running node is up: it answers CQL, has
// finished bootstrapping, and every running node's gossip shows every
// running node NORMAL with its current generation. Nodes that are not
// running are left out (Cassandra serves without them as far as the
// replication factor and consistency level allow). Without a deadline on
// ctx it gives up after two minutes; the error says what it waited for.
func (Launcher) WaitHealthy(ctx context.Context, c *launcher.Cluster) error {
	ctx, cancel := launcher.WithDefaultTimeout(ctx, defaultHealthyTimeout)
	defer cancel()
	return waitUp(ctx, c, len(c.Nodes), -1)
}

// stopAll stops whatever c started (used when Up fails) and removes its
// data the way launcher.Down does.
func stopAll(c *launcher.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = launcher.Down(ctx, c, stopGrace)
}

// errExited says a node's process ended while the launcher waited for it.
var errExited = errors.New("exited during start-up")
