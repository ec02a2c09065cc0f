package cassandra

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/faultbench/faultbench/internal/launcher"
)

var (
	_ launcher.Scaler   = Launcher{}
	_ launcher.Shrinker = Launcher{}
)

// Scaling in Cassandra (docs/targets-cassandra.md, "Scaling"):
//
//   - add: new nodes start on the next loopback addresses with the cluster's
//     ports and options and the first running node as seed. With bootstrap
//     (auto_bootstrap, the default) each one takes its token ranges and
//     streams their data from the others before it turns NORMAL; with
//     NoBootstrap (auto_bootstrap: false) it turns NORMAL at once, owning
//     ranges it has no data for (the elasticity study's CS-4 and CS-6).
//     Several nodes start together, with cassandra.consistent.rangemovement
//     off so that their bootstraps may overlap.
//   - the streaming throttle is stream_throughput_outbound, set on every
//     running node with `nodetool setstreamthroughput` before the new nodes
//     start (entire-SSTable streaming is off, see yamlConfig, so the
//     throttle covers every stream).
//   - remove: `nodetool decommission --force` on the node (it streams its
//     ranges to the others and leaves the ring), then its process is
//     stopped. --force because Cassandra's own system_distributed and
//     system_traces keyspaces want 3 replicas; the data keyspace's
//     replication factor is checked against the remaining nodes first.
//
// nodetool is Cassandra's own (org.apache.cassandra.tools.NodeTool from
// the cassandra-all jar), talking JMX to the node on 127.0.0.1 only: Cassandra
// offers decommission and the throttle through JMX alone. Milestones come
// from the database: "node-joined" when every running node's gossip
// (system_views.gossip_info) shows the new node NORMAL, "streaming-done"
// when the streaming node's own log says "All sessions completed" (the
// stream plan's end; for a bootstrap it is the new node's log, for a
// decommission the leaving node's), or when decommission returns.

// jmxPropLocal is the JVM property that makes Cassandra listen for JMX on
// the loopback address only, without authentication.
const jmxPropLocal = "-Dcassandra.jmx.local.port="

// streamsDone is the log line of a finished stream plan (StreamResultFuture).
const streamsDone = "All sessions completed"

// streamsStart is the log line of a stream plan that begins
// (StreamResultFuture "Executing streaming plan for Bootstrap" / "for
// Unbootstrap").
const streamsStart = "Executing streaming plan for"

// Timeouts of scaling steps when the caller's context has none.
const (
	scaleTimeout    = 30 * time.Minute // streaming at 5 Mbit/s is slow by design
	nodetoolTimeout = 2 * time.Minute  // every nodetool call but decommission
)

// jmxArgs returns the JVM arguments that switch local JMX on (none when
// the plan has no JMX port).
func (p *nodePlan) jmxArgs() []string {
	if p.jmxPort <= 0 {
		return nil
	}
	return []string{jmxPropLocal + strconv.Itoa(p.jmxPort)}
}

// jmxPort returns a TCP port free on 127.0.0.1 for a node's local JMX.
func jmxPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port for JMX: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// nodeJMXPort reads a node's JMX port from its recorded command line.
func nodeJMXPort(n *launcher.Node) (int, error) {
	for _, a := range n.Argv {
		if v, ok := strings.CutPrefix(a, jmxPropLocal); ok {
			if p, err := strconv.Atoi(v); err == nil && p > 0 {
				return p, nil
			}
		}
	}
	return 0, fmt.Errorf("%s was started without JMX (no %s in its command line): faultbench cannot reach its nodetool", n.Name, strings.TrimSuffix(jmxPropLocal, "="))
}

// toolsLogback keeps nodetool's own logging to warnings.
const toolsLogback = `<configuration scan="false">
  <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%-5level %logger{0} %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="STDERR"/></root>
</configuration>
`

