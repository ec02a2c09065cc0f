// Package galera launches MariaDB 10.11 Galera clusters (Debian's
// mariadb-server and galera-4): Spec.Nodes mariadbd processes that form one
// synchronous multi-primary cluster. The first node bootstraps the cluster
// (--wsrep-new-cluster), the others join it and receive a state snapshot
// (SST, by rsync by default, which needs no network beyond the nodes);
// a node started again after a crash catches up by incremental state
// transfer (IST) from the others' write-set cache, or by SST. A node
// killed -9 leaves no position in grastate.dat (seqno -1): before starting
// it the launcher recovers the position from InnoDB (mariadbd
// --wsrep-recover, as mysqld_safe does) and passes it on
// (--wsrep-start-position), so it asks for an IST, not a full SST.
//
// Every mariadbd is started through launcher.Env.Spawn as `setpriv
// --reuid=mysql ... -- mariadbd --defaults-file=DIR/nK/my.cnf` (in a
// cluster network, `faultbench netns-exec NS -- setpriv ...`: node K listens
// on its namespace's address, see launcher.ArgvWrapper): it runs as
// the mysql user (setpriv keeps the parent-death signal that a change of
// user would clear, so a node of a non-detached cluster dies with
// faultbench). Node K's files live in DIR/nK: my.cnf (written by
// faultbench), data, mysqld.sock and node.log (mariadbd's error log).
//
// Each node listens on four ports: clients (Node.Addr), Galera group
// communication (Node.PeerAddr), IST and SST. Galera's failure detection
// (the evs timeouts) is tuned for a benchmark by default (galera.timing).
//
// Roles: every node takes writes; the launcher calls the first Synced
// node in node order "primary" (it is the node the driver's connections
// prefer) and the other Synced nodes "replica".
package galera

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
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
)

// Kind is the target kind.
const Kind = "galera"

// Database is the database clients use, User the MariaDB account (no
// password, any host) the launcher creates for them and for itself.
const (
	Database = "faultbench"
	User     = "faultbench"
)

const (
	defaultUpTimeout      = 4 * time.Minute
	defaultHealthyTimeout = 2 * time.Minute
	nodeStartTimeout      = 2 * time.Minute
	stopGrace             = 15 * time.Second
	queryTimeout          = 3 * time.Second
	pollInterval          = 200 * time.Millisecond
)

// Launcher starts Galera clusters of Spec.Nodes nodes (default 3);
// Spec.Replicas must be 0. The zero value is ready to use.
type Launcher struct{}

var _ launcher.Launcher = Launcher{}

// Kind implements launcher.Launcher.
func (Launcher) Kind() string { return Kind }

type nodePlan struct {
	name                     string
	host                     string
	port, gport, ist, sstPrt int
	dir                      string
}

func (p nodePlan) addr() string     { return net.JoinHostPort(p.host, strconv.Itoa(p.port)) }
func (p nodePlan) peerAddr() string { return net.JoinHostPort(p.host, strconv.Itoa(p.gport)) }
func (p nodePlan) dataDir() string  { return filepath.Join(p.dir, "data") }
func (p nodePlan) cnf() string      { return filepath.Join(p.dir, "my.cnf") }
func (p nodePlan) socket() string   { return filepath.Join(p.dir, "mysqld.sock") }

