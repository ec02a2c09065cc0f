// Package hbase launches local Apache HBase clusters on HDFS from the jars
// scripts/setup.sh resolves from Maven Central (HBase Version with its
// Thrift2 gateway, Hadoop HadoopVersion, ZooKeeper). Every process is a
// JVM of its own started through launcher.Env.Spawn, with its own loopback
// address (127.0.0.1, .2, ...), configuration written by faultbench under
// DIR/NAME/conf, data under DIR/NAME/data and log in DIR/NAME/node.log:
//
//   - zk: ZooKeeper, standalone;
//   - nn: the HDFS NameNode;
//   - master: the HMaster (role leader while it is the active master);
//   - thrift: HBase's Thrift2 gateway, the HBase Java client the driver
//     reaches (internal/driver/hbase); it runs beside the client on a host
//     of its own, so a node's failure never takes the gateway with it;
//   - per node K: the DataNode nK-dn (role replica) and the region server
//     nK (role primary), both on address 127.0.0.(K+4): one machine, so
//     that a whole-node fault (targets.Target.WholeNode) and network faults
//     reach both.
//
// The write-ahead log is on HDFS (hflush before a write is acknowledged),
// never on the local file system, which cannot hflush. Heaps are small
// (options hbase.heap and hbase.service-heap) so that three nodes fit on
// one machine. Once every process is up, the launcher creates the YCSB
// table (one column family) pre-split on YCSB's key space through the
// gateway and waits until every region is assigned.
package hbase

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
)

// Kind is the target kind this launcher starts.
const Kind = "hbase"

// Timeouts used where the caller's context has no deadline. A JVM takes
// 10-30 s to start on a loaded two-core machine, and a cluster starts ten.
const (
	defaultUpTimeout      = 8 * time.Minute
	defaultHealthyTimeout = 3 * time.Minute
	nodeStartTimeout      = 3 * time.Minute
	formatTimeout         = 2 * time.Minute
	stopGrace             = 15 * time.Second
	queryTimeout          = 3 * time.Second
	pollInterval          = 300 * time.Millisecond
)

// Launcher starts local HBase clusters. It implements launcher.Launcher
// and holds no state: the zero value is ready to use.
type Launcher struct{}

var _ launcher.Launcher = Launcher{}

// Kind implements launcher.Launcher.
func (Launcher) Kind() string { return Kind }

// kindOf says which process a node of an HBase cluster is, by its name.
func kindOf(name string) string {
	switch {
	case name == ZKNode:
		return procZK
	case name == NNNode:
		return procNN
	case name == MasterNode:
		return procMaster
	case name == ThriftNode:
		return procThrift
	case strings.HasSuffix(name, DNSuffix):
		return procDN
	}
	return procRS
}

// WholeNode names the processes of the machine node runs on: the region
// server nK and its DataNode nK-dn together ("nK,nK-dn"); a service
// process is a machine of its own.
func WholeNode(c *launcher.Cluster, node string) string {
	base := strings.TrimSuffix(node, DNSuffix)
	if kindOf(node) != procRS && kindOf(node) != procDN {
		return node
	}
	if _, err := c.Node(base + DNSuffix); err != nil {
		return node
	}
	return base + "," + base + DNSuffix
}

// NodeNames returns the node names of a cluster of n nodes, in the order
// the launcher records them.
func NodeNames(n int) []string {
	out := []string{ZKNode, NNNode, MasterNode, ThriftNode}
	for k := 1; k <= n; k++ {
		out = append(out, "n"+strconv.Itoa(k)+DNSuffix, "n"+strconv.Itoa(k))
	}
	return out
}

