// Package postgresha launches PostgreSQL 15 clusters with automatic
// failover by pg_auto_failover 2.0 (Debian's postgresql-15 and
// postgresql-15-auto-failover): one monitor and Spec.Nodes data nodes, the
// first of which starts as the primary and the others as its standbys.
//
// Every pg_autoctl service (the monitor's and each data node's keeper) is
// started through launcher.Env.Spawn as `unshare --pid --fork -- setpriv ...
// pg_autoctl run`: it runs as the postgres user (PostgreSQL refuses root),
// with its own HOME and XDG directories, as the init process of its own PID
// namespace. pg_autoctl starts the node's postgres inside that namespace,
// so one SIGKILL of pg_autoctl takes the keeper and its postgres down
// together, as a machine crash would, and nothing is left behind.
//
// A cluster of N data nodes has 2N+1 faultbench nodes:
//
//	monitor      the monitor (pg_autoctl and its postgres)          role monitor
//	nK-keeper    data node K as a whole: pg_autoctl keeper + postgres role keeper
//	nK           data node K's postgres server (postmaster) alone   role primary or replica
//
// kill nK is a crash of the postgres server only (the keeper restarts it, or
// the monitor fails over); kill nK-keeper is a crash of the whole node. The
// postmaster's pid changes whenever the keeper restarts it; Refresh finds
// the current one.
//
// Node K's files live in DIR/nK: pgdata (PGDATA), xdg (pg_autoctl's config
// and state), backup (pg_basebackup's staging) and node.log (pg_autoctl's
// output; postgres logs to pgdata/log).
package postgresha

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/procstat"
	"github.com/faultbench/faultbench/internal/properties"
)

// Kind is the target kind.
const Kind = "postgres-ha"

// Roles besides launcher.RolePrimary and launcher.RoleReplica.
const (
	RoleMonitor = "monitor"
	RoleKeeper  = "keeper"
)

// MonitorName is the monitor's node name.
const MonitorName = "monitor"

// KeeperSuffix ends the name of a data node's whole-node entry (n1-keeper).
const KeeperSuffix = "-keeper"

// Database is the database pg_auto_failover creates on the data nodes and
// clients use; User is the role they connect as.
const (
	Database = "faultbench"
	User     = "postgres"
)

const (
	defaultUpTimeout      = 5 * time.Minute
	defaultHealthyTimeout = 2 * time.Minute
	nodeStartTimeout      = 90 * time.Second
	stopGrace             = 10 * time.Second
	queryTimeout          = 3 * time.Second
	pollInterval          = 200 * time.Millisecond
)

// Launcher starts postgres-ha clusters. Spec.Nodes counts the data nodes
// (default 3: a primary and two standbys); the monitor comes on top.
// Spec.Replicas must be 0. The zero value is ready to use.
type Launcher struct{}

var _ launcher.Launcher = Launcher{}

// Kind implements launcher.Launcher.
func (Launcher) Kind() string { return Kind }

// RefuseTrialReuse says why one postgres-ha cluster cannot serve several
// trials of a scenario (experiment's trials mode reuse refuses it before
// anything starts). Seen on 2026-11-27 (docs/results/failover-compare.md):
// after the first trial's failover (n1's postgres killed, n2 promoted,
// n1 rewound to a standby), killing n2's postgres in the second trial left
// pg_auto_failover 2.0's monitor with every data node in report_lsn and
// the old primary n2 assigned fast_forward with its postgres not running;
// the cluster never elected a primary again (not healthy within 5
// minutes, the monitor not answering faultbench's health checks for a
// while). A fresh cluster per trial has no such history.
func (Launcher) RefuseTrialReuse() error {
	return errors.New("after a failover, a second failover on the same pg_auto_failover cluster wedged it (every data node in report_lsn, the old primary in fast_forward without its postgres, no primary for 5 minutes)")
}

// nodePlan is where one pg_autoctl service lives.
type nodePlan struct {
	name    string // monitor, n1, ...
	host    string
	port    int
	dir     string
	logFile string
	// wrap runs a program inside the node's network namespace (the
	// netns-exec prefix of launcher.ArgvWrapper), nil on 127.0.0.1.
	wrap []string
}

