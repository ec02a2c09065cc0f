// Package redis launches local Redis clusters from Debian's redis-server
// binary: ClusterLauncher (kind "redis-cluster") starts a Redis Cluster of
// masters with replicas, StandaloneLauncher (kind "redis") one primary with
// plain replicas (replicaof). Every node is one redis-server process started
// through launcher.Env.Spawn with explicit command-line flags (no config
// file), listening on an address from env.Addrs, with its data in
// DIR/nK/data and its log in DIR/nK/node.log.
//
// The cluster is created without redis-cli: each node's id is read with
// CLUSTER MYID, every node gets its own config epoch (CLUSTER
// SET-CONFIG-EPOCH), the masters get even slot ranges (CLUSTER
// ADDSLOTSRANGE), the first node meets every other (CLUSTER MEET with the
// explicit bus port) and each replica is attached with CLUSTER REPLICATE.
// That works for any number of masters (redis-cli insists on three) and
// needs no parsing of redis-cli's output.
package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/faultbench/faultbench/internal/launcher"
)

// Target kinds of the two launchers.
const (
	KindCluster    = "redis-cluster"
	KindStandalone = "redis"
)

// Option keys understood in Spec.Options (the "redis." prefix may be
// omitted). Cluster.Options records every option with its resolved value.
const (
	// OptBinary is the redis-server executable; default: redis-server on PATH.
	OptBinary = "redis.binary"
	// OptNodeTimeout is cluster-node-timeout in milliseconds (redis-cluster
	// only; default 1000): how long a master may be unreachable before its
	// replica takes over.
	OptNodeTimeout = "redis.cluster-node-timeout"
	// OptFullCoverage is cluster-require-full-coverage, yes (default) or no:
	// whether the cluster refuses every request while any slot is uncovered.
	OptFullCoverage = "redis.cluster-require-full-coverage"
	// OptAppendOnly turns the append-only file on (yes) or off (no, default).
	OptAppendOnly = "redis.appendonly"
	// OptAppendFsync is appendfsync: always, everysec (default) or no.
	OptAppendFsync = "redis.appendfsync"
)

// OptionNames returns every option key the launchers understand, sorted.
func OptionNames() []string {
	return []string{OptAppendFsync, OptAppendOnly, OptBinary, OptFullCoverage, OptNodeTimeout}
}

// TotalSlots is the number of hash slots of a Redis Cluster.
const TotalSlots = 16384

// Timeouts used where the caller's context has no deadline, so that no wait
// hangs forever.
const (
	defaultUpTimeout      = 2 * time.Minute
	defaultHealthyTimeout = time.Minute
	nodeStartTimeout      = 30 * time.Second
	stopGrace             = 5 * time.Second
	queryTimeout          = time.Second
	pollInterval          = 50 * time.Millisecond
)

// config is the resolved Spec.Options.
type config struct {
	binary        string
	nodeTimeoutMS int
	fullCoverage  bool
	appendOnly    bool
	appendFsync   string
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func parseYesNo(key, v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "yes", "true", "1", "on":
		return true, nil
	case "no", "false", "0", "off":
		return false, nil
	}
	return false, fmt.Errorf("option %s=%q: want yes or no", key, v)
}

// parseValues validates the option values in opts and fills in defaults,
// without looking for the binary.
func parseValues(opts map[string]string) (config, error) {
	cfg := config{nodeTimeoutMS: 1000, fullCoverage: true, appendFsync: "everysec"}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := opts[k]
		key := k
		if !strings.HasPrefix(key, "redis.") {
			key = "redis." + key
		}
		var err error
		switch key {
		case OptBinary:
			cfg.binary = strings.TrimSpace(v)
		case OptNodeTimeout:
			n, perr := strconv.Atoi(strings.TrimSpace(v))
			if perr != nil || n < 50 || n > 3600_000 {
				err = fmt.Errorf("option %s=%q: want milliseconds between 50 and 3600000", k, v)
			}
			cfg.nodeTimeoutMS = n
		case OptFullCoverage:
			cfg.fullCoverage, err = parseYesNo(k, v)
		case OptAppendOnly:
			cfg.appendOnly, err = parseYesNo(k, v)
		case OptAppendFsync:
			s := strings.ToLower(strings.TrimSpace(v))
			if s != "always" && s != "everysec" && s != "no" {
				err = fmt.Errorf("option %s=%q: want always, everysec or no", k, v)
			}
			cfg.appendFsync = s
		default:
			err = fmt.Errorf("unknown option %q (redis launchers know: %s)", k, strings.Join(OptionNames(), ", "))
		}
		if err != nil {
			return config{}, err
		}
	}
	return cfg, nil
}