// Up starts ZooKeeper, formats HDFS and starts the NameNode, the DataNodes
// (together), the master, the region servers (together) and the gateway,
// creates the table and returns once every region is assigned. On error
// every started process is stopped again.
func (l Launcher) Up(ctx context.Context, env *launcher.Env, spec launcher.Spec) (*launcher.Cluster, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("hbase: %w", err)
	}
	if spec.Replicas > 0 {
		return nil, fmt.Errorf("hbase: replicas do not apply (HDFS keeps the replicas); set them with option %s", OptReplication)
	}
	if len(spec.Hosts) > 0 {
		return nil, errors.New("hbase: nodes run on this machine only")
	}
	if spec.Nodes > 8 {
		return nil, fmt.Errorf("hbase: at most 8 nodes on one machine (each is two JVMs), got %d", spec.Nodes)
	}
	cfg, err := parseOptions(spec.Options)
	if err != nil {
		return nil, fmt.Errorf("hbase: %w", err)
	}
	if err := cfg.resolve(spec.Nodes); err != nil {
		return nil, fmt.Errorf("hbase: %w", err)
	}
	if err := cfg.resolvePaths(); err != nil {
		return nil, fmt.Errorf("hbase: %w", err)
	}
	ctx, cancel := launcher.WithDefaultTimeout(ctx, defaultUpTimeout)
	defer cancel()
	dir, temp, err := launcher.ClusterDir(spec, Kind, dataDirs(spec.Nodes))
	if err != nil {
		return nil, fmt.Errorf("hbase: %w", err)
	}
	ps, err := plan(env, dir, spec.Nodes)
	if err != nil {
		if temp {
			_ = os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("hbase: %w", err)
	}
	c := launcher.NewCluster(Kind, spec, dir, temp, cfg.options())
	byName := map[string]*proc{}
	for _, p := range ps {
		byName[p.name] = p
		c.Nodes = append(c.Nodes, launcher.Node{Name: p.name, Addr: p.addr(), PeerAddr: p.httpAddr(),
			DataDir: p.dataDir, LogFile: p.logFile, Argv: p.argv(cfg), Down: true})
	}
	ok := false
	defer func() {
		if !ok {
			stopAll(c)
		}
	}()
	s := services{zk: byName[ZKNode], nn: byName[NNNode], nodes: spec.Nodes}
	for _, p := range ps {
		if err := p.writeConfig(s, cfg, byName[MasterNode]); err != nil {
			return nil, fmt.Errorf("hbase: %w", err)
		}
	}
	if nn, err := c.Node(NNNode); err == nil {
		// the disk layer (if any) under the NameNode's directory before
		// the format writes there
		if err := env.ReadyDisk(ctx, c, nn); err != nil {
			return nil, fmt.Errorf("hbase: %w", err)
		}
	}
	if err := formatHDFS(ctx, byName[NNNode], cfg); err != nil {
		return nil, fmt.Errorf("hbase: %w", err)
	}
	steps := [][]string{{ZKNode}, {NNNode}, nil, {MasterNode}, nil, {ThriftNode}}
	for k := 1; k <= spec.Nodes; k++ {
		steps[2] = append(steps[2], "n"+strconv.Itoa(k)+DNSuffix)
		steps[4] = append(steps[4], "n"+strconv.Itoa(k))
	}
	for _, step := range steps {
		if err := startTogether(ctx, env, c, step); err != nil {
			return nil, fmt.Errorf("hbase: %w", err)
		}
	}
	if err := createTable(ctx, c, cfg); err != nil {
		return nil, fmt.Errorf("hbase: %w", err)
	}
	if err := l.WaitHealthy(ctx, c); err != nil {
		return nil, fmt.Errorf("hbase: %w", err)
	}
	if err := l.Refresh(ctx, c); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// formatHDFS formats the NameNode's storage (a one-shot JVM).
func formatHDFS(ctx context.Context, nn *proc, cfg config) error {
	fctx, cancel := context.WithTimeout(ctx, formatTimeout)
	defer cancel()
	argv := nn.formatArgv(cfg)
	cmd := launcher.Command(fctx, argv[0], argv[1:]...)
	lf, err := os.OpenFile(nn.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("formatting HDFS: %w", err)
	}
	defer lf.Close()
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("formatting HDFS (NameNode -format): %w\n%s", err, launcher.LogTail(nn.logFile, 15))
	}
	return nil
}