// Up bootstraps node 1, then starts the others one by one (each waits for
// its state transfer), and returns once every node is Synced in one
// primary component. On error whatever was started is stopped.
func (l Launcher) Up(ctx context.Context, env *launcher.Env, spec launcher.Spec) (*launcher.Cluster, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("galera: %w", err)
	}
	if spec.Replicas != 0 {
		return nil, fmt.Errorf("galera: every node is a full copy that takes writes; --nodes counts them and replicas must be 0, got %d", spec.Replicas)
	}
	if spec.Nodes > 16 {
		return nil, fmt.Errorf("galera: at most 16 nodes on one machine, got %d", spec.Nodes)
	}
	cfg, err := parseOptions(spec.Options)
	if err != nil {
		return nil, fmt.Errorf("galera: %w", err)
	}
	if err := cfg.resolve(); err != nil {
		return nil, fmt.Errorf("galera: %w", err)
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("galera: faultbench must run as root to start galera (mariadbd runs as the mysql user)")
	}
	ctx, cancel := launcher.WithDefaultTimeout(ctx, defaultUpTimeout)
	defer cancel()
	dir, temp, err := launcher.ClusterDir(spec, "galera", launcher.NodeDataDirs(spec.Nodes, "data"))
	if err != nil {
		return nil, fmt.Errorf("galera: %w", err)
	}
	plans, err := planNodes(env, dir, spec.Nodes)
	if err != nil {
		if temp {
			_ = os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("galera: %w", err)
	}
	c := launcher.NewCluster(Kind, spec, dir, temp, cfg.options())
	for i, p := range plans {
		c.Nodes = append(c.Nodes, launcher.Node{Name: p.name, Addr: p.addr(), PeerAddr: p.peerAddr(),
			DataDir: p.dir, LogFile: filepath.Join(p.dir, "node.log"),
			Argv: env.NodeArgv(i, []string{cfg.binary, "--defaults-file=" + p.cnf()}), Down: true})
	}
	ok := false
	defer func() {
		if !ok {
			stopAll(c)
		}
	}()
	for i, p := range plans {
		// with disk: fuse the node's whole directory (data, my.cnf, its
		// socket and log) is on the disk layer from the start
		if err := env.ReadyDisk(ctx, c, &c.Nodes[i]); err != nil {
			return c, fmt.Errorf("galera: %s: %w", p.name, err)
		}
		if err := writeNode(cfg, p, plans); err != nil {
			return c, fmt.Errorf("galera: %s: %w", p.name, err)
		}
	}
	if err := installDB(ctx, cfg, plans[0]); err != nil {
		return c, fmt.Errorf("galera: n1: %w", err)
	}
	if err := startNode(ctx, env, c, cfg, &c.Nodes[0], true); err != nil {
		return c, fmt.Errorf("galera: %w", err)
	}
	if err := createUser(ctx, plans[0].socket()); err != nil {
		return c, fmt.Errorf("galera: n1: creating the %s user: %w", User, err)
	}
	for i := 1; i < len(plans); i++ {
		if err := startNode(ctx, env, c, cfg, &c.Nodes[i], false); err != nil {
			return c, fmt.Errorf("galera: %w", err)
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

// planNodes assigns four distinct ports on env.Addrs.Host(i) to node i.
func planNodes(env *launcher.Env, dir string, n int) ([]nodePlan, error) {
	used := map[string]bool{}
	port := func(host string) (int, error) {
		for range 20 {
			p, err := env.Addrs.Port(host)
			if err != nil {
				return 0, err
			}
			k := net.JoinHostPort(host, strconv.Itoa(p))
			if !used[k] {
				used[k] = true
				return p, nil
			}
		}
		return 0, fmt.Errorf("no distinct free port on %s after 20 tries", host)
	}
	plans := make([]nodePlan, n)
	for i := range plans {
		p := &plans[i]
		p.name, p.host = "n"+strconv.Itoa(i+1), env.Addrs.Host(i)
		p.dir = filepath.Join(dir, p.name)
		for _, dst := range []*int{&p.port, &p.gport, &p.ist, &p.sstPrt} {
			v, err := port(p.host)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.name, err)
			}
			*dst = v
		}
	}
	return plans, nil
}

// writeNode creates node p's directories (owned by the mysql user) and its
// my.cnf; no other option file is read.
func writeNode(cfg config, p nodePlan, all []nodePlan) error {
	if err := os.MkdirAll(p.dataDir(), 0o750); err != nil {
		return err
	}
	var peers []string
	for _, q := range all {
		peers = append(peers, q.peerAddr())
	}
	provider := append([]string{
		"gmcast.listen_addr=tcp://" + p.peerAddr(),
		"ist.recv_addr=" + net.JoinHostPort(p.host, strconv.Itoa(p.ist)),
		"gcache.size=128M",
		"pc.wait_prim_timeout=PT30S",
	}, cfg.timing.providerOptions()...)
	lines := []string{
		"# written by faultbench (galera launcher); mariadbd reads only this file",
		"[mariadbd]",
		"datadir=" + p.dataDir(),
		"socket=" + p.socket(),
		"pid-file=" + filepath.Join(p.dir, "mysqld.pid"),
		"port=" + strconv.Itoa(p.port),
		"bind-address=" + p.host,
		"skip-name-resolve",
		"log-error=" + filepath.Join(p.dir, "node.log"),
		"innodb_buffer_pool_size=128M",
		"innodb_log_file_size=64M",
		"innodb_flush_log_at_trx_commit=" + strconv.Itoa(cfg.flushAtCommit),
		// no io_uring/libaio: their rings count against the mysql user's
		// locked-memory limit, which many nodes on one machine exhaust
		"innodb_use_native_aio=0",
		"max_connections=500",
		"binlog_format=ROW",
		"default_storage_engine=InnoDB",
		"innodb_autoinc_lock_mode=2",
		"wsrep_on=ON",
		"wsrep_provider=" + cfg.provider,
		"wsrep_cluster_name=faultbench",
		"wsrep_cluster_address=gcomm://" + strings.Join(peers, ","),
		"wsrep_node_name=" + p.name,
		"wsrep_node_address=" + p.peerAddr(),
		"wsrep_node_incoming_address=" + p.addr(),
		"wsrep_sst_method=" + cfg.sst,
		"wsrep_sst_receive_address=" + net.JoinHostPort(p.host, strconv.Itoa(p.sstPrt)),
		"wsrep_slave_threads=2",
		`wsrep_provider_options="` + strings.Join(provider, ";") + `"`,
		"",
	}
	if err := os.WriteFile(p.cnf(), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		return err
	}
	// mariadbd (as mysql) appends its error log to the file Spawn (as root)
	// sends stdout and stderr to: create it here so that mysql owns it
	lf, err := os.OpenFile(filepath.Join(p.dir, "node.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	lf.Close()
	return filepath.Walk(p.dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(cfg.uid), int(cfg.gid))
	})
}

// installDB creates the system tables of the bootstrap node.
func installDB(ctx context.Context, cfg config, p nodePlan) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mariadb-install-db", "--no-defaults", "--datadir="+p.dataDir(),
		"--user="+cfg.osUser, "--skip-test-db", "--auth-root-authentication-method=socket", "--innodb-use-native-aio=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		// the server's own complaints, not the script's boilerplate
		var msgs []string
		for line := range strings.SplitSeq(string(out), "\n") {
			if strings.Contains(line, "ERROR") || strings.Contains(line, "Error") {
				msgs = append(msgs, strings.TrimSpace(line))
			}
		}
		if len(msgs) > 3 {
			msgs = msgs[:3]
		}
		if len(msgs) == 0 {
			msgs = []string{strings.TrimSpace(string(out))}
		}
		return fmt.Errorf("mariadb-install-db: %w: %s", err, strings.Join(msgs, " | "))
	}
	return nil
}