func (p nodePlan) pgdata() string { return filepath.Join(p.dir, "pgdata") }
func (p nodePlan) addr() string   { return net.JoinHostPort(p.host, strconv.Itoa(p.port)) }

// Up starts the monitor, then the primary, then the standbys one after the
// other, and returns once the monitor reports one primary and every other
// data node as a secondary. On error whatever was started is stopped.
func (l Launcher) Up(ctx context.Context, env *launcher.Env, spec launcher.Spec) (*launcher.Cluster, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("postgres-ha: %w", err)
	}
	if spec.Replicas != 0 {
		return nil, fmt.Errorf("postgres-ha: --nodes counts the data nodes (one primary, the rest standbys); replicas must be 0, got %d", spec.Replicas)
	}
	if spec.Nodes > 16 {
		return nil, fmt.Errorf("postgres-ha: at most 16 data nodes on one machine, got %d", spec.Nodes)
	}
	cfg, err := parseOptions(spec.Options)
	if err != nil {
		return nil, fmt.Errorf("postgres-ha: %w", err)
	}
	if err := cfg.resolve(); err != nil {
		return nil, fmt.Errorf("postgres-ha: %w", err)
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("postgres-ha: faultbench must run as root to start postgres-ha (it runs each pg_autoctl as the postgres user in its own PID namespace)")
	}
	ctx, cancel := launcher.WithDefaultTimeout(ctx, defaultUpTimeout)
	defer cancel()
	dir, temp, err := launcher.ClusterDir(spec, "postgres-ha", append(launcher.NodeDataDirs(spec.Nodes, "pgdata"), filepath.Join(MonitorName, "pgdata")))
	if err != nil {
		return nil, fmt.Errorf("postgres-ha: %w", err)
	}
	plans, err := planNodes(env, dir, spec.Nodes)
	if err != nil {
		if temp {
			_ = os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("postgres-ha: %w", err)
	}
	c := newCluster(spec, dir, temp, cfg, plans)
	ok := false
	defer func() {
		if !ok {
			stopAll(c)
		}
	}()
	if err := os.Chown(dir, int(cfg.uid), int(cfg.gid)); err != nil {
		return c, fmt.Errorf("postgres-ha: chown %s: %w", dir, err)
	}
	if err := createMonitor(ctx, env, c, cfg, plans[0]); err != nil {
		return c, fmt.Errorf("postgres-ha: monitor: %w", err)
	}
	monitorURI := monitorURI(plans[0].addr())
	for i, p := range plans[1:] {
		stop := func() {}
		if i > 0 { // a standby's pg_basebackup waits for a checkpoint on the primary
			var nudge context.Context
			nudge, stop = context.WithCancel(ctx)
			go nudgeCheckpoints(nudge, plans[1].addr())
		}
		err := createDataNode(ctx, env, c, cfg, p, monitorURI, i == 0)
		stop()
		if err != nil {
			return c, fmt.Errorf("postgres-ha: %s: %w", p.name, err)
		}
	}
	if err := l.WaitHealthy(ctx, c); err != nil {
		return c, err
	}
	if err := l.Refresh(ctx, c); err != nil {
		return c, err
	}
	ok = true
	return c, nil
}