// nodetool runs Cassandra's nodetool against node n, whose JMX listens on
// port of the node's own 127.0.0.1 (in the node's network namespace under
// --net: nodetool then runs there too, through the same netns-exec prefix
// as the node), with the jars of cfg and the JDK module flags Cassandra's
// classes need, and returns its output. Its home (nodetool writes
// ~/.cassandra/nodetool.history) and log configuration are under dir, the
// cluster's directory. The process dies with ctx (and with faultbench:
// Pdeathsig).
func nodetool(ctx context.Context, cfg config, dir string, n *launcher.Node, port int, args ...string) (string, error) {
	logback := filepath.Join(dir, "nodetool-logback.xml")
	if err := os.WriteFile(logback, []byte(toolsLogback), 0o644); err != nil {
		return "", fmt.Errorf("nodetool: %w", err)
	}
	wrap, _ := launcher.SplitWrapper(n.Argv)
	argv := nodetoolArgv(cfg, dir, logback, wrap, port, args)
	var out bytes.Buffer
	cmd := launcher.Command(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := strings.TrimSpace(out.String())
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return text, fmt.Errorf("nodetool %s: %w (%s)", strings.Join(args, " "), err, lastLines(text, 4))
	}
	return text, nil
}

// nodetoolArgv is the command line of one nodetool call: wrap (the node's
// netns-exec prefix, or none), then the JVM with the NodeTool class against
// 127.0.0.1:port.
func nodetoolArgv(cfg config, dir, logback string, wrap []string, port int, args []string) []string {
	argv := append([]string(nil), wrap...)
	argv = append(argv, cfg.java, "-Xmx128m", "-Xss256k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
	argv = append(argv, jvmModuleFlags...)
	argv = append(argv, "-Duser.home="+dir, "-Dlogback.configurationFile=file://"+logback,
		"-cp", filepath.Join(cfg.lib, "*"), "org.apache.cassandra.tools.NodeTool",
		"-h", "127.0.0.1", "-p", strconv.Itoa(port))
	return append(argv, args...)
}

// inNamespaces reports whether c's nodes run in network namespaces of
// their own (their recorded command lines start with netns-exec).
func inNamespaces(c *launcher.Cluster) bool {
	for i := range c.Nodes {
		if w, _ := launcher.SplitWrapper(c.Nodes[i].Argv); w != nil {
			return true
		}
	}
	return false
}

// lastLines returns the last n lines of s, joined by " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// setStreamThroughput sets stream_throughput_outbound on every running
// node of c (megabits per second; 0 lifts the limit), all at once.
func setStreamThroughput(ctx context.Context, cfg config, c *launcher.Cluster, mbit int) error {
	ctx, cancel := launcher.WithDefaultTimeout(ctx, nodetoolTimeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(c.Nodes))
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if !launcher.RunsNode(n) {
			continue
		}
		port, err := nodeJMXPort(n)
		if err != nil {
			errs[i] = err
			continue
		}
		wg.Add(1)
		go func(i int, n *launcher.Node, port int) {
			defer wg.Done()
			if _, err := nodetool(ctx, cfg, c.Dir, n, port, "setstreamthroughput", strconv.Itoa(mbit)); err != nil {
				errs[i] = fmt.Errorf("%s: %w", n.Name, err)
			}
		}(i, n, port)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("setting the streaming throttle to %s: %w", launcher.StreamingString(mbit), err)
		}
	}
	return nil
}

