package redis

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/faultbench/faultbench/internal/launcher"
)

// ClusterLauncher starts Redis Cluster clusters (kind "redis-cluster"):
// Spec.Nodes masters, each with Spec.Replicas replicas. Nodes n1..nM are the
// masters; n(M+1).. are the replicas, attached round-robin (with M=3 and one
// replica each, n4 replicates n1, n5 n2, n6 n3). Every replica may fail over
// (cluster-replica-validity-factor 0) once its master has been unreachable
// for cluster-node-timeout (option redis.cluster-node-timeout, 1000 ms by
// default); failover needs a majority of masters up, so use at least three
// masters for crash scenarios. The zero value is ready to use.
type ClusterLauncher struct{}

var _ launcher.Launcher = ClusterLauncher{}

// Kind implements launcher.Launcher.
func (ClusterLauncher) Kind() string { return KindCluster }

// Up starts every node, creates the cluster and waits until it is healthy
// (see WaitHealthy). On error every started node is stopped again.
func (l ClusterLauncher) Up(ctx context.Context, env *launcher.Env, spec launcher.Spec) (*launcher.Cluster, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("redis-cluster: %w", err)
	}
	total := spec.Nodes * (1 + spec.Replicas)
	if len(spec.Hosts) > 0 {
		cfg, err := parseValues(spec.Options)
		if err != nil {
			return nil, fmt.Errorf("redis-cluster: %w", err)
		}
		ctx, cancel := launcher.WithDefaultTimeout(ctx, defaultUpTimeout)
		defer cancel()
		c, plans, err := planOnHosts(ctx, env, spec, KindCluster, cfg, total)
		if err != nil {
			return nil, fmt.Errorf("redis-cluster: %w", err)
		}
		return l.bringUp(ctx, env, c, plans, cfg, spec.Nodes)
	}
	cfg, err := parseOptions(spec.Options)
	if err != nil {
		return nil, fmt.Errorf("redis-cluster: %w", err)
	}
	if err := checkVersion(ctx, cfg.binary); err != nil {
		return nil, fmt.Errorf("redis-cluster: %w", err)
	}
	if total > 256 {
		return nil, fmt.Errorf("redis-cluster: %d masters with %d replicas each is %d nodes, more than 256 on one machine", spec.Nodes, spec.Replicas, total)
	}
	ctx, cancel := launcher.WithDefaultTimeout(ctx, defaultUpTimeout)
	defer cancel()
	dir, temp, err := launcher.ClusterDir(spec, "redis", launcher.NodeDataDirs(total, "data"))
	if err != nil {
		return nil, fmt.Errorf("redis-cluster: %w", err)
	}
	plans, err := planNodes(env, dir, total, true)
	if err != nil {
		if temp {
			_ = removeTemp(dir)
		}
		return nil, fmt.Errorf("redis-cluster: %w", err)
	}
	return l.bringUp(ctx, env, newCluster(KindCluster, spec, dir, temp, cfg, plans), plans, cfg, spec.Nodes)
}