// planNodes assigns directories and addresses (from env.Addrs) to the
// monitor (plans[0]) and n data nodes (plans[1..n]). Data node K gets
// env.Addrs.Host(K-1); the monitor gets Host(n). In a cluster network
// (--net) each of them runs in that address's namespace (plan.wrap).
func planNodes(env *launcher.Env, dir string, n int) ([]nodePlan, error) {
	used := map[string]bool{}
	plans := make([]nodePlan, n+1)
	for i := range plans {
		p := &plans[i]
		idx := i - 1 // data node K is the addresser's node K-1, the monitor comes last
		if i == 0 {
			idx = n
			p.name = MonitorName
		} else {
			p.name = "n" + strconv.Itoa(i)
		}
		p.host = env.Addrs.Host(idx)
		p.wrap, _ = launcher.SplitWrapper(env.NodeArgv(idx, []string{"pg_autoctl"}))
		p.dir = filepath.Join(dir, p.name)
		p.logFile = filepath.Join(p.dir, "node.log")
		for try := 0; ; try++ {
			port, err := env.Addrs.Port(p.host)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.name, err)
			}
			// distinct ports across hosts too: every postgres server
			// puts its unix socket in /var/run/postgresql (.s.PGSQL.PORT),
			// which the nodes share even in namespaces of their own, and
			// pg_autoctl talks to its own server through it
			k := strconv.Itoa(port)
			if !used[k] {
				used[k], p.port = true, port
				break
			}
			if try == 20 {
				return nil, fmt.Errorf("%s: no distinct free port on %s after 20 tries", p.name, p.host)
			}
		}
	}
	return plans, nil
}

// newCluster returns the Cluster record for plans (nothing started yet):
// the monitor, the keepers, then the postgres servers. The keepers come
// before the servers so that launcher.Down stops each node through its
// keeper (which stops postgres cleanly) rather than having a keeper restart
// a postgres that Down just stopped.
func newCluster(spec launcher.Spec, dir string, temp bool, cfg config, plans []nodePlan) *launcher.Cluster {
	c := launcher.NewCluster(Kind, spec, dir, temp, cfg.options())
	m := plans[0]
	c.Nodes = append(c.Nodes, launcher.Node{
		Name: m.name, Addr: m.addr(), DataDir: m.dir, LogFile: m.logFile,
		Argv: append(m.wrap, runArgv(cfg, m.pgdata())...), Role: RoleMonitor, Down: true,
	})
	for _, p := range plans[1:] {
		c.Nodes = append(c.Nodes, launcher.Node{
			Name: p.name + KeeperSuffix, PeerAddr: p.addr(), DataDir: p.dir, LogFile: p.logFile,
			Argv: append(p.wrap, runArgv(cfg, p.pgdata())...), Role: RoleKeeper, Down: true,
		})
	}
	for _, p := range plans[1:] {
		c.Nodes = append(c.Nodes, launcher.Node{
			Name: p.name, Addr: p.addr(), DataDir: p.dir, LogFile: p.logFile,
			Argv: postmasterArgv(cfg, p.pgdata()), Down: true,
		})
	}
	return c
}

// nodeOf returns c's node name, or a node without a data directory (on
// which ReadyDisk does nothing) when c has none of that name.
func nodeOf(c *launcher.Cluster, name string) *launcher.Node {
	if n, err := c.Node(name); err == nil {
		return n
	}
	return &launcher.Node{Name: name}
}

// monitorURI is the connection string keepers use for the monitor.
func monitorURI(addr string) string {
	return "postgres://autoctl_node@" + addr + "/pg_auto_failover?sslmode=disable"
}

// hbaTrust are the pg_hba.conf lines faultbench puts first: trust for every
// user and database from loopback and from faultbench's namespace
// addresses (the clusters are local and throw-away).
const hbaTrust = "# added by faultbench: local throw-away cluster\n" +
	"host all all 127.0.0.0/8 trust\n" +
	"host replication all 127.0.0.0/8 trust\n" +
	"host all all 198.18.0.0/15 trust\n" +
	"host replication all 198.18.0.0/15 trust\n"

// prependHBA puts hbaTrust at the top of pgdata/pg_hba.conf.
func prependHBA(cfg config, pgdata string) error {
	p := filepath.Join(pgdata, "pg_hba.conf")
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if strings.HasPrefix(string(b), hbaTrust) {
		return nil
	}
	if err := os.WriteFile(p, append([]byte(hbaTrust), b...), 0o600); err != nil {
		return err
	}
	return os.Chown(p, int(cfg.uid), int(cfg.gid))
}

// MaxConnections is every data node's max_connections (PostgreSQL's
// default is 100). The driver's pool holds threads + 4 connections
// (postgres.poolsize unset), and an open loop sized from the calibration
// has up to 256 threads (experiment.MaxAutoOpenThreads): 260, plus
// OtherConnections.
const MaxConnections = 300