// startTogether spawns the named nodes and waits until each is ready
// (ready); a node that does not become ready is stopped again.
func startTogether(ctx context.Context, env *launcher.Env, c *launcher.Cluster, names []string) error {
	for _, name := range names {
		n, err := c.Node(name)
		if err != nil {
			return err
		}
		pid, err := env.SpawnNode(ctx, c, n)
		if err != nil {
			return fmt.Errorf("starting %s: %w", name, err)
		}
		n.PID, n.Down = pid, false
	}
	sctx, cancel := launcher.WithDefaultTimeout(ctx, nodeStartTimeout)
	defer cancel()
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, _ := c.Node(name)
			errs[i] = ready(sctx, c, n)
		}()
	}
	wg.Wait()
	var out []error
	for i, name := range names {
		if errs[i] == nil {
			continue
		}
		n, _ := c.Node(name)
		out = append(out, fmt.Errorf("%s (%s, pid %d) did not start: %w\n%s", name, kindOf(name), n.PID, errs[i], launcher.LogTail(n.LogFile, 15)))
	}
	return errors.Join(out...)
}

// errExited says a process ended while the launcher waited for it.
var errExited = errors.New("exited during start-up")

// ready waits until node n serves: ZooKeeper answers ruok; the NameNode
// has left safe mode; a DataNode is counted live by the NameNode; the
// master is active; a region server is live at the master; the gateway
// accepts connections.
func ready(ctx context.Context, c *launcher.Cluster, n *launcher.Node) error {
	return poll(ctx, n.Name+" to serve", func(ctx context.Context) error {
		if !launcher.Alive(n.PID) {
			return errExited
		}
		return serves(ctx, c, n)
	})
}

// serves checks once whether n serves (see ready).
func serves(ctx context.Context, c *launcher.Cluster, n *launcher.Node) error {
	switch kindOf(n.Name) {
	case procZK:
		return zkOK(ctx, n.Addr)
	case procNN:
		_, sm, err := hdfsState(ctx, n)
		if err != nil {
			return err
		}
		if sm != "" {
			return fmt.Errorf("in safe mode: %s", sm)
		}
		return nil
	case procDN:
		// the DataNode's own view: registered with the NameNode
		b, err := jmxBean(ctx, n.PeerAddr, qDNInfo)
		if err != nil {
			return err
		}
		if !strings.Contains(str(b, "NamenodeAddresses"), ":") {
			return fmt.Errorf("not registered with the NameNode yet")
		}
		return nil
	case procMaster:
		st, err := askMaster(ctx, n)
		if err != nil {
			return err
		}
		if !st.active {
			return fmt.Errorf("not the active master")
		}
		return nil
	case procRS:
		m, err := c.Node(MasterNode)
		if err != nil {
			return err
		}
		st, err := askMaster(ctx, m)
		if err != nil {
			return fmt.Errorf("asking the master: %w", err)
		}
		if !slices.Contains(st.live, n.Addr) {
			return fmt.Errorf("not live at the master yet (live: %s)", strings.Join(st.live, " "))
		}
		return nil
	}
	return dialOK(ctx, n.Addr)
}

// StartNode starts a stopped process again with its recorded command line
// (same addresses and data; a region server's regions come back through
// the balancer, a DataNode reports its blocks) and waits until it serves.
func (Launcher) StartNode(ctx context.Context, env *launcher.Env, c *launcher.Cluster, name string) error {
	if c.Kind != Kind {
		return fmt.Errorf("cluster %s is of kind %q, not %q", c.Name, c.Kind, Kind)
	}
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	return env.StartRecorded(ctx, c, n, launcher.Restart{
		What: "hbase " + kindOf(name) + " " + name, Timeout: nodeStartTimeout, Grace: stopGrace,
		Ready:  func(ctx context.Context, n *launcher.Node) error { return ready(ctx, c, n) },
		Serves: "serve",
	})
}