// bringUp starts the planned nodes of c, creates the cluster of masters
// and waits until it is healthy; on error it stops what it started.
func (l ClusterLauncher) bringUp(ctx context.Context, env *launcher.Env, c *launcher.Cluster, plans []nodePlan, cfg config, masters int) (*launcher.Cluster, error) {
	ok := false
	defer func() {
		if !ok {
			stopAll(c)
		}
	}()
	for i := range plans {
		if err := startPlanned(ctx, env, c, plans, i, cfg); err != nil {
			return nil, fmt.Errorf("redis-cluster: %w", err)
		}
	}
	if err := createCluster(ctx, c, masters); err != nil {
		return nil, fmt.Errorf("redis-cluster: creating the cluster: %w", err)
	}
	if err := l.WaitHealthy(ctx, c); err != nil {
		return nil, err
	}
	if err := l.Refresh(ctx, c); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// createCluster turns freshly started, empty cluster-mode nodes into one
// cluster: masters are the first `masters` nodes, the rest replicate them
// round-robin.
func createCluster(ctx context.Context, c *launcher.Cluster, masters int) error {
	clients := make([]*goredis.Client, len(c.Nodes))
	for i := range c.Nodes {
		clients[i] = adminClient(c.Nodes[i].Addr)
	}
	defer closeAll(clients)

	for i, cl := range clients {
		n := &c.Nodes[i]
		id, err := cl.ClusterMyID(ctx).Result()
		if err != nil {
			return fmt.Errorf("%s: CLUSTER MYID: %w", n.Name, err)
		}
		n.ID = id
		// distinct epochs, as redis-cli --cluster create does, so that no
		// two masters start with the same config epoch
		if _, err := cl.Do(ctx, "cluster", "set-config-epoch", i+1).Result(); err != nil {
			return fmt.Errorf("%s: CLUSTER SET-CONFIG-EPOCH: %w", n.Name, err)
		}
	}
	for m := 0; m < masters; m++ {
		lo, hi := m*TotalSlots/masters, (m+1)*TotalSlots/masters-1
		if err := addSlots(ctx, clients[m], lo, hi); err != nil {
			return fmt.Errorf("%s: assigning slots %d-%d: %w", c.Nodes[m].Name, lo, hi, err)
		}
	}
	first := clients[0]
	for i := 1; i < len(c.Nodes); i++ {
		host, port, err := net.SplitHostPort(c.Nodes[i].Addr)
		if err != nil {
			return err
		}
		_, bus, err := net.SplitHostPort(c.Nodes[i].PeerAddr)
		if err != nil {
			return fmt.Errorf("%s: bus address %q: %w", c.Nodes[i].Name, c.Nodes[i].PeerAddr, err)
		}
		if _, err := first.Do(ctx, "cluster", "meet", host, port, bus).Result(); err != nil {
			return fmt.Errorf("%s: CLUSTER MEET %s: %w", c.Nodes[0].Name, c.Nodes[i].Name, err)
		}
	}
	if err := waitAllKnown(ctx, c, clients); err != nil {
		return err
	}
	for i := masters; i < len(c.Nodes); i++ {
		m := (i - masters) % masters
		if _, err := clients[i].ClusterReplicate(ctx, c.Nodes[m].ID).Result(); err != nil {
			return fmt.Errorf("%s: CLUSTER REPLICATE %s (%s): %w", c.Nodes[i].Name, c.Nodes[m].Name, c.Nodes[m].ID, err)
		}
	}
	return nil
}

// addSlots assigns slots lo..hi with ADDSLOTSRANGE (Redis 7), falling back
// to ADDSLOTS for older servers.
func addSlots(ctx context.Context, cl *goredis.Client, lo, hi int) error {
	_, err := cl.ClusterAddSlotsRange(ctx, lo, hi).Result()
	unknown := goredis.HasErrorPrefix(err, "ERR unknown subcommand") || goredis.HasErrorPrefix(err, "unknown subcommand")
	if !unknown {
		return err
	}
	slots := make([]int, 0, hi-lo+1)
	for s := lo; s <= hi; s++ {
		slots = append(slots, s)
	}
	_, err = cl.ClusterAddSlots(ctx, slots...).Result()
	return err
}

// waitAllKnown waits until every node knows every other (no handshake).
func waitAllKnown(ctx context.Context, c *launcher.Cluster, clients []*goredis.Client) error {
	for {
		reason := ""
		for i, cl := range clients {
			out, err := cl.ClusterNodes(ctx).Result()
			if err != nil {
				reason = fmt.Sprintf("%s: CLUSTER NODES: %v", c.Nodes[i].Name, err)
				break
			}
			view := parseClusterNodes(out)
			known := 0
			for _, e := range view {
				if !e.handshake && !e.noaddr && e.id != "" {
					known++
				}
			}
			if known < len(c.Nodes) {
				reason = fmt.Sprintf("%s knows %d of %d nodes", c.Nodes[i].Name, known, len(c.Nodes))
				break
			}
		}
		if reason == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the nodes to meet: %s: %w", reason, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// StartNode starts a stopped node again with its recorded command line: the
// same port, data directory and nodes.conf, so it rejoins the cluster with
// its old id (as a replica if its master role was failed over meanwhile). It
// returns once the process answers; WaitHealthy waits for it to be in sync.
func (ClusterLauncher) StartNode(ctx context.Context, env *launcher.Env, c *launcher.Cluster, name string) error {
	n, err := checkStart(c, KindCluster, name)
	if err != nil {
		return err
	}
	return startNode(ctx, env, c, n)
}

// Refresh sets each node's Role and ID from its own CLUSTER NODES line
// ("myself"). A node whose process is gone is down with pid 0; one that
// runs but does not answer within a second (paused, partitioned) is down
// with no role and keeps its pid. It fails only when no running node
// answers.
func (ClusterLauncher) Refresh(ctx context.Context, c *launcher.Cluster) error {
	refreshLiveness(ctx, c)
	answered, running := 0, 0
	var lastErr error
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Down {
			continue
		}
		running++
		cl := adminClient(n.Addr)
		out, err := cl.ClusterNodes(ctx).Result()
		_ = cl.Close()
		self, ok := selfEntry(parseClusterNodes(out))
		if err == nil && !ok {
			err = fmt.Errorf("no myself line in CLUSTER NODES")
		}
		if err != nil {
			lastErr = fmt.Errorf("%s: %w", n.Name, err)
			n.Down, n.Role = true, launcher.RoleUnknown
			continue
		}
		answered++
		n.ID, n.Role = self.id, self.role()
	}
	if running > 0 && answered == 0 {
		return fmt.Errorf("redis-cluster %s: no running node answered CLUSTER NODES (last error: %v)", c.Name, lastErr)
	}
	return nil
}

// WaitHealthy waits until every running node reports cluster_state:ok with
// all 16384 slots assigned and served, all running nodes agree on which
// master owns which slots, no running node is seen as failing or in
// handshake, every slot owner is running, every running replica reports
// master_link_status:up, and a probe write on each master (a key
// faultbench:probe:N in its slots, expiring after 10 s) is acknowledged by
// all its running replicas through WAIT. Nodes whose process is gone are skipped. Without a
// deadline on ctx it gives up after a minute; the error names the node and
// what it was still waiting for.
func (ClusterLauncher) WaitHealthy(ctx context.Context, c *launcher.Cluster) error {
	ctx, cancel := launcher.WithDefaultTimeout(ctx, defaultHealthyTimeout)
	defer cancel()
	a := newAdmins(c)
	defer a.close()
	last := ""
	for {
		reason := clusterUnhealthy(ctx, c, a)
		if reason == "" {
			return nil
		}
		// a check cut short by the deadline says less than the one before
		if ctx.Err() == nil || last == "" {
			last = reason
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis-cluster %s not healthy: %s: %w", c.Name, last, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// clusterUnhealthy returns what is not healthy yet, or "".
func clusterUnhealthy(ctx context.Context, c *launcher.Cluster, a *admins) string {
	up := aliveAll(ctx, c)
	anyUp := false
	for i := range c.Nodes {
		anyUp = anyUp || up[i]
	}
	if !anyUp {
		return "no node is running"
	}
	byID := map[string]int{}
	for i, n := range c.Nodes {
		if n.ID != "" {
			byID[n.ID] = i
		}
	}
	signature := ""
	sigFrom := ""
	selves := make([]clusterNodeEntry, len(c.Nodes))
	for i := range c.Nodes {
		if !up[i] {
			continue
		}
		n := &c.Nodes[i]
		if c.ProcsOf(n).Stopped(ctx, n.PID) {
			return fmt.Sprintf("%s (pid %d) is paused", n.Name, n.PID)
		}
		info, err := a.get(i).ClusterInfo(ctx).Result()
		if err != nil {
			a.failed(i, err)
			return fmt.Sprintf("%s (%s) not answering CLUSTER INFO: %v", n.Name, n.Addr, err)
		}
		if st := infoField(info, "cluster_state"); st != "ok" {
			return fmt.Sprintf("%s reports cluster_state:%s", n.Name, st)
		}
		if s := infoField(info, "cluster_slots_assigned"); s != strconv.Itoa(TotalSlots) {
			return fmt.Sprintf("%s: %s of %d slots assigned", n.Name, s, TotalSlots)
		}
		if s := infoField(info, "cluster_slots_ok"); s != strconv.Itoa(TotalSlots) {
			return fmt.Sprintf("%s: %s of %d slots ok (the others' master is failing)", n.Name, s, TotalSlots)
		}
		out, err := a.get(i).ClusterNodes(ctx).Result()
		if err != nil {
			a.failed(i, err)
			return fmt.Sprintf("%s (%s) not answering CLUSTER NODES: %v", n.Name, n.Addr, err)
		}
		view := parseClusterNodes(out)
		if len(view) < len(c.Nodes) {
			return fmt.Sprintf("%s knows %d of %d nodes", n.Name, len(view), len(c.Nodes))
		}
		var owners []string
		var self clusterNodeEntry
		for _, e := range view {
			if e.myself {
				self = e
			}
			j, known := byID[e.id]
			name := e.id
			if known {
				name = c.Nodes[j].Name
			}
			if e.handshake {
				return fmt.Sprintf("%s is still in handshake with %s", n.Name, e.addr)
			}
			if known && up[j] && (e.fail || e.pfail) {
				return fmt.Sprintf("%s still sees %s as failing (flags %s)", n.Name, name, e.flags)
			}
			if e.master && len(e.slots) > 0 {
				if known && !up[j] {
					return fmt.Sprintf("%s: slots %s of %s (down) not yet taken over", n.Name, strings.Join(e.slots, ","), name)
				}
				owners = append(owners, name+"="+strings.Join(e.slots, ","))
			}
		}
		selves[i] = self
		sort.Strings(owners)
		sig := strings.Join(owners, " ")
		if sigFrom == "" {
			signature, sigFrom = sig, n.Name
		} else if sig != signature {
			return fmt.Sprintf("%s and %s disagree on the slot owners (%s / %s)", sigFrom, n.Name, signature, sig)
		}
		if self.replica {
			repl, err := a.get(i).Info(ctx, "replication").Result()
			if err != nil {
				a.failed(i, err)
				return fmt.Sprintf("%s (%s) not answering INFO replication: %v", n.Name, n.Addr, err)
			}
			if st := infoField(repl, "master_link_status"); st != "up" {
				return fmt.Sprintf("replica %s: master_link_status:%s", n.Name, st)
			}
		}
	}
	// every master's replication stream reaches its running replicas
	for i := range c.Nodes {
		m := selves[i]
		if !up[i] || !m.master || len(m.slots) == 0 {
			continue
		}
		want := 0
		for j := range c.Nodes {
			if up[j] && selves[j].replica && selves[j].masterID == m.id {
				want++
			}
		}
		if want == 0 {
			continue
		}
		key := probeKeyFor(m.slots)
		if key == "" {
			continue
		}
		reason, err := probeReplication(ctx, a.get(i), c.Nodes[i].Name, key, want)
		if err != nil {
			a.failed(i, err)
			return fmt.Sprintf("%s: probe write: %v", c.Nodes[i].Name, err)
		}
		if reason != "" {
			return reason
		}
	}
	return ""
}

func closeAll(clients []*goredis.Client) {
	for _, cl := range clients {
		if cl != nil {
			_ = cl.Close()
		}
	}
}

// clusterNodeEntry is one line of CLUSTER NODES.
type clusterNodeEntry struct {
	id        string
	addr      string // host:port (empty host when the node does not know its own address yet)
	flags     string
	masterID  string // "-" for masters
	linkState string
	slots     []string // slot ranges, e.g. "0-5460" (migration markers dropped)

	myself, master, replica, fail, pfail, handshake, noaddr bool
}

func (e clusterNodeEntry) role() string {
	switch {
	case e.master:
		return launcher.RolePrimary
	case e.replica:
		return launcher.RoleReplica
	}
	return launcher.RoleUnknown
}

// parseClusterNodes parses the reply of CLUSTER NODES:
// <id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link-state> <slot> ...
// Malformed lines are skipped.
func parseClusterNodes(s string) []clusterNodeEntry {
	var out []clusterNodeEntry
	for line := range strings.SplitSeq(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		e := clusterNodeEntry{id: f[0], flags: f[2], masterID: f[3], linkState: f[7]}
		addr := f[1]
		if i := strings.IndexByte(addr, '@'); i >= 0 {
			addr = addr[:i]
		}
		if i := strings.IndexByte(addr, ','); i >= 0 {
			addr = addr[:i]
		}
		e.addr = addr
		for fl := range strings.SplitSeq(f[2], ",") {
			switch fl {
			case "myself":
				e.myself = true
			case "master":
				e.master = true
			case "slave":
				e.replica = true
			case "fail":
				e.fail = true
			case "fail?":
				e.pfail = true
			case "handshake":
				e.handshake = true
			case "noaddr":
				e.noaddr = true
			}
		}
		for _, sl := range f[8:] {
			if strings.HasPrefix(sl, "[") {
				continue
			}
			e.slots = append(e.slots, sl)
		}
		out = append(out, e)
	}
	return out
}

func selfEntry(view []clusterNodeEntry) (clusterNodeEntry, bool) {
	for _, e := range view {
		if e.myself {
			return e, true
		}
	}
	return clusterNodeEntry{}, false
}