// OtherConnections bounds the connections to a data node besides the
// load's pool: superuser_reserved_connections (3), the keeper's and the
// monitor's health checks, faultbench's role and checkpoint queries and
// the checks' readers. (Replication connections count against
// max_wal_senders, not max_connections.)
const OtherConnections = 20

// appendConf appends settings to pgdata/postgresql.conf (after pg_autoctl's
// include, so they win).
func appendConf(cfg config, pgdata string, settings [][2]string) error {
	p := filepath.Join(pgdata, "postgresql.conf")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	var b strings.Builder
	b.WriteString("\n# added by faultbench\n")
	for _, s := range settings {
		fmt.Fprintf(&b, "%s = '%s'\n", s[0], s[1])
	}
	_, err = f.WriteString(b.String())
	return err
}

// createMonitor initialises the monitor's data directory and starts it.
func createMonitor(ctx context.Context, env *launcher.Env, c *launcher.Cluster, cfg config, p nodePlan) error {
	if err := makeNodeDirs(cfg, p.dir); err != nil {
		return err
	}
	if err := env.ReadyDisk(ctx, c, nodeOf(c, p.name)); err != nil {
		return err
	}
	envv := nodeEnv(cfg, p.dir)
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := runAs(cctx, cfg, p.wrap, envv, p.logFile, cfg.autoctl, "create", "monitor",
		"--pgdata", p.pgdata(), "--pgport", strconv.Itoa(p.port), "--hostname", p.host,
		"--pgctl", filepath.Join(cfg.binDir, "pg_ctl"), "--auth", "trust", "--no-ssl"); err != nil {
		return err
	}
	if err := runAs(cctx, cfg, p.wrap, envv, p.logFile, cfg.autoctl, "config", "set", "--pgdata", p.pgdata(),
		"postgresql.listen_addresses", p.host); err != nil {
		return err
	}
	if err := prependHBA(cfg, p.pgdata()); err != nil {
		return fmt.Errorf("pg_hba.conf: %w", err)
	}
	if err := appendConf(cfg, p.pgdata(), cfg.timing.monitorSettings()); err != nil {
		return fmt.Errorf("postgresql.conf: %w", err)
	}
	n, _ := c.Node(p.name)
	if err := startKeeper(ctx, env, c, cfg, n); err != nil {
		return err
	}
	wctx, wcancel := context.WithTimeout(ctx, nodeStartTimeout)
	defer wcancel()
	return waitQuery(wctx, p.addr(), "pg_auto_failover")
}

// createDataNode initialises data node p (registering it with the monitor)
// and starts its keeper. The first node becomes the primary; later ones
// wait for pg_basebackup from it inside pg_autoctl.
func createDataNode(ctx context.Context, env *launcher.Env, c *launcher.Cluster, cfg config, p nodePlan, monitor string, first bool) error {
	if err := makeNodeDirs(cfg, p.dir); err != nil {
		return err
	}
	if err := env.ReadyDisk(ctx, c, nodeOf(c, p.name+KeeperSuffix)); err != nil {
		return err
	}
	envv := nodeEnv(cfg, p.dir)
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := runAs(cctx, cfg, p.wrap, envv, p.logFile, cfg.autoctl, "create", "postgres",
		"--pgdata", p.pgdata(), "--pgport", strconv.Itoa(p.port), "--listen", p.host, "--hostname", p.host,
		"--name", p.name, "--monitor", monitor, "--dbname", Database,
		"--pgctl", filepath.Join(cfg.binDir, "pg_ctl"), "--auth", "trust", "--no-ssl",
		"--replication-quorum", strconv.FormatBool(cfg.syncStandby)); err != nil {
		return err
	}
	// synchronous_commit and max_connections after pg_autoctl's include,
	// so that they win; a standby whose base backup is still to come gets
	// the primary's file (a hot standby needs max_connections at least
	// the primary's: the same value on every node)
	if _, err := os.Stat(filepath.Join(p.pgdata(), "postgresql.conf")); err == nil {
		if err := appendConf(cfg, p.pgdata(), [][2]string{{"synchronous_commit", cfg.syncCommit}, {"max_connections", strconv.Itoa(MaxConnections)}}); err != nil {
			return fmt.Errorf("postgresql.conf: %w", err)
		}
	}
	for _, s := range cfg.timing.keeperSettings() {
		if err := runAs(cctx, cfg, p.wrap, envv, p.logFile, cfg.autoctl, "config", "set", "--pgdata", p.pgdata(), s[0], s[1]); err != nil {
			return err
		}
	}
	if first {
		if err := prependHBA(cfg, p.pgdata()); err != nil {
			return fmt.Errorf("pg_hba.conf: %w", err)
		}
	}
	k, _ := c.Node(p.name + KeeperSuffix)
	if err := startKeeper(ctx, env, c, cfg, k); err != nil {
		return err
	}
	if first {
		wctx, wcancel := context.WithTimeout(ctx, nodeStartTimeout)
		defer wcancel()
		if err := waitQuery(wctx, p.addr(), Database); err != nil {
			return err
		}
		if err := waitPrimary(wctx, p.addr()); err != nil {
			return err
		}
	}
	return nil
}

