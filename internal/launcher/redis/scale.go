package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/faultbench/faultbench/internal/launcher"
)

var (
	_ launcher.Scaler   = ClusterLauncher{}
	_ launcher.Shrinker = ClusterLauncher{}
)

// Scaling a Redis Cluster (docs/targets-redis.md, "Scaling") is resharding,
// with the commands redis-cli --cluster reshard uses, 64 slots at a time
// (pipelined): CLUSTER SETSLOT s IMPORTING on the receiver, SETSLOT s
// MIGRATING on the sender, MIGRATE of the slots' keys in batches (CLUSTER
// GETKEYSINSLOT), then SETSLOT s NODE on the receiver and the sender (the
// other masters learn it by gossip).
// Clients follow ASK and MOVED redirections meanwhile. AddNodes starts a
// new master, introduces it (CLUSTER MEET) and moves to it an even share of
// the slots, taken from every master in proportion to what it holds;
// RemoveNode moves all of a master's slots to the other masters (round
// robin), makes every node forget it (CLUSTER FORGET) and stops it. Redis
// has no streaming throttle and no join without data: those options are
// refused.

// Resharding parameters.
const (
	migrateBatch    = 100              // keys per MIGRATE and per GETKEYSINSLOT
	slotBatch       = 64               // slots whose commands are pipelined together
	migrateTimeout  = 5000             // MIGRATE's own timeout, ms
	reshardTimeout  = 10 * time.Minute // a scaling step without a deadline
	slotsPerReport  = 512              // a slots-moved milestone at least every this many slots
	forgetAttempts  = 20
	migrateQueryMax = 10 * time.Second // bound of one MIGRATE call
)

// errRemoteScale refuses adding or removing nodes of a cluster whose nodes
// run on inventory hosts (one node per host, chosen at cluster up).
var errRemoteScale = errors.New("redis-cluster: adding or removing nodes of a cluster on inventory hosts (--hosts) is not supported yet")

// CheckScaleOptions implements launcher.ScaleOptionChecker: Redis Cluster
// has no streaming throttle and no join without data.
func (ClusterLauncher) CheckScaleOptions(opts launcher.ScaleOptions) error {
	return checkClusterScaleOpts(opts)
}

func checkClusterScaleOpts(opts launcher.ScaleOptions) error {
	if opts.StreamMbit != launcher.StreamKeep {
		return fmt.Errorf("redis-cluster: no streaming throttle (slots migrate key batch by key batch as fast as they go); leave streaming out")
	}
	if opts.NoBootstrap {
		return fmt.Errorf("redis-cluster: no join without data (bootstrap: false): a master serves only the slots whose keys it received")
	}
	return nil
}

// slotOwners reads CLUSTER NODES through cl and returns, per master id,
// the slots it owns, with the master's address by id.
func slotOwners(ctx context.Context, cl *goredis.Client) (map[string][]int, map[string]string, error) {
	out, err := cl.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("CLUSTER NODES: %w", err)
	}
	owners := map[string][]int{}
	addrs := map[string]string{}
	for _, e := range parseClusterNodes(out) {
		if !e.master || e.fail {
			continue
		}
		addrs[e.id] = e.addr
		owners[e.id] = nil
		for _, r := range e.slots {
			lo, hi, ok := strings.Cut(r, "-")
			a, err1 := strconv.Atoi(lo)
			b := a
			var err2 error
			if ok {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil {
				continue
			}
			for s := a; s <= b; s++ {
				owners[e.id] = append(owners[e.id], s)
			}
		}
	}
	return owners, addrs, nil
}

// migrator moves slots between the nodes of c, reporting progress.
type migrator struct {
	c       *launcher.Cluster
	clients map[string]*goredis.Client // by node id
	names   map[string]string          // node id -> name
	opts    launcher.ScaleOptions
}

func newMigrator(c *launcher.Cluster, opts launcher.ScaleOptions) *migrator {
	m := &migrator{c: c, clients: map[string]*goredis.Client{}, names: map[string]string{}, opts: opts}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.ID != "" && alive(n) {
			m.clients[n.ID] = adminClient(n.Addr)
			m.names[n.ID] = n.Name
		}
	}
	return m
}

func (m *migrator) close() {
	for _, cl := range m.clients {
		_ = cl.Close()
	}
}