// parseOptions validates opts, fills in defaults and resolves the
// redis-server binary.
func parseOptions(opts map[string]string) (config, error) {
	cfg, err := parseValues(opts)
	if err != nil {
		return config{}, err
	}
	if cfg.binary == "" {
		p, err := exec.LookPath("redis-server")
		if err != nil {
			return config{}, errors.New("redis-server not found on PATH: run scripts/setup.sh --only redis (or apt-get install redis-server), or set option " + OptBinary)
		}
		cfg.binary = p
	} else if _, err := exec.LookPath(cfg.binary); err != nil {
		return config{}, fmt.Errorf("option %s=%q: %w", OptBinary, cfg.binary, err)
	}
	if abs, err := filepath.Abs(cfg.binary); err == nil && strings.ContainsRune(cfg.binary, os.PathSeparator) {
		cfg.binary = abs
	}
	return cfg, nil
}

// minMajor is the oldest Redis major version the launchers support: they
// use --cluster-port and CLUSTER MEET with a bus port (Redis 7.0).
const minMajor = 7

// checkVersion runs `redis-server --version` and rejects versions older
// than minMajor.0.
func checkVersion(ctx context.Context, binary string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s --version: %w (%s)", binary, err, strings.TrimSpace(string(out)))
	}
	// "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=..."
	s := string(out)
	i := strings.Index(s, "v=")
	if i < 0 {
		return fmt.Errorf("%s --version: unexpected output %q", binary, strings.TrimSpace(s))
	}
	v := s[i+2:]
	if j := strings.IndexAny(v, " \n"); j >= 0 {
		v = v[:j]
	}
	major, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if err != nil {
		return fmt.Errorf("%s --version: cannot read version %q", binary, v)
	}
	if major < minMajor {
		return fmt.Errorf("%s is Redis %s; faultbench needs Redis %d.0 or later (Debian 12 ships 7.0)", binary, v, minMajor)
	}
	return nil
}

// options renders cfg for Cluster.Options.
func (cfg config) options(cluster bool) map[string]string {
	m := map[string]string{
		OptBinary:      cfg.binary,
		OptAppendOnly:  yesNo(cfg.appendOnly),
		OptAppendFsync: cfg.appendFsync,
	}
	if cluster {
		m[OptNodeTimeout] = strconv.Itoa(cfg.nodeTimeoutMS)
		m[OptFullCoverage] = yesNo(cfg.fullCoverage)
	}
	return m
}

// nodePlan is where one node lives before it is started.
type nodePlan struct {
	name      string
	host      string
	port      int
	busPort   int // 0 for standalone
	dir       string
	dataDir   string
	logFile   string
	replicaOf string // standalone replicas: host:port of the primary
	// onHost is the inventory host the node runs on ("" for this
	// machine), binary its redis-server there
	onHost, binary string
	// wrap turns the command line into the one spawned (launcher.Env.NodeArgv)
	wrap func([]string) []string
}

func (p *nodePlan) addr() string { return net.JoinHostPort(p.host, strconv.Itoa(p.port)) }

func (p *nodePlan) peerAddr() string {
	if p.busPort == 0 {
		return ""
	}
	return net.JoinHostPort(p.host, strconv.Itoa(p.busPort))
}

// argv is the command line of a node; it is recorded in Node.Argv and
// reused verbatim by StartNode.
func (p *nodePlan) argv(cfg config) []string {
	bin := cfg.binary
	if p.binary != "" {
		bin = p.binary
	}
	a := []string{
		bin,
		"--port", strconv.Itoa(p.port),
		"--bind", p.host,
		"--dir", p.dataDir,
		"--daemonize", "no",
		"--logfile", "",
		"--protected-mode", "no",
		"--save", "",
		"--appendonly", yesNo(cfg.appendOnly),
		"--appendfsync", cfg.appendFsync,
		"--repl-diskless-sync", "yes",
		"--repl-diskless-sync-delay", "0",
	}
	if p.busPort != 0 {
		a = append(a,
			"--cluster-enabled", "yes",
			"--cluster-config-file", path.Join(p.dataDir, "nodes.conf"),
			"--cluster-port", strconv.Itoa(p.busPort),
			"--cluster-node-timeout", strconv.Itoa(cfg.nodeTimeoutMS),
			"--cluster-replica-validity-factor", "0",
			"--cluster-require-full-coverage", yesNo(cfg.fullCoverage),
		)
	}
	if p.replicaOf != "" {
		h, port, _ := net.SplitHostPort(p.replicaOf)
		a = append(a, "--replicaof", h, port)
	}
	if p.wrap != nil {
		return p.wrap(a)
	}
	return a
}