// startKeeper spawns the pg_autoctl service of node n (the monitor or an
// nK-keeper) and records pg_autoctl's pid.
func startKeeper(ctx context.Context, env *launcher.Env, c *launcher.Cluster, cfg config, n *launcher.Node) error {
	pgdata := filepath.Join(n.DataDir, "pgdata")
	// pg_autoctl refuses to start over a pid file of a pg_autoctl that was
	// killed with its namespace; the pid in it means nothing outside.
	_ = os.Remove(filepath.Join(n.DataDir, "xdg", "run", "pg_autoctl", strings.TrimPrefix(pgdata, "/"), "pg_autoctl.pid"))
	if err := env.ReadyDisk(ctx, c, n); err != nil {
		return fmt.Errorf("starting %s: %w", n.Name, err)
	}
	wrap, _ := launcher.SplitWrapper(n.Argv)
	pid, err := env.Spawn(keeperArgv(cfg, wrap, n.DataDir, pgdata), n.LogFile, c.Detached)
	if err != nil {
		return fmt.Errorf("starting %s: %w", n.Name, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	child, err := childPID(cctx, pid)
	if err != nil {
		_ = launcher.Kill(context.WithoutCancel(ctx), pid)
		return fmt.Errorf("starting %s: %w (see %s)", n.Name, err, n.LogFile)
	}
	n.PID, n.Down = child, false
	return nil
}

// nudgeCheckpoints asks the primary for a CHECKPOINT every 3 s until ctx
// ends: pg_basebackup (which pg_autoctl runs for a new standby) otherwise
// waits for the next spread checkpoint, up to checkpoint_timeout (5 min).
func nudgeCheckpoints(ctx context.Context, primary string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(3 * time.Second):
		}
		_ = execSQL(ctx, primary, Database, "CHECKPOINT")
	}
}