func (m *migrator) client(id string) (*goredis.Client, error) {
	cl, ok := m.clients[id]
	if !ok {
		return nil, fmt.Errorf("no running node with id %s", id)
	}
	return cl, nil
}

// move migrates slots from src to dst, slotBatch slots at a time with
// every command of a step pipelined (IMPORTING on the receiver, MIGRATING
// on the sender, the keys, NODE on the receiver, NODE on the sender),
// reporting a slots-moved milestone every slotsPerReport slots and at the
// end. It returns the keys moved.
func (m *migrator) move(ctx context.Context, src, dst string, slots []int) (int, error) {
	from, err := m.client(src)
	if err != nil {
		return 0, err
	}
	to, err := m.client(dst)
	if err != nil {
		return 0, err
	}
	var dstHost, dstPort string
	for _, n := range m.c.Nodes {
		if n.ID == dst {
			dstHost, dstPort, _ = net.SplitHostPort(n.Addr)
		}
	}
	total, batchKeys, batchSlots := 0, 0, 0
	report := func() {
		if batchSlots > 0 {
			m.opts.Report(launcher.ScaleSlotsMoved, m.names[dst], fmt.Sprintf("%d slots (%d keys) %s -> %s", batchSlots, batchKeys, m.names[src], m.names[dst]))
		}
		batchKeys, batchSlots = 0, 0
	}
	// pipelined runs one command per slot of batch on cl; tolerate names
	// an error text that is not a failure
	pipelined := func(cl *goredis.Client, who string, batch []int, tolerate string, args func(s int) []any) error {
		pipe := cl.Pipeline()
		cmds := make([]*goredis.Cmd, len(batch))
		for i, s := range batch {
			cmds[i] = pipe.Do(ctx, args(s)...)
		}
		_, _ = pipe.Exec(ctx)
		for i, c := range cmds {
			if err := c.Err(); err != nil && (tolerate == "" || !strings.Contains(err.Error(), tolerate)) {
				return fmt.Errorf("slot %d: %v on %s: %w", batch[i], args(batch[i])[:4], who, err)
			}
		}
		return nil
	}
	for lo := 0; lo < len(slots); lo += slotBatch {
		batch := slots[lo:min(lo+slotBatch, len(slots))]
		if err := pipelined(to, m.names[dst], batch, "", func(s int) []any { return []any{"cluster", "setslot", s, "importing", src} }); err != nil {
			return total, err
		}
		if err := pipelined(from, m.names[src], batch, "", func(s int) []any { return []any{"cluster", "setslot", s, "migrating", dst} }); err != nil {
			return total, err
		}
		for {
			pipe := from.Pipeline()
			cmds := make([]*goredis.StringSliceCmd, len(batch))
			for i, s := range batch {
				cmds[i] = pipe.ClusterGetKeysInSlot(ctx, s, migrateBatch)
			}
			_, _ = pipe.Exec(ctx)
			pipe = from.Pipeline()
			var migrates []*goredis.Cmd
			moved := 0
			for i, c := range cmds {
				keys, err := c.Result()
				if err != nil {
					return total, fmt.Errorf("slot %d: GETKEYSINSLOT on %s: %w", batch[i], m.names[src], err)
				}
				if len(keys) == 0 {
					continue
				}
				// one MIGRATE per slot: its keys must hash to one slot
				args := []any{"migrate", dstHost, dstPort, "", 0, migrateTimeout, "replace", "keys"}
				for _, key := range keys {
					args = append(args, key)
				}
				migrates = append(migrates, pipe.Do(ctx, args...))
				moved += len(keys)
			}
			if len(migrates) == 0 {
				break
			}
			mctx, cancel := context.WithTimeout(ctx, migrateQueryMax)
			_, _ = pipe.Exec(mctx)
			cancel()
			for _, c := range migrates {
				if err := c.Err(); err != nil && err != goredis.Nil {
					return total, fmt.Errorf("MIGRATE %s -> %s: %w", m.names[src], m.names[dst], err)
				}
			}
			total += moved
			batchKeys += moved
		}
		// the receiver first, so that it serves the slots before the sender
		// redirects to it; the other masters learn the owner by gossip. (A
		// sender that gave its last slot away may already have turned into
		// a replica of the receiver: cluster-allow-replica-migration.)
		if err := pipelined(to, m.names[dst], batch, "", func(s int) []any { return []any{"cluster", "setslot", s, "node", dst} }); err != nil {
			return total, err
		}
		if err := pipelined(from, m.names[src], batch, "only with masters", func(s int) []any { return []any{"cluster", "setslot", s, "node", dst} }); err != nil {
			return total, err
		}
		batchSlots += len(batch)
		if batchSlots >= slotsPerReport {
			report()
		}
	}
	report()
	return total, nil
}

