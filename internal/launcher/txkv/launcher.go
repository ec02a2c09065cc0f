// Package txkv starts local clusters of txkv, the transactional key-value
// store of Ahmad et al. (internal/txkv): one coordinator (transaction manager,
// recovery manager, region master) and N region servers, each a faultbench
// process (`faultbench node txkv-coordinator ...`, `faultbench node
// txkv-server ...`) so that each can be killed, stopped or paused alone.
// All processes share one storage directory (the stand-in for HDFS) in the
// cluster directory. RunCoordinator and RunServer are the bodies of the
// hidden node commands.
package txkv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// Kind is the target kind this launcher starts.
const Kind = "txkv"

// Node roles reported by Refresh.
const (
	RoleCoordinator  = "coordinator"
	RoleRegionServer = "region-server"
)

// CoordinatorNode is the name of the coordinator node; servers are s1, s2 ...
const CoordinatorNode = "coord"

const stopGrace = 10 * time.Second

// Launcher starts txkv clusters. It holds no state; the zero value is ready.
type Launcher struct{}

var _ launcher.Launcher = Launcher{}

// Kind implements launcher.Launcher.
func (Launcher) Kind() string { return Kind }

// StorageDir is the shared storage directory of a cluster.
func StorageDir(c *launcher.Cluster) string { return filepath.Join(c.Dir, "storage") }

func coordArgv(self, addr, dir, storage string, servers int, o options) []string {
	return []string{self, "node", "txkv-coordinator",
		"--addr", addr, "--dir", dir, "--storage", storage,
		"--servers", strconv.Itoa(servers), "--regions", strconv.Itoa(o.regions),
		"--persistence", string(o.persistence), "--heartbeat", o.heartbeat.String(),
		"--session-timeout", o.sessionTimeout.String(), "--wal-sync-interval", o.walSync.String(),
		"--memstore-flush-size", strconv.FormatInt(o.memstore, 10)}
}

func serverArgv(self, name, addr, coordAddr, storage string) []string {
	return []string{self, "node", "txkv-server", "--name", name, "--addr", addr, "--coordinator", coordAddr, "--storage", storage}
}

// Up implements launcher.Launcher: it starts the coordinator and
// spec.Nodes region servers (spec.Nodes nodes of txkv.servers-per-node
// servers each with node groups) and waits (txkv.start-timeout) until every
// server registered and every region is online. On failure it stops what
// it started.
func (l Launcher) Up(ctx context.Context, env *launcher.Env, spec launcher.Spec) (cl *launcher.Cluster, err error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("txkv cluster: %w", err)
	}
	if spec.Replicas != 0 {
		return nil, fmt.Errorf("txkv cluster: replicas must be 0 (durability comes from the shared storage and the recovery log), got %d", spec.Replicas)
	}
	o, err := parseOptions(spec.Options)
	if err != nil {
		return nil, fmt.Errorf("txkv cluster: %w", err)
	}
	if env == nil || env.Addrs == nil || env.Self == "" {
		return nil, errors.New("txkv cluster: env must have Self and Addrs (use launcher.NewEnv)")
	}
	name := spec.Name
	if name == "" {
		name = Kind
	}
	c := &launcher.Cluster{Kind: Kind, Name: name, Dir: spec.Dir, Options: o.asMap(), Detached: spec.Detached,
		OwnerPID: os.Getpid(), KeepData: spec.KeepData, CreatedAt: time.Now().UTC()}
	if c.Dir == "" {
		d, err := os.MkdirTemp("", "faultbench-txkv-*")
		if err != nil {
			return nil, fmt.Errorf("txkv cluster: creating a temp dir: %w", err)
		}
		c.Dir, c.TempDir = d, true
	} else if c.Dir, err = filepath.Abs(c.Dir); err != nil {
		return nil, fmt.Errorf("txkv cluster: %w", err)
	}
	defer func() {
		if err != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopGrace+10*time.Second)
			defer cancel()
			if derr := launcher.Down(dctx, c, stopGrace); derr != nil {
				err = fmt.Errorf("%w (and cleaning up failed: %v)", err, derr)
			}
			cl = nil
		}
	}()
	storage := StorageDir(c)
	if ents, err := os.ReadDir(storage); err == nil && len(ents) > 0 {
		return c, fmt.Errorf("txkv cluster: storage %s already holds data; remove it or choose another directory", storage)
	}
	// node i (the coordinator is 0) listens on env.Addrs.Host(i): one
	// address for all on loopback, its own with network namespaces
	used := map[string]bool{}
	port := func(i int) (string, error) {
		host := env.Addrs.Host(i)
		for range 20 {
			p, err := env.Addrs.Port(host)
			if err != nil {
				return "", err
			}
			a := host + ":" + strconv.Itoa(p)
			if !used[a] {
				used[a] = true
				return a, nil
			}
		}
		return "", fmt.Errorf("no distinct free port on %s", host)
	}
	caddr, err := port(0)
	if err != nil {
		return c, fmt.Errorf("txkv cluster: %w", err)
	}
	servers := o.serverNames(spec.Nodes)
	if _, netns := env.Addrs.(launcher.ArgvWrapper); netns && o.perNode > 0 {
		// the cluster network names one node per namespace
		return c, fmt.Errorf("txkv cluster: %s does not work with --net (a namespace per node) yet; leave out one of them", OptServersPerNode)
	}
	cdir := filepath.Join(c.Dir, CoordinatorNode)
	c.Nodes = append(c.Nodes, launcher.Node{Name: CoordinatorNode, Addr: caddr, DataDir: filepath.Join(cdir, "data"),
		LogFile: filepath.Join(cdir, "node.log"), Argv: env.NodeArgv(0, coordArgv(env.Self, caddr, filepath.Join(cdir, "data"), storage, len(servers), o)),
		Role: RoleCoordinator, Down: true})
	for idx, n := range servers {
		i := idx + 1 // the host (network namespace) of the server
		addr, err := port(i)
		if err != nil {
			return c, fmt.Errorf("txkv cluster: %w", err)
		}
		c.Nodes = append(c.Nodes, launcher.Node{Name: n, Addr: addr, DataDir: storage,
			LogFile: filepath.Join(c.Dir, n, "node.log"), Argv: env.NodeArgv(i, serverArgv(env.Self, n, addr, caddr, storage)),
			Role: RoleRegionServer, Down: true})
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		// with disk: fuse the coordinator's directory (its recovery log)
		// and the storage the servers share (WALs, region files) go on
		// the disk layer first; the servers share the storage's layer
		pid, err := env.SpawnNode(ctx, c, n)
		if err != nil {
			return c, fmt.Errorf("txkv cluster: starting %s: %w", n.Name, err)
		}
		n.PID, n.Down = pid, false
		if i == 0 {
			wctx, cancel := context.WithTimeout(ctx, o.startTimeout)
			err := launcher.WaitTCP(wctx, n.Addr)
			cancel()
			if err != nil {
				return c, fmt.Errorf("txkv cluster: coordinator did not listen: %w\n%s", err, launcher.LogTail(n.LogFile, 15))
			}
		}
	}
	wctx, cancel := context.WithTimeout(ctx, o.startTimeout)
	defer cancel()
	if err := waitHealthy(wctx, c, true); err != nil {
		return c, fmt.Errorf("txkv cluster %s did not come up within %v: %w", name, o.startTimeout, err)
	}
	if err := l.Refresh(ctx, c); err != nil {
		return c, err
	}
	return c, nil
}