// StartNode starts node name again: the monitor or an nK-keeper by
// spawning its pg_autoctl (same data and port), nK by starting its keeper
// if that is dead. Starting a data node (nK or nK-keeper) returns once the
// node runs postgres for good as a standby or the primary: a node that
// was the primary before a failover first has its data rewound or
// replaced by a base backup from the new primary, with postgres stopped
// and started again on the way, which takes minutes under load. The wait
// follows the node's progress (waitRejoined): it lasts while the node
// moves and fails when nothing changed for rejoinStall or ctx ends. A
// keeper that already runs unrecorded (started with its nK by an earlier
// StartNode) is recorded instead of started twice, so nK and nK-keeper
// may be started in either order.
func (l Launcher) StartNode(ctx context.Context, env *launcher.Env, c *launcher.Cluster, name string) error {
	if c.Kind != Kind {
		return fmt.Errorf("cluster %s is of kind %q, not %q", c.Name, c.Kind, Kind)
	}
	cfg, err := fromCluster(c.Options)
	if err != nil {
		return err
	}
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	ctx, cancel := launcher.WithDefaultTimeout(ctx, nodeStartTimeout)
	defer cancel()
	if name == MonitorName || strings.HasSuffix(name, KeeperSuffix) {
		if procstat.Alive(n.PID) && launcher.RunsNode(n) {
			return fmt.Errorf("node %s is already running (pid %d)", name, n.PID)
		}
		if err := ensureKeeper(ctx, env, c, cfg, n); err != nil {
			return err
		}
		if name == MonitorName {
			return waitQuery(ctx, n.Addr, "pg_auto_failover")
		}
		pgName := strings.TrimSuffix(name, KeeperSuffix)
		pid, err := waitRejoined(ctx, c, cfg, pgName)
		if err != nil {
			return fmt.Errorf("%s: %w (see %s)", name, err, n.LogFile)
		}
		if pg, err := c.Node(pgName); err == nil {
			pg.PID, pg.Down = pid, false
		}
		return nil
	}
	k, err := c.Node(name + KeeperSuffix)
	if err != nil {
		return fmt.Errorf("node %s is not a postgres-ha node", name)
	}
	if !procstat.Alive(k.PID) || !launcher.RunsNode(k) {
		if err := ensureKeeper(ctx, env, c, cfg, k); err != nil {
			return err
		}
	}
	pid, err := waitRejoined(ctx, c, cfg, name)
	if err != nil {
		return fmt.Errorf("%s: %w (see %s)", name, err, n.LogFile)
	}
	n.PID, n.Down = pid, false
	return nil
}

// ensureKeeper records the running pg_autoctl of node n (the monitor or an
// nK-keeper) if there is one (findKeeper), and starts it otherwise.
func ensureKeeper(ctx context.Context, env *launcher.Env, c *launcher.Cluster, cfg config, n *launcher.Node) error {
	if pid := findKeeper(cfg, filepath.Join(n.DataDir, "pgdata")); pid > 0 {
		n.PID, n.Down = pid, false
		return nil
	}
	return startKeeper(ctx, env, c, cfg, n)
}

// Refresh records the current processes (the postmaster's pid changes when
// its keeper restarts it) and the roles the monitor assigned: primary for
// the node in state single/wait_primary/primary/join_primary/apply_settings,
// replica for secondary/catchingup/wait_standby/report_lsn. Without the
// monitor, roles come from each server's pg_is_in_recovery(). It fails only
// when neither the monitor nor any server answered.
func (Launcher) Refresh(ctx context.Context, c *launcher.Cluster) error {
	cfg, err := fromCluster(c.Options)
	if err != nil {
		return err
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		switch {
		case n.Name == MonitorName || strings.HasSuffix(n.Name, KeeperSuffix):
			if !procstat.Alive(n.PID) || !launcher.RunsNode(n) {
				n.PID, n.Down = 0, true
			} else {
				n.Down = false
			}
		default:
			pid := findPostmaster(cfg, filepath.Join(n.DataDir, "pgdata"))
			n.PID, n.Down = pid, pid == 0
			if n.Down {
				n.Role = launcher.RoleUnknown
			}
		}
	}
	mon, _ := c.Node(MonitorName)
	var states map[string]nodeState
	if !mon.Down {
		states, err = monitorStates(ctx, mon.Addr)
	}
	if states != nil {
		for i := range c.Nodes {
			n := &c.Nodes[i]
			if st, ok := states[n.Name]; ok {
				n.ID = strconv.FormatInt(st.id, 10)
				if !n.Down {
					n.Role = st.role()
				}
			}
		}
		return nil
	}
	answered := 0
	var lastErr error
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Down || n.Role == RoleMonitor || n.Role == RoleKeeper {
			continue
		}
		inRecovery, qerr := isInRecovery(ctx, n.Addr)
		if qerr != nil {
			n.Role = launcher.RoleUnknown
			lastErr = fmt.Errorf("%s: %w", n.Name, qerr)
			continue
		}
		answered++
		n.Role = launcher.RolePrimary
		if inRecovery {
			n.Role = launcher.RoleReplica
		}
	}
	if answered == 0 {
		monitor := "down"
		if err != nil {
			monitor = err.Error()
		}
		return fmt.Errorf("postgres-ha %s: neither the monitor (%s) nor any postgres server answered (last: %v)", c.Name, monitor, lastErr)
	}
	return nil
}