// planNodes assigns names, directories and addresses (from env.Addrs, the
// only source of addresses) to n nodes. Ports are distinct within the plan.
func planNodes(env *launcher.Env, dir string, n int, bus bool) ([]nodePlan, error) {
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
		p.name = "n" + strconv.Itoa(i+1)
		p.host = env.Addrs.Host(i)
		p.wrap = func(a []string) []string { return env.NodeArgv(i, a) }
		p.dir = filepath.Join(dir, p.name)
		p.dataDir = filepath.Join(p.dir, "data")
		p.logFile = filepath.Join(p.dir, "node.log")
		var err error
		if p.port, err = port(p.host); err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		if bus {
			if p.busPort, err = port(p.host); err != nil {
				return nil, fmt.Errorf("%s: %w", p.name, err)
			}
		}
	}
	return plans, nil
}

// newCluster returns the Cluster record for plans (nodes not yet started).
func newCluster(kind string, spec launcher.Spec, dir string, temp bool, cfg config, plans []nodePlan) *launcher.Cluster {
	c := launcher.NewCluster(kind, spec, dir, temp, cfg.options(kind == KindCluster))
	for i := range plans {
		p := &plans[i]
		c.Nodes = append(c.Nodes, launcher.Node{
			Name:     p.name,
			Addr:     p.addr(),
			PeerAddr: p.peerAddr(),
			DataDir:  p.dataDir,
			LogFile:  p.logFile,
			Argv:     p.argv(cfg),
			Down:     true,
			Host:     p.onHost,
		})
	}
	return c
}

// startPlanned starts node i of c for the first time. When the node cannot
// bind its port (taken by someone else since it was planned), it retries with
// fresh ports from env.Addrs, updating the plan and the node record.
func startPlanned(ctx context.Context, env *launcher.Env, c *launcher.Cluster, plans []nodePlan, i int, cfg config) error {
	p := &plans[i]
	if p.onHost != "" {
		// a node on a host has its host's fixed ports, checked free
		// before (HostNeeds.Ports): no other ports to try
		if err := c.MkdirOn(ctx, &c.Nodes[i], p.dataDir); err != nil {
			return fmt.Errorf("%s: creating data dir: %w", p.name, err)
		}
		return startNode(ctx, env, c, &c.Nodes[i])
	}
	if err := os.MkdirAll(p.dataDir, 0o755); err != nil {
		return fmt.Errorf("%s: creating data dir: %w", p.name, err)
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		n := &c.Nodes[i]
		err = startNode(ctx, env, c, n)
		if err == nil || !errors.Is(err, errAddrInUse) {
			return err
		}
		// pick fresh ports and try again
		if p.port, err = env.Addrs.Port(p.host); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		if p.busPort != 0 {
			if p.busPort, err = env.Addrs.Port(p.host); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
		}
		n.Addr, n.PeerAddr, n.Argv = p.addr(), p.peerAddr(), p.argv(cfg)
	}
	return err
}

var errAddrInUse = errors.New("address already in use")

// startNode spawns n with its recorded argv and waits until the process
// answers on n.Addr (and is the process that was spawned, not someone else
// on that port).
func startNode(ctx context.Context, env *launcher.Env, c *launcher.Cluster, n *launcher.Node) error {
	if len(n.Argv) == 0 && n.Found == nil { // an existing cluster's node starts as its inventory says
		return fmt.Errorf("node %s has no recorded command line", n.Name)
	}
	// SpawnNode puts the disk layer under n's data directory first
	// when the cluster has one (option disk: fuse)
	pid, err := env.SpawnNode(ctx, c, n)
	if err != nil {
		return fmt.Errorf("starting %s: %w", n.Name, err)
	}
	n.PID = pid
	n.Down = false
	if err := waitProcess(ctx, c, n); err != nil {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		_ = launcher.TerminateOn(kctx, c.ProcsOf(n), pid, 0)
		cancel()
		n.PID = 0
		n.Down = true
		return err
	}
	return nil
}