// StartNode implements launcher.Launcher: it starts a stopped node again
// with its recorded command line and waits until it serves (a server: it
// registered with the coordinator; the coordinator: it answers). The
// coordinator restarts on its address and data directory and recovers
// from them: its servers keep their registrations, and it accepts
// transactions once it has replayed its log (WaitHealthy waits for that).
func (Launcher) StartNode(ctx context.Context, env *launcher.Env, c *launcher.Cluster, name string) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	o, err := parseOptions(c.Options)
	if err != nil {
		o = defaultOptions()
	}
	return env.StartRecorded(ctx, c, n, launcher.Restart{
		What: "txkv node " + name, Timeout: o.startTimeout, Grace: stopGrace, Serves: "serve",
		Ready: func(ctx context.Context, n *launcher.Node) error {
			if name != CoordinatorNode {
				return waitRegistered(ctx, c, n)
			}
			if err := launcher.WaitTCP(ctx, n.Addr); err != nil {
				return err
			}
			return waitAnswers(ctx, c)
		},
	})
}

// coordinatorOf returns the coordinator node.
func coordinatorOf(c *launcher.Cluster) (*launcher.Node, error) { return c.Node(CoordinatorNode) }

// Status asks the cluster's coordinator for its view.
func Status(ctx context.Context, c *launcher.Cluster) (wire.ClusterStatus, error) {
	cn, err := coordinatorOf(c)
	if err != nil {
		return wire.ClusterStatus{}, err
	}
	conn := wire.NewConn(cn.Addr)
	defer conn.Close()
	var st wire.ClusterStatus
	if err := conn.Call(ctx, "Coord.ClusterStatus", &wire.ClientArgs{}, &st); err != nil {
		return st, fmt.Errorf("txkv coordinator %s: %w", cn.Addr, err)
	}
	return st, nil
}