// WaitHealthy waits until the monitor runs and reports exactly one primary
// and every other data node whose keeper is up as a secondary (reported
// state equal to assigned state), and the primary's postgres takes writes.
// Data nodes whose keeper is down (killed, stopped) are not waited for.
func (Launcher) WaitHealthy(ctx context.Context, c *launcher.Cluster) error {
	ctx, cancel := launcher.WithDefaultTimeout(ctx, defaultHealthyTimeout)
	defer cancel()
	mon, err := c.Node(MonitorName)
	if err != nil {
		return err
	}
	want := map[string]bool{} // data nodes to wait for
	for _, n := range c.Nodes {
		if strings.HasSuffix(n.Name, KeeperSuffix) && !n.Down && n.PID > 0 {
			want[strings.TrimSuffix(n.Name, KeeperSuffix)] = true
		}
	}
	var last string
	lastNudge := time.Time{}
	for {
		ok, why, primary := healthyOnce(ctx, mon, want)
		if ok {
			return nil
		}
		last = why
		if primary != "" && strings.Contains(why, "catchingup") && time.Since(lastNudge) > 3*time.Second {
			lastNudge = time.Now()
			_ = execSQL(ctx, primary, Database, "CHECKPOINT")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres-ha %s not healthy: %s: %w", c.Name, last, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// healthyOnce checks the cluster once; it returns what is missing and the
// primary's address when known.
func healthyOnce(ctx context.Context, mon *launcher.Node, want map[string]bool) (ok bool, why, primary string) {
	if mon.Down || mon.PID <= 0 {
		return false, "the monitor is down", ""
	}
	states, err := monitorStates(ctx, mon.Addr)
	if err != nil {
		return false, "monitor: " + err.Error(), ""
	}
	var primaries []string
	var bad []string
	for name := range want {
		st, ok := states[name]
		if !ok {
			bad = append(bad, name+" not registered")
			continue
		}
		switch {
		case st.reported != st.goal:
			bad = append(bad, fmt.Sprintf("%s %s->%s", name, st.reported, st.goal))
		case st.goal == "primary" || (st.goal == "single" && len(want) == 1):
			primaries = append(primaries, name)
			primary = st.addr
		case st.goal != "secondary":
			bad = append(bad, name+" "+st.goal)
		}
	}
	if len(bad) > 0 {
		return false, "data nodes " + strings.Join(bad, ", "), primary
	}
	if len(primaries) != 1 {
		return false, fmt.Sprintf("%d primaries (%s)", len(primaries), strings.Join(primaries, ", ")), primary
	}
	inRecovery, err := isInRecovery(ctx, primary)
	if err != nil || inRecovery {
		return false, fmt.Sprintf("primary %s does not take writes yet (%v)", primaries[0], err), primary
	}
	return true, "", primary
}

// stopAll stops every node of a cluster that failed to come up.
func stopAll(c *launcher.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = launcher.Down(ctx, c, stopGrace)
}

// Endpoints returns the client addresses of the data nodes (the postgres
// servers), in node order, for the driver's multi-host connection string.
func Endpoints(c *launcher.Cluster) []string {
	var out []string
	for _, n := range c.Nodes {
		if n.Addr != "" && n.Name != MonitorName && !strings.HasSuffix(n.Name, KeeperSuffix) {
			out = append(out, n.Addr)
		}
	}
	return out
}

// PropHosts is the driver property Connect sets.
const PropHosts = "postgres.hosts"

// Connect points the driver at cluster c: postgres.hosts lists the data
// nodes' servers (not the monitor), leaving a value the user set alone.
func Connect(p *properties.Properties, c *launcher.Cluster) {
	if !p.Has(PropHosts) {
		p.Set(PropHosts, strings.Join(Endpoints(c), ","))
	}
	if !p.Has("faultbench.cluster") {
		p.Set("faultbench.cluster", c.Name)
	}
	p.Declare("faultbench.cluster")
}