// Refresh marks each process up or down and gives it its role: the active
// master is leader, a region server live at the master is primary, a
// DataNode that answers is replica. A process that is gone is down with
// pid 0; one that runs but does not answer (paused, starting, or a region
// server the master declared dead) is down and keeps its pid. It fails
// only when neither the master nor ZooKeeper answers.
func (Launcher) Refresh(ctx context.Context, c *launcher.Cluster) error {
	var mst masterState
	var merr error = errors.New("no master")
	if m, err := c.Node(MasterNode); err == nil && m.PID > 0 && launcher.Alive(m.PID) {
		mst, merr = askMaster(ctx, m)
	}
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.PID <= 0 || !launcher.Alive(n.PID) {
			n.PID, n.Down, n.Role = 0, true, launcher.RoleUnknown
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch kindOf(n.Name) {
			case procMaster:
				errs[i] = merr
				if merr == nil && !mst.active {
					errs[i] = errors.New("standby")
				}
			case procRS:
				if merr != nil {
					errs[i] = dialOK(ctx, n.Addr)
				} else if !slices.Contains(mst.live, n.Addr) {
					errs[i] = errors.New("not live at the master")
				}
			case procDN:
				_, errs[i] = jmxBean(ctx, n.PeerAddr, qDNInfo)
			case procZK:
				errs[i] = zkOK(ctx, n.Addr)
			default:
				errs[i] = dialOK(ctx, n.Addr)
			}
		}()
	}
	wg.Wait()
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.PID <= 0 {
			continue
		}
		n.Down, n.Role = errs[i] != nil, launcher.RoleUnknown
		if errs[i] != nil {
			continue
		}
		switch kindOf(n.Name) {
		case procMaster:
			n.Role = launcher.RoleLeader
		case procRS:
			n.Role = launcher.RolePrimary
		case procDN:
			n.Role = launcher.RoleReplica
		}
	}
	zk, _ := c.Node(ZKNode)
	if merr != nil && (zk == nil || zk.Down) {
		return fmt.Errorf("hbase %s: neither the master nor ZooKeeper answers (master: %v)", c.Name, merr)
	}
	return nil
}

// WaitHealthy waits until every running process serves, the NameNode
// counts every running DataNode live and is out of safe mode, the master
// is active with every running region server live, no region is in
// transition, and every region of the table is assigned to a live region
// server. Without a deadline on ctx it gives up after three minutes.
func (Launcher) WaitHealthy(ctx context.Context, c *launcher.Cluster) error {
	ctx, cancel := launcher.WithDefaultTimeout(ctx, defaultHealthyTimeout)
	defer cancel()
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.PID <= 0 || !launcher.Alive(n.PID) {
			continue
		}
		if err := ready(ctx, c, n); err != nil {
			return err
		}
	}
	cfg, _ := parseOptions(launcher.OwnOptions(c.Options))
	return poll(ctx, "every region assigned", func(ctx context.Context) error {
		m, err := c.Node(MasterNode)
		if err != nil {
			return err
		}
		st, err := askMaster(ctx, m)
		if err != nil {
			return err
		}
		if st.rit != 0 {
			return fmt.Errorf("%d regions in transition", st.rit)
		}
		regs, err := regionsOf(ctx, c, cfg.table)
		if err != nil {
			return err
		}
		for _, r := range regs {
			if !slices.Contains(st.live, r.server) {
				return fmt.Errorf("region %q is on %s, which is not live", r.start, r.server)
			}
		}
		return nil
	})
}

// stopAll stops whatever c started (used when Up fails) and removes its
// data the way launcher.Down does.
func stopAll(c *launcher.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_ = launcher.Down(ctx, c, stopGrace)
}

// LogDir returns the directory of a node's files (for messages).
func LogDir(n *launcher.Node) string { return filepath.Dir(n.LogFile) }