// spawnArgv wraps a node's Argv in setpriv (run as the mysql user; keep the
// parent-death signal unless the cluster is detached). A node of a cluster
// network (--net) enters its namespace first, as root: its recorded Argv
// starts with the netns-exec wrapper, and setpriv goes after it.
func spawnArgv(cfg config, detached bool, argv []string) []string {
	wrapper, prog := launcher.SplitWrapper(argv)
	a := append([]string(nil), wrapper...)
	a = append(a, "setpriv", "--reuid="+strconv.Itoa(int(cfg.uid)), "--regid="+strconv.Itoa(int(cfg.gid)), "--clear-groups")
	if !detached {
		a = append(a, "--pdeathsig=SIGKILL")
	}
	a = append(a, "--")
	return append(a, prog...)
}

// startNode spawns n (bootstrapping a new cluster when bootstrap) and waits
// until it is Synced.
func startNode(ctx context.Context, env *launcher.Env, c *launcher.Cluster, cfg config, n *launcher.Node, bootstrap bool) error {
	argv := append([]string(nil), n.Argv...)
	if bootstrap {
		argv = append(argv, "--wsrep-new-cluster")
		if err := markSafeToBootstrap(filepath.Join(n.DataDir, "data", "grastate.dat")); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	if err := env.ReadyDisk(ctx, c, n); err != nil {
		return fmt.Errorf("starting %s: %w", n.Name, err)
	}
	// a node killed -9 left seqno -1 in grastate.dat: without its position
	// it would join by a full SST (rsync of the whole data directory, the
	// donor blocked meanwhile) instead of an IST from the others' gcache
	pos, err := recoverPosition(ctx, cfg, c.Detached, n)
	if err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	if pos != "" {
		argv = append(argv, "--wsrep-start-position="+pos)
	}
	pid, err := env.Spawn(spawnArgv(cfg, c.Detached, argv), n.LogFile, c.Detached)
	if err != nil {
		return fmt.Errorf("starting %s: %w", n.Name, err)
	}
	n.PID, n.Down = pid, false
	begun := time.Now()
	wctx, cancel := context.WithTimeout(ctx, nodeStartTimeout)
	defer cancel()
	for {
		st, err := nodeStatus(wctx, socketOf(n))
		if err == nil && st.synced() {
			return nil
		}
		if !launcher.Alive(pid) {
			n.PID, n.Down = 0, true
			return fmt.Errorf("%s (pid %d) exited while starting:\n%s", n.Name, pid, launcher.LogTail(n.LogFile, 3))
		}
		select {
		case <-wctx.Done():
			// the node is stopped either way: a caller that gave up (its
			// own deadline, the end of a run) starts it again later, and
			// with its position recovered that start asks for an IST
			_ = launcher.Kill(context.WithoutCancel(ctx), pid)
			n.PID, n.Down = 0, true
			if ctx.Err() != nil {
				return fmt.Errorf("%s not Synced after %s, when the caller gave up (last: %v %s): %w; see %s",
					n.Name, time.Since(begun).Round(time.Second), err, st.state, ctx.Err(), n.LogFile)
			}
			return fmt.Errorf("%s not Synced within %s (last: %v %s); see %s", n.Name, nodeStartTimeout, err, st.state, n.LogFile)
		case <-time.After(pollInterval):
		}
	}
}

// recoverTimeout bounds mariadbd --wsrep-recover (InnoDB's crash recovery).
const recoverTimeout = 90 * time.Second

// recoverPosition returns the position ("uuid:seqno") to start node n
// from when its grastate.dat has none (seqno -1: the node did not shut
// down cleanly), as mysqld_safe's galera recovery does: mariadbd
// --wsrep-recover replays InnoDB's log, writes "WSREP: Recovered
// position: uuid:seqno" to its error log and exits. "" when there is
// nothing to recover (no data yet, or a clean shutdown's seqno, which
// Galera reads itself) or the recovery found no position.
func recoverPosition(ctx context.Context, cfg config, detached bool, n *launcher.Node) (string, error) {
	b, err := os.ReadFile(filepath.Join(n.DataDir, "data", "grastate.dat"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if seqno, ok := grastateSeqno(string(b)); !ok || seqno != -1 {
		return "", nil
	}
	logPath := filepath.Join(n.DataDir, "wsrep-recover.log")
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return "", err
	}
	lf.Close()
	if err := os.Lchown(logPath, int(cfg.uid), int(cfg.gid)); err != nil {
		return "", err
	}
	rctx, cancel := context.WithTimeout(ctx, recoverTimeout)
	defer cancel()
	argv := spawnArgv(cfg, detached, append(append([]string(nil), n.Argv...), "--wsrep-recover", "--log-error="+logPath))
	cmd := exec.CommandContext(rctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, runErr := cmd.CombinedOutput()
	logText, _ := os.ReadFile(logPath)
	if pos := recoveredPosition(string(logText) + string(out)); pos != "" {
		return pos, nil
	}
	if runErr != nil {
		return "", fmt.Errorf("mariadbd --wsrep-recover: %w (see %s)", runErr, logPath)
	}
	return "", nil // no position: the node joins by SST
}

// grastateSeqno reads the seqno line of a grastate.dat.
func grastateSeqno(grastate string) (int64, bool) {
	for line := range strings.SplitSeq(grastate, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "seqno:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// recoveredPosition finds the position in mariadbd --wsrep-recover's
// error log ("... [Note] WSREP: Recovered position: uuid:seqno"); ""
// when there is none or it is the undefined one (seqno -1).
func recoveredPosition(log string) string {
	pos := ""
	for line := range strings.SplitSeq(log, "\n") {
		_, v, ok := strings.Cut(line, "WSREP: Recovered position:")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		uuid, seq, ok := strings.Cut(v, ":")
		if n, err := strconv.ParseInt(seq, 10, 64); !ok || len(uuid) != 36 || err != nil || n < 0 {
			continue
		}
		pos = v
	}
	return pos
}

// markSafeToBootstrap sets safe_to_bootstrap: 1 in grastate.dat (if it
// exists): Galera refuses to bootstrap from a node that did not stop last.
func markSafeToBootstrap(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	s := strings.Replace(string(b), "safe_to_bootstrap: 0", "safe_to_bootstrap: 1", 1)
	return os.WriteFile(path, []byte(s), 0o660)
}

// StartNode starts node name again with its data and ports. It rejoins the
// running nodes (IST or SST); when no other node runs it bootstraps a new
// cluster from its own data. When other nodes run but none of them is in a
// primary component (the cluster lost quorum: a majority died), it first
// restores one: pc.bootstrap=YES on the running node that committed most
// (wsrep_last_committed), which the node being started then joins.
func (Launcher) StartNode(ctx context.Context, env *launcher.Env, c *launcher.Cluster, name string) error {
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
	if launcher.RunsNode(n) {
		return fmt.Errorf("node %s is already running (pid %d)", name, n.PID)
	}
	others := false
	for _, o := range c.Nodes {
		if o.Name != name && launcher.RunsNode(&o) {
			others = true
		}
	}
	if others {
		if err := restoreQuorum(ctx, c, name); err != nil {
			return fmt.Errorf("starting %s: %w", name, err)
		}
	}
	return startNode(ctx, env, c, cfg, n, !others)
}

// restoreQuorum makes the most advanced running node (but skip) a primary
// component of its own when no running node is in one.
func restoreQuorum(ctx context.Context, c *launcher.Cluster, skip string) error {
	best, bestSeq := "", int64(-1)
	for i := range c.Nodes {
		o := &c.Nodes[i]
		if o.Name == skip || !launcher.RunsNode(o) {
			continue
		}
		st, err := nodeStatus(ctx, socketOf(o))
		if err != nil {
			continue
		}
		if st.status == "Primary" {
			return nil
		}
		if st.lastCommitted > bestSeq {
			best, bestSeq = o.Name, st.lastCommitted
		}
	}
	if best == "" {
		return nil // nobody answers: the node bootstraps or joins as it can
	}
	o, _ := c.Node(best)
	if err := execRoot(ctx, socketOf(o), "SET GLOBAL wsrep_provider_options='pc.bootstrap=YES'"); err != nil {
		return fmt.Errorf("restoring a primary component on %s (pc.bootstrap): %w", best, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if st, err := nodeStatus(wctx, socketOf(o)); err == nil && st.synced() {
			return nil
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("%s not Synced in a primary component after pc.bootstrap: %w", best, wctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// Refresh marks dead nodes down and sets roles: the first Synced node in
// node order is primary, the other Synced nodes replica, nodes that run
// but are not Synced (joining, donating, in a non-primary component) have
// no role and are down. It fails only when no running node answered.
func (Launcher) Refresh(ctx context.Context, c *launcher.Cluster) error {
	answered, running := 0, 0
	var lastErr error
	primary := false
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if !launcher.RunsNode(n) {
			n.PID, n.Down, n.Role = 0, true, launcher.RoleUnknown
			continue
		}
		running++
		st, err := nodeStatus(ctx, socketOf(n))
		if err != nil {
			lastErr = fmt.Errorf("%s: %w", n.Name, err)
			n.Down, n.Role = true, launcher.RoleUnknown
			continue
		}
		answered++
		n.ID = st.uuid
		if !st.synced() {
			n.Down, n.Role = true, launcher.RoleUnknown
			continue
		}
		n.Down = false
		n.Role = launcher.RoleReplica
		if !primary {
			n.Role, primary = launcher.RolePrimary, true
		}
	}
	if running > 0 && answered == 0 {
		return fmt.Errorf("galera %s: no running node answered (last error: %v)", c.Name, lastErr)
	}
	return nil
}

// WaitHealthy waits until every up node is Synced, in a primary component
// whose size is the number of up nodes.
func (Launcher) WaitHealthy(ctx context.Context, c *launcher.Cluster) error {
	ctx, cancel := launcher.WithDefaultTimeout(ctx, defaultHealthyTimeout)
	defer cancel()
	var last string
	for {
		var up, bad []string
		size := 0
		for _, n := range c.Nodes {
			if n.Down || n.PID <= 0 {
				continue
			}
			up = append(up, n.Name)
			st, err := nodeStatus(ctx, socketOf(&n))
			switch {
			case err != nil:
				bad = append(bad, n.Name+": "+err.Error())
			case !st.synced():
				bad = append(bad, fmt.Sprintf("%s: %s/%s", n.Name, st.status, st.state))
			default:
				size = st.size
			}
		}
		switch {
		case len(up) == 0:
			last = "no node is up"
		case len(bad) > 0:
			last = strings.Join(bad, "; ")
		case size != len(up):
			last = fmt.Sprintf("cluster size %d, %d nodes up", size, len(up))
		default:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("galera %s not healthy: %s: %w", c.Name, last, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// socketOf is node n's unix socket.
func socketOf(n *launcher.Node) string { return filepath.Join(n.DataDir, "mysqld.sock") }

func stopAll(c *launcher.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = launcher.Down(ctx, c, stopGrace)
}