// AddNodes starts opts.Count new masters one after the other; each meets
// the cluster (node-started, then node-joined once every node knows it)
// and receives an even share of the slots (slots-moved per batch,
// streaming-done when its last slot moved).
func (ClusterLauncher) AddNodes(ctx context.Context, env *launcher.Env, c *launcher.Cluster, opts launcher.ScaleOptions) ([]string, error) {
	if c.Inventory != "" {
		return nil, errRemoteScale
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("redis-cluster: %w", err)
	}
	if err := checkClusterScaleOpts(opts); err != nil {
		return nil, err
	}
	if c.Kind != KindCluster {
		return nil, fmt.Errorf("cluster %s is of kind %q, not %q", c.Name, c.Kind, KindCluster)
	}
	cfg, err := parseOptions(c.Options)
	if err != nil {
		return nil, fmt.Errorf("redis-cluster: the cluster's recorded options: %w", err)
	}
	ctx, cancel := launcher.WithDefaultTimeout(ctx, reshardTimeout)
	defer cancel()
	var names []string
	for k := 0; k < opts.Count; k++ {
		name, err := addMaster(ctx, env, c, cfg, opts)
		if err != nil {
			return names, err
		}
		names = append(names, name)
	}
	return names, nil
}

// nextName returns n(M+1), M the highest node number in c.
func nextName(c *launcher.Cluster) string {
	high := len(c.Nodes)
	for _, n := range c.Nodes {
		if v, err := strconv.Atoi(strings.TrimPrefix(n.Name, "n")); err == nil && v > high {
			high = v
		}
	}
	return "n" + strconv.Itoa(high+1)
}