// waitProcess waits until n's process accepts connections on n.Addr and
// answers INFO with its own pid. The TCP probe comes first so that go-redis
// never sees a refused dial (its pool would then back off for a second).
func waitProcess(ctx context.Context, c *launcher.Cluster, n *launcher.Node) error {
	ctx, cancel := launcher.WithDefaultTimeout(ctx, nodeStartTimeout)
	defer cancel()
	procs := c.ProcsOf(n)
	exited := func() error {
		tail := c.NodeLogTail(ctx, n, 8)
		if strings.Contains(tail, "Address already in use") {
			return fmt.Errorf("%s exited: %s is taken: %w", n.Name, n.Addr, errAddrInUse)
		}
		return fmt.Errorf("%s (pid %d) exited during start-up:\n%s", n.Name, n.PID, tail)
	}
	var d net.Dialer
	for {
		if !procs.Alive(ctx, n.PID) {
			return exited()
		}
		dctx, dcancel := context.WithTimeout(ctx, queryTimeout)
		conn, err := d.DialContext(dctx, "tcp", n.Addr)
		dcancel()
		if err == nil {
			_ = conn.Close()
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s (pid %d) not accepting connections on %s: %v: %w", n.Name, n.PID, n.Addr, err, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cl := adminClient(n.Addr)
	defer cl.Close()
	for {
		info, err := cl.Info(ctx, "server").Result()
		if err == nil {
			pid, _ := strconv.Atoi(infoField(info, "process_id"))
			if pid == n.PID {
				return nil
			}
			return fmt.Errorf("%s: %s answers as pid %d, not the started pid %d: another process holds the port", n.Name, n.Addr, pid, n.PID)
		}
		if !procs.Alive(ctx, n.PID) {
			return exited()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s (pid %d) not answering on %s: %v: %w", n.Name, n.PID, n.Addr, err, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// stopAll stops whatever c started (used when Up fails) and removes its data
// the way launcher.Down does.
func stopAll(c *launcher.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = launcher.Down(ctx, c, stopGrace)
}

// checkStart validates a StartNode request and returns the node.
func checkStart(c *launcher.Cluster, kind, name string) (*launcher.Node, error) {
	if c.Kind != kind {
		return nil, fmt.Errorf("cluster %s is of kind %q, not %q", c.Name, c.Kind, kind)
	}
	n, err := c.Node(name)
	if err != nil {
		return nil, err
	}
	p := c.ProcsOf(n)
	if n.PID > 0 && p.Alive(context.Background(), n.PID) {
		state := "running"
		if p.Stopped(context.Background(), n.PID) {
			state = "paused (resume it instead)"
		}
		return nil, fmt.Errorf("node %s is already %s (pid %d)", name, state, n.PID)
	}
	return n, nil
}

// adminClient is a go-redis client for one node, for the launcher's own
// commands: no retries, one connection, every command bounded by
// queryTimeout (and by its ctx).
func adminClient(addr string) *goredis.Client {
	return goredis.NewClient(&goredis.Options{
		Addr:                  addr,
		Protocol:              2,
		DialTimeout:           queryTimeout,
		DialerRetries:         1,
		ReadTimeout:           queryTimeout,
		WriteTimeout:          queryTimeout,
		PoolTimeout:           queryTimeout,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		PoolSize:              1,
		DisableIdentity:       true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	})
}

// infoField returns the value of field in an INFO or CLUSTER INFO reply.
func infoField(info, field string) string {
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimRight(line, "\r")
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			return v
		}
	}
	return ""
}

// alive reports whether n's process runs (paused processes count as
// running). It looks on this machine only: the scaling code, which a
// cluster on inventory hosts refuses, uses it; the rest uses aliveOn.
func alive(n *launcher.Node) bool { return n.PID > 0 && launcher.Alive(n.PID) }

// aliveOn is alive for a node of c on its host (this machine or an
// inventory host over SSH).
func aliveOn(ctx context.Context, c *launcher.Cluster, n *launcher.Node) bool {
	return n.PID > 0 && c.ProcsOf(n).Alive(ctx, n.PID)
}

// aliveAll is aliveOn for every node of c, asking every host at once (a
// node on an inventory host is one SSH command).
func aliveAll(ctx context.Context, c *launcher.Cluster) []bool {
	up := make([]bool, len(c.Nodes))
	var wg sync.WaitGroup
	for i := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			up[i] = aliveOn(ctx, c, &c.Nodes[i])
		}()
	}
	wg.Wait()
	return up
}

// refreshLiveness marks nodes whose process is gone as Down.
func refreshLiveness(ctx context.Context, c *launcher.Cluster) {
	up := aliveAll(ctx, c)
	for i := range c.Nodes {
		n := &c.Nodes[i]
		n.Down = !up[i]
		if n.Down {
			n.PID = 0
		}
	}
}

// removeTemp removes a temp dir that Up created before it failed.
func removeTemp(dir string) error { return os.RemoveAll(dir) }

// admins holds one admin client per node of a cluster and replaces a
// client after a connection-level error, so that go-redis's dial back-off
// never delays noticing that a node is back.
type admins struct {
	c       *launcher.Cluster
	clients []*goredis.Client
}

func newAdmins(c *launcher.Cluster) *admins {
	return &admins{c: c, clients: make([]*goredis.Client, len(c.Nodes))}
}

// get returns the client of node i.
func (a *admins) get(i int) *goredis.Client {
	if a.clients[i] == nil {
		a.clients[i] = adminClient(a.c.Nodes[i].Addr)
	}
	return a.clients[i]
}

// failed drops node i's client when err is not a reply from the server.
func (a *admins) failed(i int, err error) {
	var rerr goredis.Error
	if err != nil && !errors.As(err, &rerr) && a.clients[i] != nil {
		_ = a.clients[i].Close()
		a.clients[i] = nil
	}
}

func (a *admins) close() {
	for i, cl := range a.clients {
		if cl != nil {
			_ = cl.Close()
			a.clients[i] = nil
		}
	}
}

// probeKeyPrefix names the short-lived keys WaitHealthy writes to check that
// the replication stream flows (they expire after probeTTL).
const (
	probeKeyPrefix = "faultbench:probe:"
	probeTTL       = 10 * time.Second
	probeWait      = 200 * time.Millisecond
)

// probeReplication writes a probe key on a primary and WAITs for want
// replicas to acknowledge it. A replica can report master_link_status:up
// while the primary still holds its stream back (after a diskless sync the
// primary waits for the replica's first ACK, which may come a second
// later); only a write that comes back acknowledged shows the stream flows.
// It returns "" when it does, else what is missing.
func probeReplication(ctx context.Context, cl *goredis.Client, name, key string, want int) (string, error) {
	if err := cl.Set(ctx, key, "1", probeTTL).Err(); err != nil {
		return "", err
	}
	got, err := cl.Wait(ctx, want, probeWait).Result()
	if err != nil {
		return "", err
	}
	if got < int64(want) {
		return fmt.Sprintf("primary %s: %d of %d replicas acknowledged a probe write within %v (replication stream not flowing yet)", name, got, want, probeWait), nil
	}
	return "", nil
}

// crc16 is Redis Cluster's key hash (CRC-16/XMODEM).
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// keySlot is the hash slot of a key without a hash tag.
func keySlot(key string) int { return int(crc16(key) % TotalSlots) }

// probeKeyFor returns a probe key whose slot lies in one of ranges (as in
// CLUSTER NODES: "lo-hi" or "n"), or "" if ranges hold no slot.
func probeKeyFor(ranges []string) string {
	type span struct{ lo, hi int }
	var spans []span
	for _, r := range ranges {
		a, b, isRange := strings.Cut(r, "-")
		lo, err1 := strconv.Atoi(a)
		hi := lo
		var err2 error
		if isRange {
			hi, err2 = strconv.Atoi(b)
		}
		if err1 == nil && err2 == nil && lo <= hi {
			spans = append(spans, span{lo, hi})
		}
	}
	if len(spans) == 0 {
		return ""
	}
	for i := 0; i < 1<<20; i++ {
		k := probeKeyPrefix + strconv.Itoa(i)
		s := keySlot(k)
		for _, sp := range spans {
			if s >= sp.lo && s <= sp.hi {
				return k
			}
		}
	}
	return ""
}