// Refresh implements launcher.Launcher: roles are fixed (coordinator,
// region-server); a server is down when its process is gone or the
// coordinator does not count it as live; ID is a server's current
// registration id.
func (Launcher) Refresh(ctx context.Context, c *launcher.Cluster) error {
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if !launcher.RunsNode(n) {
			n.PID, n.Down = 0, true
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := Status(sctx, c)
	if err != nil {
		if cn, _ := coordinatorOf(c); cn != nil {
			cn.Down = true
		}
		return nil // the coordinator does not answer: it is down, the servers may be fine
	}
	live := map[string]wire.ServerStatus{}
	for _, s := range st.Servers {
		if s.Live {
			live[s.Name] = s
		}
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Name == CoordinatorNode {
			n.Down = !launcher.RunsNode(n)
			n.Role = RoleCoordinator
			continue
		}
		n.Role = RoleRegionServer
		s, ok := live[n.Name]
		n.Down = !launcher.RunsNode(n) || !ok || s.Addr != n.Addr
		if ok {
			n.ID = strconv.FormatUint(s.ID, 10)
		}
	}
	return nil
}

// WaitHealthy implements launcher.Launcher: the coordinator answers (and,
// after a restart, has replayed its log), every running server is
// registered, no server whose process is gone is still counted as live
// (its failure has been detected), and every region is online. Without a deadline on ctx it gives up after 60 s.
func (Launcher) WaitHealthy(ctx context.Context, c *launcher.Cluster) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
	}
	if err := waitHealthy(ctx, c, false); err != nil {
		return fmt.Errorf("txkv cluster %s not healthy: %w", c.Name, err)
	}
	return nil
}

func waitHealthy(ctx context.Context, c *launcher.Cluster, requireAll bool) error {
	start := time.Now()
	for {
		last := checkHealthy(ctx, c, requireAll)
		if last == nil {
			return nil
		}
		var ne *nodeExited
		if requireAll && errors.As(last, &ne) {
			n, _ := c.Node(ne.name)
			return fmt.Errorf("%w\n%s", last, launcher.LogTail(n.LogFile, 15))
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("gave up after %v waiting for the coordinator to see every running server registered and every region online; last problem: %w",
				time.Since(start).Round(time.Millisecond), last)
		case <-t.C:
		}
	}
}

type nodeExited struct{ name string }

func (e *nodeExited) Error() string { return "node " + e.name + " exited" }

func checkHealthy(ctx context.Context, c *launcher.Cluster, requireAll bool) error {
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if requireAll && !launcher.RunsNode(n) {
			return &nodeExited{n.Name}
		}
		if launcher.RunsNode(n) && launcher.Stopped(n.PID) {
			return fmt.Errorf("node %s (pid %d) is paused (SIGSTOP)", n.Name, n.PID)
		}
	}
	cn, err := coordinatorOf(c)
	if err != nil {
		return err
	}
	if !launcher.RunsNode(cn) {
		return errors.New("the coordinator is not running")
	}
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := Status(sctx, c)
	if err != nil {
		return err
	}
	live := map[string]wire.ServerStatus{}
	for _, s := range st.Servers {
		if s.Live {
			live[s.Name] = s
		}
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Name == CoordinatorNode {
			continue
		}
		s, ok := live[n.Name]
		switch {
		case launcher.RunsNode(n) && !ok:
			return fmt.Errorf("server %s is running but not registered", n.Name)
		case !launcher.RunsNode(n) && ok:
			return fmt.Errorf("server %s is gone but still counted as live (failure not detected yet)", n.Name)
		case ok && s.Addr != n.Addr:
			return fmt.Errorf("server %s registered with %s, expected %s", n.Name, s.Addr, n.Addr)
		}
	}
	for _, r := range st.Map.Regions {
		if !r.Online {
			return fmt.Errorf("region %v is not online (on %q)", r.Region, r.Server)
		}
	}
	if st.Recovering {
		return errors.New("the coordinator is replaying its recovery log after a restart")
	}
	for _, cl := range st.Clients {
		if cl.Dead {
			return fmt.Errorf("client %s (%d) is being recovered", cl.Name, cl.ID)
		}
	}
	return nil
}

// waitAnswers waits until the coordinator answers a status request.
func waitAnswers(ctx context.Context, c *launcher.Cluster) error {
	for {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := Status(sctx, c)
		cancel()
		if err == nil {
			return nil
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// waitRegistered waits until server n is registered and live.
func waitRegistered(ctx context.Context, c *launcher.Cluster, n *launcher.Node) error {
	var last error
	for {
		if !launcher.Alive(n.PID) {
			return errors.New("process exited")
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := Status(sctx, c)
		cancel()
		if err == nil {
			last = fmt.Errorf("server %s not registered yet", n.Name)
			for _, s := range st.Servers {
				if s.Name == n.Name && s.Live && s.Addr == n.Addr {
					n.ID = strconv.FormatUint(s.ID, 10)
					return nil
				}
			}
		} else {
			last = err
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-t.C:
		}
	}
}

// Connect points the txkv driver at a launched cluster's coordinator
// (target.Target.Connect), leaving properties the user set alone.
func Connect(p *properties.Properties, c *launcher.Cluster) {
	if !p.Has("txkv.coordinator") {
		if cn, err := coordinatorOf(c); err == nil {
			p.Set("txkv.coordinator", cn.Addr)
		}
	}
	if !p.Has("faultbench.cluster") {
		p.Set("faultbench.cluster", c.Name)
	}
	p.Declare("faultbench.cluster")
}
