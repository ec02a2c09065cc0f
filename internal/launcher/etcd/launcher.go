// Package etcd is faultbench's embedded default target: a real etcd cluster
// whose members are faultbench processes themselves. RunNode is the body of
// the hidden command `faultbench node etcd ...` that runs one member through
// go.etcd.io/etcd/server/v3/embed; Launcher starts such members as separate
// processes (one per member, so that each can be killed, paused or
// partitioned alone), finds the leader, and restarts members with their data.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
)

// Kind is the target kind this launcher starts.
const Kind = "etcd"

// stopGrace is how long a member gets to stop after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// Launcher starts local etcd clusters whose members run as `faultbench node
// etcd` processes. It implements launcher.Launcher; it holds no state, so the
// zero value is ready to use.
type Launcher struct{}

var _ launcher.Launcher = Launcher{}

// Kind implements launcher.Launcher.
func (Launcher) Kind() string { return Kind }

// memberPlan is what one member listens on and where it keeps its files.
type memberPlan struct {
	name, host     string
	clientPort     int
	peerPort       int
	dataDir, logFn string
}

func (m memberPlan) clientURL() string {
	return "http://" + hostPort(m.host, m.clientPort)
}
func (m memberPlan) peerURL() string { return "http://" + hostPort(m.host, m.peerPort) }

func hostPort(h string, p int) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]:" + strconv.Itoa(p)
	}
	return h + ":" + strconv.Itoa(p)
}

// nodeArgv is the command line of one member. state is "new" for the first
// start and "existing" for restarts; readyTimeout 0 means wait forever.
func nodeArgv(self string, m memberPlan, initialCluster, token, state string, o options, readyTimeout time.Duration) []string {
	argv := []string{self, "node", "etcd",
		"--name", m.name,
		"--data-dir", m.dataDir,
		"--client-url", m.clientURL(),
		"--peer-url", m.peerURL(),
		"--initial-cluster", initialCluster,
		"--initial-cluster-state", state,
		"--initial-cluster-token", token,
		"--heartbeat-interval", strconv.FormatUint(uint64(o.heartbeatMs), 10),
		"--election-timeout", strconv.FormatUint(uint64(o.electionMs), 10),
		"--snapshot-count", strconv.FormatUint(o.snapshotCount, 10),
		"--quota-bytes", strconv.FormatInt(o.quotaBytes, 10),
		"--auto-compaction", o.autoCompaction.String(),
		"--log-level", o.logLevel,
	}
	if readyTimeout > 0 {
		argv = append(argv, "--ready-timeout", readyTimeout.String())
	}
	if o.unsafeNoFsync {
		argv = append(argv, "--unsafe-no-fsync")
	}
	return argv
}

// planAddrs asks env.Addrs for a client and a peer port per member, all distinct.
func planAddrs(env *launcher.Env, n int) ([]memberPlan, error) {
	used := map[string]bool{}
	port := func(host string) (int, error) {
		for range 20 {
			p, err := env.Addrs.Port(host)
			if err != nil {
				return 0, err
			}
			if k := hostPort(host, p); !used[k] {
				used[k] = true
				return p, nil
			}
		}
		return 0, fmt.Errorf("no distinct free port on %s after 20 tries", host)
	}
	plans := make([]memberPlan, n)
	for i := range plans {
		host := env.Addrs.Host(i)
		cp, err := port(host)
		if err != nil {
			return nil, err
		}
		pp, err := port(host)
		if err != nil {
			return nil, err
		}
		plans[i] = memberPlan{name: "n" + strconv.Itoa(i+1), host: host, clientPort: cp, peerPort: pp}
	}
	return plans, nil
}

// Up implements launcher.Launcher: it starts spec.Nodes members, waits until
// they agree on a leader and serve a linearizable read (at most the
// etcd.start-timeout option, default 30 s), and fills in member ids and roles.
// On failure it stops every member it started, removes what it created, and
// returns an error naming what it waited for with the tail of the failing
// member's log.
func (l Launcher) Up(ctx context.Context, env *launcher.Env, spec launcher.Spec) (*launcher.Cluster, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("etcd cluster: %w", err)
	}
	if spec.Replicas != 0 {
		return nil, fmt.Errorf("etcd cluster: replicas must be 0 (every etcd member is a voting replica; use nodes), got %d", spec.Replicas)
	}
	o, err := parseOptions(spec.Options)
	if err != nil {
		return nil, fmt.Errorf("etcd cluster: %w", err)
	}
	if env == nil || env.Addrs == nil || env.Self == "" {
		return nil, errors.New("etcd cluster: env must have Self and Addrs (use launcher.NewEnv)")
	}
	name := spec.Name
	if name == "" {
		name = Kind
	}
	// Free ports are found by binding and releasing them, so another process
	// may take one before a member binds it. Such a start is retried with
	// new ports, unless its data is to be kept in place.
	for attempt := 1; ; attempt++ {
		if len(spec.Hosts) > 0 {
			return l.upOnHosts(ctx, env, spec, o, name)
		}
		c, err := l.upOnce(ctx, env, spec, o, name)
		if err == nil || !errors.Is(err, errPortTaken) || attempt == 3 || ctx.Err() != nil ||
			(spec.KeepData && spec.Dir != "") {
			return c, err
		}
	}
}

// errPortTaken marks an Up attempt that failed because a port was taken.
var errPortTaken = errors.New("a member's port was taken")