// addMaster adds one master and moves its share of slots to it.
func addMaster(ctx context.Context, env *launcher.Env, c *launcher.Cluster, cfg config, opts launcher.ScaleOptions) (string, error) {
	seed := -1
	for i := range c.Nodes {
		if alive(&c.Nodes[i]) && c.Nodes[i].ID != "" {
			seed = i
			break
		}
	}
	if seed < 0 {
		return "", fmt.Errorf("redis-cluster %s: no running node with a known id to meet", c.Name)
	}
	i := len(c.Nodes)
	p := nodePlan{name: nextName(c), host: env.Addrs.Host(i)}
	p.wrap = func(a []string) []string { return env.NodeArgv(i, a) }
	p.dir = filepath.Join(c.Dir, p.name)
	p.dataDir = filepath.Join(p.dir, "data")
	p.logFile = filepath.Join(p.dir, "node.log")
	var err error
	if p.port, err = env.Addrs.Port(p.host); err != nil {
		return "", fmt.Errorf("redis-cluster: %s: %w", p.name, err)
	}
	for tries := 0; tries < 20 && (p.busPort == 0 || p.busPort == p.port); tries++ {
		if p.busPort, err = env.Addrs.Port(p.host); err != nil {
			return "", fmt.Errorf("redis-cluster: %s: %w", p.name, err)
		}
	}
	if err := os.MkdirAll(p.dataDir, 0o755); err != nil {
		return "", fmt.Errorf("redis-cluster: %s: creating data dir: %w", p.name, err)
	}
	c.Nodes = append(c.Nodes, launcher.Node{Name: p.name, Addr: p.addr(), PeerAddr: p.peerAddr(),
		DataDir: p.dataDir, LogFile: p.logFile, Argv: p.argv(cfg), Down: true})
	n := &c.Nodes[i]
	fail := func(err error) (string, error) {
		if n.PID > 0 {
			_ = launcher.Kill(context.WithoutCancel(ctx), n.PID)
		}
		c.Nodes = c.Nodes[:i]
		return "", fmt.Errorf("redis-cluster: adding %s: %w", p.name, err)
	}
	if err := startNode(ctx, env, c, n); err != nil {
		return fail(err)
	}
	opts.Report(launcher.ScaleNodeStarted, n.Name, fmt.Sprintf("pid %d on %s", n.PID, n.Addr))
	cl := adminClient(n.Addr)
	defer cl.Close()
	if n.ID, err = cl.ClusterMyID(ctx).Result(); err != nil {
		return fail(fmt.Errorf("CLUSTER MYID: %w", err))
	}
	seedCl := adminClient(c.Nodes[seed].Addr)
	defer seedCl.Close()
	host, port, _ := net.SplitHostPort(n.Addr)
	_, bus, _ := net.SplitHostPort(n.PeerAddr)
	if _, err := seedCl.Do(ctx, "cluster", "meet", host, port, bus).Result(); err != nil {
		return fail(fmt.Errorf("CLUSTER MEET through %s: %w", c.Nodes[seed].Name, err))
	}
	var clients []*goredis.Client
	var known []launcher.Node
	for j := range c.Nodes {
		if alive(&c.Nodes[j]) {
			clients = append(clients, adminClient(c.Nodes[j].Addr))
			known = append(known, c.Nodes[j])
		}
	}
	err = waitAllKnown(ctx, &launcher.Cluster{Name: c.Name, Nodes: known}, clients)
	closeAll(clients)
	if err != nil {
		return fail(err)
	}
	// it must see every slot covered before it accepts keys (MIGRATE to a
	// node in state fail answers CLUSTERDOWN)
	if err := waitClusterOK(ctx, cl, n.Name); err != nil {
		return fail(err)
	}
	opts.Report(launcher.ScaleNodeJoined, n.Name, "every node knows it (CLUSTER NODES) and it sees cluster_state:ok")
	n.Role = launcher.RolePrimary

	owners, _, err := slotOwners(ctx, seedCl)
	if err != nil {
		return fail(err)
	}
	masters := 0
	for id := range owners {
		if len(owners[id]) > 0 || id == n.ID {
			masters++
		}
	}
	share := TotalSlots / masters
	// take from each master its surplus over the even share, highest first
	ids := make([]string, 0, len(owners))
	for id := range owners {
		if id != n.ID && len(owners[id]) > 0 {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	mg := newMigrator(c, opts)
	defer mg.close()
	moved, keys := 0, 0
	for _, id := range ids {
		surplus := len(owners[id]) - share
		if surplus <= 0 || moved >= share {
			continue
		}
		surplus = min(surplus, share-moved)
		slots := owners[id][len(owners[id])-surplus:]
		k, err := mg.move(ctx, id, n.ID, slots)
		keys += k
		if err != nil {
			// leave the node in: it owns the slots that did move
			return n.Name, fmt.Errorf("redis-cluster: resharding to %s: %w", n.Name, err)
		}
		moved += len(slots)
	}
	opts.Report(launcher.ScaleStreamingDone, n.Name, fmt.Sprintf("%d slots (%d keys) moved to %s", moved, keys, n.Name))
	return n.Name, nil
}

// RemoveNode empties master name (its slots go round robin, in ranges, to
// the other masters), makes every other node forget it, stops it and
// deletes it from c.Nodes. A replica is just forgotten and stopped.
func (ClusterLauncher) RemoveNode(ctx context.Context, env *launcher.Env, c *launcher.Cluster, name string, opts launcher.ScaleOptions) error {
	if c.Inventory != "" {
		return errRemoteScale
	}
	if err := checkClusterScaleOpts(opts); err != nil {
		return err
	}
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	if !alive(n) || n.ID == "" {
		return fmt.Errorf("redis-cluster: %s is not running (or its id is unknown); only a running node can hand its slots over", name)
	}
	ctx, cancel := launcher.WithDefaultTimeout(ctx, reshardTimeout)
	defer cancel()
	cl := adminClient(n.Addr)
	defer cl.Close()
	owners, _, err := slotOwners(ctx, cl)
	if err != nil {
		return fmt.Errorf("redis-cluster: %w", err)
	}
	var targets []string
	for id, slots := range owners {
		if id != n.ID && len(slots) > 0 {
			targets = append(targets, id)
		}
	}
	sort.Strings(targets)
	mine := owners[n.ID]
	if len(mine) > 0 && len(targets) == 0 {
		return fmt.Errorf("redis-cluster: %s is the only master with slots; nobody can take them", name)
	}
	mg := newMigrator(c, opts)
	defer mg.close()
	keys := 0
	for k, id := range targets {
		lo, hi := k*len(mine)/len(targets), (k+1)*len(mine)/len(targets)
		moved, err := mg.move(ctx, n.ID, id, mine[lo:hi])
		keys += moved
		if err != nil {
			return fmt.Errorf("redis-cluster: moving %s's slots away: %w", name, err)
		}
	}
	opts.Report(launcher.ScaleStreamingDone, name, fmt.Sprintf("%d slots (%d keys) moved away from %s", len(mine), keys, name))
	// forget it everywhere (within a minute of each other, or gossip
	// brings it back), then stop it
	for i := range c.Nodes {
		o := &c.Nodes[i]
		if o.Name == name || !alive(o) {
			continue
		}
		ocl := adminClient(o.Addr)
		var ferr error
		for a := 0; a < forgetAttempts; a++ {
			if _, ferr = ocl.Do(ctx, "cluster", "forget", n.ID).Result(); ferr == nil || strings.Contains(ferr.Error(), "Unknown node") {
				ferr = nil
				break
			}
			// a replica of the leaving master cannot forget it until it
			// replicates someone else; redis moves it, so retry a little
			time.Sleep(100 * time.Millisecond)
		}
		_ = ocl.Close()
		if ferr != nil {
			return fmt.Errorf("redis-cluster: CLUSTER FORGET %s on %s: %w", name, o.Name, ferr)
		}
	}
	if err := launcher.Terminate(ctx, n.PID, stopGrace); err != nil {
		return fmt.Errorf("redis-cluster: stopping %s: %w", name, err)
	}
	goneID := n.ID // n points into c.Nodes, which the removal shifts
	for i := range c.Nodes {
		if c.Nodes[i].Name == name {
			c.Nodes = append(c.Nodes[:i], c.Nodes[i+1:]...)
			break
		}
	}
	if err := waitSlotViews(ctx, c, goneID); err != nil {
		return fmt.Errorf("redis-cluster: after removing %s: %w", name, err)
	}
	opts.Report(launcher.ScaleNodeLeft, name, "forgotten by every node and stopped")
	return nil
}

// waitClusterOK waits until the node behind cl reports cluster_state:ok.
func waitClusterOK(ctx context.Context, cl *goredis.Client, name string) error {
	last := ""
	for {
		info, err := cl.ClusterInfo(ctx).Result()
		if err == nil && infoField(info, "cluster_state") == "ok" {
			return nil
		}
		last = infoField(info, "cluster_state")
		if err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for cluster_state ok (last: %s): %w", name, last, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// slotViewWait bounds how long the remaining nodes may take to agree on
// the slots' new owners after a node left (gossip spreads the owners the
// migration set on the source and the target to the others).
const slotViewWait = 30 * time.Second

// waitSlotViews waits until every live node of c sees all TotalSlots
// assigned and none to the node with id gone: the cluster as the clients
// will see it, not only as the migration's two ends saw it.
func waitSlotViews(ctx context.Context, c *launcher.Cluster, gone string) error {
	ctx, cancel := context.WithTimeout(ctx, slotViewWait)
	defer cancel()
	for {
		lagging := ""
		for i := range c.Nodes {
			o := &c.Nodes[i]
			if !alive(o) {
				continue
			}
			cl := adminClient(o.Addr)
			owners, _, err := slotOwners(ctx, cl)
			_ = cl.Close()
			total := 0
			for _, sl := range owners {
				total += len(sl)
			}
			switch {
			case err != nil:
				lagging = fmt.Sprintf("%s: %v", o.Name, err)
			case total != TotalSlots:
				lagging = fmt.Sprintf("%s sees %d of %d slots assigned", o.Name, total, TotalSlots)
			case len(owners[gone]) > 0:
				lagging = fmt.Sprintf("%s still sees %d slots on the removed node", o.Name, len(owners[gone]))
			}
			if lagging != "" {
				break
			}
		}
		if lagging == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("slot ownership not agreed within %v: %s", slotViewWait, lagging)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