// AddNodes starts opts.Count new nodes (n(N+1) ...) on the next loopback
// addresses and returns once every running node sees all of them NORMAL;
// see the scaling notes above. Milestones: node-started per node, then
// streaming-done (bootstrap only) and node-joined per node as observed.
// Nodes that fail to join are stopped and left out of c.
func (Launcher) AddNodes(ctx context.Context, env *launcher.Env, c *launcher.Cluster, opts launcher.ScaleOptions) ([]string, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	if c.Kind != Kind {
		return nil, fmt.Errorf("cluster %s is of kind %q, not %q", c.Name, c.Kind, Kind)
	}
	if inNamespaces(c) {
		return nil, fmt.Errorf("cassandra: cluster %s runs in network namespaces (--net), whose network has no namespace for a new node: add-node works on a cluster on 127.0.0.x (start it without --net); remove-node works on both", c.Name)
	}
	seed := -1
	for i := range c.Nodes {
		if launcher.RunsNode(&c.Nodes[i]) {
			seed = i
			break
		}
	}
	if seed < 0 {
		return nil, fmt.Errorf("cluster %s has no running node to join", c.Name)
	}
	if len(c.Nodes)+opts.Count > 16 {
		return nil, fmt.Errorf("cluster %s has %d nodes; %d more exceed the 16 faultbench starts on one machine", c.Name, len(c.Nodes), opts.Count)
	}
	cfg, err := parseOptions(launcher.OwnOptions(c.Options))
	if err != nil {
		return nil, fmt.Errorf("cassandra: the cluster's recorded options: %w", err)
	}
	if err := cfg.resolvePaths(); err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	ctx, cancel := launcher.WithDefaultTimeout(ctx, scaleTimeout)
	defer cancel()
	if opts.StreamMbit != launcher.StreamKeep {
		if err := setStreamThroughput(ctx, cfg, c, opts.StreamMbit); err != nil {
			return nil, fmt.Errorf("cassandra: %w", err)
		}
	}
	first := &c.Nodes[seed]
	_, np, err1 := net.SplitHostPort(first.Addr)
	_, sp, err2 := net.SplitHostPort(first.PeerAddr)
	native, err3 := strconv.Atoi(np)
	storage, err4 := strconv.Atoi(sp)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return nil, fmt.Errorf("cassandra: %s's recorded addresses %q and %q are not host:port", first.Name, first.Addr, first.PeerAddr)
	}
	base := len(c.Nodes)
	var plans []nodePlan
	for k := 0; k < opts.Count; k++ {
		i := base + k
		p := nodePlan{name: nextName(c.Nodes[:base], k), host: host(env, i), nativePort: native, storagePort: storage}
		for _, port := range []int{native, storage} {
			l, err := net.Listen("tcp", net.JoinHostPort(p.host, strconv.Itoa(port)))
			if err != nil {
				return nil, fmt.Errorf("cassandra: new node %s cannot use the cluster's port %d on %s: %w", p.name, port, p.host, err)
			}
			_ = l.Close()
		}
		if p.jmxPort, err = jmxPort(); err != nil {
			return nil, fmt.Errorf("cassandra: %w", err)
		}
		p.dir = filepath.Join(c.Dir, p.name)
		p.dbDir = filepath.Join(p.dir, "db")
		p.confDir = filepath.Join(p.dir, "conf")
		p.logFile = filepath.Join(p.dir, "node.log")
		if err := p.writeConfig(cfg, []string{first.PeerAddr}); err != nil {
			return nil, fmt.Errorf("cassandra: %w", err)
		}
		if opts.NoBootstrap {
			if err := appendYAML(p.yamlPath(), "auto_bootstrap: false\n"); err != nil {
				return nil, fmt.Errorf("cassandra: %s: %w", p.name, err)
			}
		}
		argv := p.argv(cfg)
		if opts.Count > 1 {
			// several nodes join at once: let their range movements overlap
			argv = insertBefore(argv, mainClass, "-Dcassandra.consistent.rangemovement=false")
		}
		plans = append(plans, p)
		c.Nodes = append(c.Nodes, launcher.Node{
			Name: p.name, Addr: p.addr(), PeerAddr: p.peerAddr(), DataDir: p.dbDir,
			LogFile: p.logFile, Argv: env.NodeArgv(i, argv), Down: true,
		})
	}
	names := make([]string, len(plans))
	for k := range plans {
		names[k] = plans[k].name
	}
	fail := func(err error) ([]string, error) {
		for k := len(plans) - 1; k >= 0; k-- {
			n := &c.Nodes[base+k]
			if n.PID > 0 {
				_ = launcher.Kill(context.WithoutCancel(ctx), n.PID)
			}
		}
		c.Nodes = c.Nodes[:base] // their files stay for the logs
		return nil, fmt.Errorf("cassandra: adding %s: %w", strings.Join(names, ", "), err)
	}
	for k := range plans {
		n := &c.Nodes[base+k]
		pid, err := env.SpawnNode(ctx, c, n)
		if err != nil {
			return fail(fmt.Errorf("starting %s: %w", n.Name, err))
		}
		n.PID, n.Down = pid, false
		opts.Report(launcher.ScaleNodeStarted, n.Name, fmt.Sprintf("pid %d on %s, %s", pid, nodeHost(n), bootstrapWord(opts)))
		if k < len(plans)-1 {
			// the next node allocates its tokens from the ring it sees:
			// started before this one announced its own, it picks the same
			// ones (Cassandra: "Bootstrap Token collision")
			if err := waitTokens(ctx, n); err != nil {
				return fail(err)
			}
		}
	}
	if err := watchJoin(ctx, env, c, base, opts); err != nil {
		return fail(err)
	}
	for k := range plans {
		c.Nodes[base+k].Role = launcher.RoleReplica
	}
	return names, nil
}