// upOnce is one attempt of Up; on error it stops and removes what it started.
func (l Launcher) upOnce(ctx context.Context, env *launcher.Env, spec launcher.Spec, o options, name string) (cl *launcher.Cluster, err error) {
	c := &launcher.Cluster{
		Kind:      Kind,
		Name:      name,
		Dir:       spec.Dir,
		Options:   o.asMap(),
		Detached:  spec.Detached,
		OwnerPID:  os.Getpid(),
		KeepData:  spec.KeepData,
		CreatedAt: time.Now().UTC(),
	}
	if c.Dir == "" {
		d, err := os.MkdirTemp("", "faultbench-etcd-*")
		if err != nil {
			return nil, fmt.Errorf("etcd cluster: creating a temp dir: %w", err)
		}
		c.Dir, c.TempDir = d, true
	} else {
		abs, err := filepath.Abs(c.Dir)
		if err != nil {
			return nil, fmt.Errorf("etcd cluster: %w", err)
		}
		c.Dir = abs
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

	plans, err := planAddrs(env, spec.Nodes)
	if err != nil {
		return c, fmt.Errorf("etcd cluster: assigning addresses: %w", err)
	}
	var ic []string
	for i := range plans {
		plans[i].dataDir = filepath.Join(c.Dir, plans[i].name, "data")
		plans[i].logFn = filepath.Join(c.Dir, plans[i].name, "node.log")
		if ents, err := os.ReadDir(plans[i].dataDir); err == nil && len(ents) > 0 {
			return c, fmt.Errorf("etcd cluster: data dir %s already holds data; remove it or choose another directory", plans[i].dataDir)
		}
		ic = append(ic, plans[i].name+"="+plans[i].peerURL())
	}
	initialCluster := strings.Join(ic, ",")
	token := "faultbench-" + name + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)

	for i, p := range plans {
		c.Nodes = append(c.Nodes, launcher.Node{
			Name:     p.name,
			Addr:     hostPort(p.host, p.clientPort),
			PeerAddr: hostPort(p.host, p.peerPort),
			DataDir:  p.dataDir,
			LogFile:  p.logFn,
			Argv:     env.NodeArgv(i, nodeArgv(env.Self, p, initialCluster, token, "new", o, o.startTimeout)),
			Down:     true,
		})
	}
	if err := startMembers(ctx, env, c); err != nil {
		return c, err
	}
	if err := l.waitUp(ctx, c, o, spec.Nodes); err != nil {
		return c, err
	}
	// From now on a member (re)starts into an existing cluster, and may wait
	// for its peers as long as it takes (they may be down on purpose).
	for i := range c.Nodes {
		c.Nodes[i].Argv = env.NodeArgv(i, nodeArgv(env.Self, plans[i], initialCluster, token, "existing", o, 0))
	}
	return c, nil
}

// startMembers spawns every member of c (on its host).
func startMembers(ctx context.Context, env *launcher.Env, c *launcher.Cluster) error {
	for i := range c.Nodes {
		n := &c.Nodes[i]
		pid, err := env.SpawnNode(ctx, c, n)
		if err != nil {
			return fmt.Errorf("etcd cluster: starting member %s: %w", n.Name, err)
		}
		n.PID, n.Down = pid, false
	}
	return nil
}

// waitUp waits until the new cluster c is healthy and fills in ids and
// roles; the error quotes the failing member's log.
func (l Launcher) waitUp(ctx context.Context, c *launcher.Cluster, o options, nodes int) error {
	name := c.Name
	wctx, cancel := context.WithTimeout(ctx, o.startTimeout)
	defer cancel()
	if err := waitHealthy(wctx, c, true); err != nil {
		// The log goes with the cluster's directory, so quote it now.
		culprit := &c.Nodes[0]
		var me *memberError
		if errors.As(err, &me) {
			if n, nerr := c.Node(me.member); nerr == nil {
				culprit = n
			}
		}
		tail := c.NodeLogTail(context.WithoutCancel(ctx), culprit, 15)
		if me != nil && me.exited && strings.Contains(tail, "address already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return fmt.Errorf("etcd cluster %s: %d members did not come up within %v: %w\n%s",
			name, nodes, o.startTimeout, err, tail)
	}
	if err := l.Refresh(ctx, c); err != nil {
		return fmt.Errorf("etcd cluster %s: %w", name, err)
	}
	return nil
}

// StartNode implements launcher.Launcher: it starts the stopped member name
// again with its recorded command line (same data directory and addresses;
// --initial-cluster-state existing, which etcd ignores when the data
// directory already holds the member). If enough members run for a quorum it
// waits until the member serves clients and sees a leader; otherwise only
// until it listens (a member cannot serve before a quorum is back). On
// failure the process is stopped again and the error carries its log tail.
func (Launcher) StartNode(ctx context.Context, env *launcher.Env, c *launcher.Cluster, name string) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	o, err := parseOptions(c.Options)
	if err != nil {
		o = defaultOptions()
	}
	others := 0
	for i := range c.Nodes {
		if c.Nodes[i].Name != name && c.RunsNodeOn(ctx, &c.Nodes[i]) {
			others++
		}
	}
	quorum := others+1 >= len(c.Nodes)/2+1
	serves := "listen for clients"
	if quorum {
		serves = "rejoin the cluster and serve clients"
	}
	return env.StartRecorded(ctx, c, n, launcher.Restart{
		What: "etcd member " + name, Timeout: o.startTimeout, Grace: stopGrace, Serves: serves,
		Ready: func(ctx context.Context, n *launcher.Node) error { return waitMember(ctx, c, n, quorum) },
	})
}
