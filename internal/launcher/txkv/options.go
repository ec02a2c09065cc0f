package txkv

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// Option keys understood by the txkv launcher (launcher.Spec.Options),
// documented in docs/targets-txkv.md.
const (
	// OptPersistence is async (the paper's: servers sync their WAL in the
	// background, commits return once logged by the coordinator) or sync
	// (servers sync before acknowledging, commits return once flushed).
	OptPersistence = "txkv.persistence"
	// OptHeartbeat is the client and server heartbeat interval (default 1s).
	OptHeartbeat = "txkv.heartbeat"
	// OptSessionTimeout is how long without a heartbeat before a client or
	// server is declared failed (default: 3 heartbeats, at least 2s).
	OptSessionTimeout = "txkv.session-timeout"
	// OptRegions is the number of regions (default 8).
	OptRegions = "txkv.regions"
	// OptWALSyncInterval is how often a server syncs its WAL in async
	// persistence (default 1s, HBase's deferred log flush interval).
	OptWALSyncInterval = "txkv.wal-sync-interval"
	// OptMemstoreFlushSize is the memstore size at which a region is
	// flushed to a region file (default 16MiB).
	OptMemstoreFlushSize = "txkv.memstore-flush-size"
	// OptStartTimeout bounds how long Up and StartNode wait (default 60s).
	OptStartTimeout = "txkv.start-timeout"
	// OptServersPerNode groups region servers on nodes: with K > 0 the
	// cluster's node count (--nodes, target.nodes) counts nodes of K
	// region servers each, named n1-s1 .. n1-sK, n2-s1 ...; the fault
	// selector group:n2 names all servers of node n2. 0 (the default)
	// starts --nodes servers s1 .. sN.
	OptServersPerNode = "txkv.servers-per-node"
)

// options are the resolved launcher options.
type options struct {
	persistence    wire.Persistence
	heartbeat      time.Duration
	sessionTimeout time.Duration
	regions        int
	walSync        time.Duration
	memstore       int64
	startTimeout   time.Duration
	perNode        int // region servers per node; 0 = no node groups
}

func defaultOptions() options {
	return options{persistence: wire.Async, heartbeat: time.Second, sessionTimeout: 3 * time.Second, regions: 8,
		walSync: time.Second, memstore: 16 << 20, startTimeout: 60 * time.Second}
}

// OptionNames returns every option key the launcher understands, sorted.
func OptionNames() []string {
	k := []string{OptPersistence, OptHeartbeat, OptSessionTimeout, OptRegions, OptWALSyncInterval, OptMemstoreFlushSize, OptStartTimeout, OptServersPerNode}
	sort.Strings(k)
	return k
}

// Validate checks o.
func (o options) Validate() error {
	cfg := wire.Config{Persistence: o.persistence, Heartbeat: o.heartbeat, SessionTimeout: o.sessionTimeout,
		WALSyncInterval: o.walSync, MemstoreFlushBytes: o.memstore}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("txkv options: %w", err)
	}
	if o.regions < 1 || o.regions > 1024 {
		return fmt.Errorf("txkv options: %s must be 1..1024, got %d", OptRegions, o.regions)
	}
	if o.startTimeout <= 0 {
		return fmt.Errorf("txkv options: %s must be positive", OptStartTimeout)
	}
	if o.perNode < 0 || o.perNode > 64 {
		return fmt.Errorf("txkv options: %s must be 0..64, got %d", OptServersPerNode, o.perNode)
	}
	return nil
}

func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(f * float64(time.Second)), nil
	}
	return time.ParseDuration(s)
}

// parseOptions reads m. Keys starting with "txkv." must be known.
func parseOptions(m map[string]string) (options, error) {
	o := defaultOptions()
	for k := range m {
		if strings.HasPrefix(k, "txkv.") && !contains(OptionNames(), k) {
			return o, fmt.Errorf("unknown txkv option %q (known: %s)", k, strings.Join(OptionNames(), ", "))
		}
	}
	bad := func(k, v, want string) error { return fmt.Errorf("option %s=%q: %s", k, v, want) }
	dur := func(k string, dst *time.Duration) error {
		v, ok := m[k]
		if !ok {
			return nil
		}
		d, err := parseDuration(v)
		if err != nil || d <= 0 {
			return bad(k, v, "want a positive Go duration such as 500ms or 2s (or seconds)")
		}
		*dst = d
		return nil
	}
	if v, ok := m[OptPersistence]; ok {
		switch p := wire.Persistence(strings.TrimSpace(v)); p {
		case wire.Async, wire.Sync:
			o.persistence = p
		default:
			return o, bad(OptPersistence, v, "want async or sync")
		}
	}
	if err := dur(OptHeartbeat, &o.heartbeat); err != nil {
		return o, err
	}
	// failure detection is a session of its own (the paper's HBase
	// detects failed servers through ZooKeeper, independently of the
	// recovery manager's heartbeat): 3 s, unless two heartbeats do not fit
	o.sessionTimeout = max(3*time.Second, 2*o.heartbeat)
	for k, dst := range map[string]*time.Duration{OptSessionTimeout: &o.sessionTimeout, OptWALSyncInterval: &o.walSync, OptStartTimeout: &o.startTimeout} {
		if err := dur(k, dst); err != nil {
			return o, err
		}
	}
	if v, ok := m[OptRegions]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return o, bad(OptRegions, v, "want a whole number 1..1024")
		}
		o.regions = n
	}
	if v, ok := m[OptServersPerNode]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return o, bad(OptServersPerNode, v, "want a whole number 0..64")
		}
		o.perNode = n
	}
	if v, ok := m[OptMemstoreFlushSize]; ok {
		n, err := humanize.ParseBytes(strings.TrimSpace(v))
		if err != nil || n > 1<<34 {
			return o, bad(OptMemstoreFlushSize, v, "want a size such as 16MiB")
		}
		o.memstore = int64(n)
	}
	return o, o.Validate()
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// asMap renders o as the options recorded in the cluster state.
func (o options) asMap() map[string]string {
	return map[string]string{
		OptPersistence:       string(o.persistence),
		OptHeartbeat:         o.heartbeat.String(),
		OptSessionTimeout:    o.sessionTimeout.String(),
		OptRegions:           strconv.Itoa(o.regions),
		OptWALSyncInterval:   o.walSync.String(),
		OptMemstoreFlushSize: strconv.FormatInt(o.memstore, 10),
		OptStartTimeout:      o.startTimeout.String(),
		OptServersPerNode:    strconv.Itoa(o.perNode),
	}
}

// ServerNames returns the region servers' node names of a cluster of
// nodes started with the launcher options opts (s1 .. sN, or with
// txkv.servers-per-node n1-s1 ..); invalid options give the names
// without node groups (Up reports them).
func ServerNames(nodes int, opts map[string]string) []string {
	o, err := parseOptions(opts)
	if err != nil {
		o = defaultOptions()
	}
	return o.serverNames(nodes)
}

// serverNames returns the region servers' node names for nodes (the
// cluster's node count): s1 .. sN, or with node groups n1-s1 .. nN-sK.
func (o options) serverNames(nodes int) []string {
	var out []string
	if o.perNode == 0 {
		for i := 1; i <= nodes; i++ {
			out = append(out, "s"+strconv.Itoa(i))
		}
		return out
	}
	for i := 1; i <= nodes; i++ {
		for j := 1; j <= o.perNode; j++ {
			out = append(out, "n"+strconv.Itoa(i)+"-s"+strconv.Itoa(j))
		}
	}
	return out
}