func bootstrapWord(opts launcher.ScaleOptions) string {
	if opts.NoBootstrap {
		return "auto_bootstrap false (no streaming)"
	}
	if opts.StreamMbit == launcher.StreamKeep {
		return "bootstrap with streaming"
	}
	return "bootstrap with streaming " + launcher.StreamingString(opts.StreamMbit)
}

// nextName returns the name of the k-th node added after nodes:
// n(M+1+k) where M is the highest number among the names (a removed
// node's number is not reused, so logs and events stay unambiguous).
func nextName(nodes []launcher.Node, k int) string {
	high := len(nodes)
	for _, n := range nodes {
		if v, err := strconv.Atoi(strings.TrimPrefix(n.Name, "n")); err == nil && v > high {
			high = v
		}
	}
	return "n" + strconv.Itoa(high+1+k)
}

// insertBefore returns argv with extra inserted before the element want
// (at the end when it is missing).
func insertBefore(argv []string, want string, extra ...string) []string {
	for i, a := range argv {
		if a == want {
			out := append(append(append([]string(nil), argv[:i]...), extra...), argv[i:]...)
			return out
		}
	}
	return append(argv, extra...)
}

// appendYAML appends lines to a cassandra.yaml.
func appendYAML(path, lines string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(lines); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// watchJoin polls until the nodes from index base on are up and NORMAL
// everywhere (notUp), reporting streaming-done per node when its log shows
// its bootstrap streams completed and node-joined when the first running
// node's gossip shows it NORMAL. A new node that exits fails the wait with
// its log tail.
func watchJoin(ctx context.Context, env *launcher.Env, c *launcher.Cluster, base int, opts launcher.ScaleOptions) error {
	s := &sessions{c: c, ss: make([]*gocql.Session, len(c.Nodes))}
	defer s.close()
	streamed := map[string]bool{}
	started := map[string]bool{}
	joined := map[string]bool{}
	last := ""
	restarts := map[string]int{}
	for {
		for i := base; i < len(c.Nodes); i++ {
			n := &c.Nodes[i]
			if !launcher.Alive(n.PID) {
				// its first gossip round got no answer in time (a loaded
				// machine): it never joined, so start it again, twice at most
				if restarts[n.Name] < 2 && gossipFailed(n.LogFile) {
					restarts[n.Name]++
					pid, err := env.SpawnNode(ctx, c, n)
					if err == nil {
						n.PID = pid
						opts.Report(launcher.ScaleNodeStarted, n.Name, fmt.Sprintf("pid %d, started again: its first gossip round got no answer in time", pid))
						continue
					}
				}
				return fmt.Errorf("%s (pid %d) %w:\n%s", n.Name, n.PID, errExited, launcher.LogTail(n.LogFile, 12))
			}
			if !opts.NoBootstrap && !started[n.Name] && logHas(n.LogFile, streamsStart) {
				started[n.Name] = true
				opts.Report(launcher.ScaleStreamingStart, n.Name, "bootstrap stream plan started (node log: "+streamsStart+" Bootstrap)")
			}
			if !opts.NoBootstrap && !streamed[n.Name] && logHas(n.LogFile, streamsDone) {
				streamed[n.Name] = true
				opts.Report(launcher.ScaleStreamingDone, n.Name, "bootstrap streams completed (node log: "+streamsDone+")")
			}
		}
		for i, st := range normalSeenBy(ctx, c, s, base) {
			n := &c.Nodes[i]
			if st && !joined[n.Name] {
				joined[n.Name] = true
				opts.Report(launcher.ScaleNodeJoined, n.Name, "NORMAL in gossip")
			}
		}
		reason := notUp(ctx, c, s, len(c.Nodes), -1)
		if reason == "" {
			for i := base; i < len(c.Nodes); i++ {
				n := &c.Nodes[i]
				if !joined[n.Name] {
					joined[n.Name] = true
					opts.Report(launcher.ScaleNodeJoined, n.Name, "NORMAL in gossip")
				}
				if !opts.NoBootstrap && !streamed[n.Name] {
					// a node with nothing to stream logs no stream plan
					streamed[n.Name] = true
					opts.Report(launcher.ScaleStreamingDone, n.Name, "bootstrap finished (system.local bootstrapped=COMPLETED)")
				}
			}
			return nil
		}
		if ctx.Err() == nil || last == "" {
			last = reason
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("new nodes not up: %s: %w", last, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// normalSeenBy returns, for the nodes from base on, whether the first
// running older node's gossip shows them NORMAL (index -> seen).
func normalSeenBy(ctx context.Context, c *launcher.Cluster, s *sessions, base int) map[int]bool {
	out := map[int]bool{}
	for j := 0; j < base; j++ {
		if !launcher.RunsNode(&c.Nodes[j]) {
			continue
		}
		sess, err := s.get(j)
		if err != nil {
			return out
		}
		iter := sess.Query(`SELECT address, status FROM system_views.gossip_info`).WithContext(ctx).Iter()
		var addr net.IP
		var status string
		st := map[string]string{}
		for iter.Scan(&addr, &status) {
			st[addr.String()] = status
		}
		if err := iter.Close(); err != nil {
			s.failed(j)
			return out
		}
		for i := base; i < len(c.Nodes); i++ {
			out[i] = strings.HasPrefix(st[nodeHost(&c.Nodes[i])], "NORMAL")
		}
		return out
	}
	return out
}

// tokensAnnounced is the log line of a bootstrapping node that has put its
// tokens into gossip and waits one ring delay before it streams.
const tokensAnnounced = "for pending range setup"

// waitTokens waits until new node n has told the ring its tokens (its log
// says tokensAnnounced, or, without bootstrap, that it is NORMAL) or its
// process exited (watchJoin deals with that), so that a node started next
// allocates other tokens.
func waitTokens(ctx context.Context, n *launcher.Node) error {
	tk := time.NewTicker(pollInterval)
	defer tk.Stop()
	normal := "/" + nodeHost(n) + ":"
	for {
		if announcedTokens(n.LogFile, normal) || !launcher.Alive(n.PID) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to announce its tokens before starting the next node: %w", n.Name, ctx.Err())
		case <-tk.C:
		}
	}
}

// announcedTokens reports whether the node log at path says the node's
// tokens are in gossip: the bootstrap's tokensAnnounced, or the node
// (self, its "/host:" in the line) jumping to NORMAL.
func announcedTokens(path, self string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	if bytes.Contains(b, []byte(tokensAnnounced)) {
		return true
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if bytes.Contains(line, []byte("state jump to NORMAL")) && bytes.Contains(line, []byte(self)) {
			return true
		}
	}
	return false
}

// logHas reports whether the log file contains s.
func logHas(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && bytes.Contains(b, []byte(s))
}

// RemoveNode decommissions node name (nodetool decommission: it streams
// its ranges to the nodes that take them over and leaves the ring), stops
// its process and deletes it from c.Nodes. With opts.StreamMbit set, the
// throttle is set on every running node first. Milestones: streaming-done
// when the leaving node's log says its streams completed (or decommission
// returned), node-left once its process is gone.
func (Launcher) RemoveNode(ctx context.Context, env *launcher.Env, c *launcher.Cluster, name string, opts launcher.ScaleOptions) error {
	if c.Kind != Kind {
		return fmt.Errorf("cluster %s is of kind %q, not %q", c.Name, c.Kind, Kind)
	}
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	if !launcher.RunsNode(n) {
		return fmt.Errorf("cassandra: %s is not running; only a running node can decommission", name)
	}
	port, err := nodeJMXPort(n)
	if err != nil {
		return fmt.Errorf("cassandra: %w", err)
	}
	cfg, err := parseOptions(launcher.OwnOptions(c.Options))
	if err != nil {
		return fmt.Errorf("cassandra: the cluster's recorded options: %w", err)
	}
	if err := cfg.resolvePaths(); err != nil {
		return fmt.Errorf("cassandra: %w", err)
	}
	others := 0
	for i := range c.Nodes {
		if c.Nodes[i].Name != name && launcher.RunsNode(&c.Nodes[i]) {
			others++
		}
	}
	if cfg.rf > others {
		return fmt.Errorf("cassandra: decommissioning %s would leave %d running nodes for keyspace %s's %d replicas", name, others, cfg.keyspace, cfg.rf)
	}
	ctx, cancel := launcher.WithDefaultTimeout(ctx, scaleTimeout)
	defer cancel()
	if opts.StreamMbit != launcher.StreamKeep {
		if err := setStreamThroughput(ctx, cfg, c, opts.StreamMbit); err != nil {
			return fmt.Errorf("cassandra: %w", err)
		}
	}
	logFile, pid := n.LogFile, n.PID
	done := make(chan struct{})
	var wg sync.WaitGroup
	var sawLog bool
	wg.Add(1)
	go func() { // the leaving node's own word on its streams
		defer wg.Done()
		tk := time.NewTicker(pollInterval)
		defer tk.Stop()
		began := false
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				if !began && logHas(logFile, streamsStart) {
					began = true
					opts.Report(launcher.ScaleStreamingStart, name, "decommission stream plan started (node log: "+streamsStart+" Unbootstrap)")
				}
				if logHas(logFile, streamsDone) {
					sawLog = true
					opts.Report(launcher.ScaleStreamingDone, name, "decommission streams completed (node log: "+streamsDone+")")
					return
				}
			}
		}
	}()
	// --force: Cassandra's system_distributed and system_traces keyspaces
	// have 3 replicas, more than a small cluster keeps; the data keyspace
	// was checked above
	_, derr := nodetool(ctx, cfg, c.Dir, n, port, "decommission", "--force")
	close(done)
	wg.Wait()
	if derr != nil {
		return fmt.Errorf("cassandra: decommissioning %s: %w", name, derr)
	}
	if !sawLog {
		opts.Report(launcher.ScaleStreamingDone, name, "decommission returned")
	}
	if err := launcher.Terminate(ctx, pid, stopGrace); err != nil {
		return fmt.Errorf("cassandra: stopping decommissioned %s: %w", name, err)
	}
	for i := range c.Nodes {
		if c.Nodes[i].Name == name {
			c.Nodes = append(c.Nodes[:i], c.Nodes[i+1:]...)
			break
		}
	}
	opts.Report(launcher.ScaleNodeLeft, name, "decommissioned and stopped")
	return nil
}

// gossipStartFailures are what a node logs when its first gossip round
// got no answer in time (the shadow round waits one ring delay, ringDelayMS):
// on a machine loaded far beyond its cores the seed answers too late.
var gossipStartFailures = []string{"Unable to gossip with any peers", "Unable to contact any seeds"}

// gossipFailed reports whether a node's log says its start failed so.
func gossipFailed(logFile string) bool {
	for _, m := range gossipStartFailures {
		if logHas(logFile, m) {
			return true
		}
	}
	return false
}

// startRetryingGossip is startAndJoin, tried up to three times when the
// node exits because its first gossip round got no answer (the node has
// not joined then, so starting it again is safe).
func startRetryingGossip(ctx context.Context, env *launcher.Env, c *launcher.Cluster, i, upTo int) error {
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		err = startAndJoin(ctx, env, c, i, upTo)
		if err == nil || !errors.Is(err, errExited) || !gossipFailed(c.Nodes[i].LogFile) || ctx.Err() != nil {
			return err
		}
	}
	return err
}
