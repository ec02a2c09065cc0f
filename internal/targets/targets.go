// Package targets is the one registry of the database kinds faultbench can
// drive. Each kind is one Target entry carrying everything the rest of
// faultbench asks of a kind: its driver constructor, its launcher (if
// faultbench can start it), how its clusters are sized and named, which node
// a failure hits by default, how the Under Pressure Benchmark realises a
// fault-tolerance index K on it, its property prefix, its launcher option
// keys (checked here, once, for `cluster up -o` and scenarios alike),
// whether its nodes run on inventory hosts, what its whole node is, and its
// help text. Adding a target is a driver package, a launcher package and
// one entry in Entries; the command line, scenarios, faults and the Under
// Pressure Benchmark ask the entry instead of naming a kind.
package targets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/diskfs"
	"github.com/faultbench/faultbench/internal/driver"
	cassandradriver "github.com/faultbench/faultbench/internal/driver/cassandra"
	etcddriver "github.com/faultbench/faultbench/internal/driver/etcd"
	hbasedriver "github.com/faultbench/faultbench/internal/driver/hbase"
	redisdriver "github.com/faultbench/faultbench/internal/driver/redis"
	"github.com/faultbench/faultbench/internal/driver/sqldb"
	txkvdriver "github.com/faultbench/faultbench/internal/driver/txkv"
	"github.com/faultbench/faultbench/internal/launcher"
	cassandralauncher "github.com/faultbench/faultbench/internal/launcher/cassandra"
	etcdlauncher "github.com/faultbench/faultbench/internal/launcher/etcd"
	"github.com/faultbench/faultbench/internal/launcher/galera"
	hbaselauncher "github.com/faultbench/faultbench/internal/launcher/hbase"
	"github.com/faultbench/faultbench/internal/launcher/postgresha"
	redislauncher "github.com/faultbench/faultbench/internal/launcher/redis"
	txkvlauncher "github.com/faultbench/faultbench/internal/launcher/txkv"
	"github.com/faultbench/faultbench/internal/netns"
	"github.com/faultbench/faultbench/internal/properties"
)

// Target is one database kind.
type Target struct {
	// Kind is the name on the command line and in scenarios, e.g. "etcd".
	Kind string
	// Help is one line for --help.
	Help string
	// Docs is the documentation page of the kind, e.g. "docs/targets-etcd.md".
	Docs string
	// NewDriver builds the client from the run's properties.
	NewDriver driver.Factory
	// Launcher starts local clusters; nil if faultbench cannot start this kind.
	Launcher launcher.Launcher
	// LauncherOptions are the launcher's option keys (`cluster up -o`,
	// a scenario's target.options). They are not driver properties; a run
	// that sets one as a property is warned that it has no effect.
	LauncherOptions []string
	// NodeCommands are the hidden `faultbench node NAME ...` commands that
	// run this kind's node processes from the faultbench binary itself.
	NodeCommands map[string]func(ctx context.Context, args []string) error
	// EndpointKey is the property that names the database's address(es).
	EndpointKey string
	// PropertyPrefix starts every driver property (e.g. "etcd."); the driver
	// validates the keys under it. Empty if the driver has its own keys
	// (declared by the driver itself).
	PropertyPrefix string
	// DriverProperties, when set, declares and checks the driver's
	// properties outside PropertyPrefix (the SQL drivers' sqldb.isolation),
	// so that a bad value is refused before a cluster starts.
	DriverProperties func(p *properties.Properties) error
	// Defaults are properties the kind sets before the user's (e.g. the
	// redis driver's mode for redis-cluster).
	Defaults map[string]string
	// Connect sets the driver properties that point at a launched cluster,
	// leaving properties the user set alone. Nil means ConnectList(EndpointKey).
	Connect func(p *properties.Properties, c *launcher.Cluster)
	// Size says how clusters of this kind are sized.
	Size Sizing
	// DefaultVictim is the node selector a failure hits when a scenario or
	// the Under Pressure Benchmark names none (e.g. "leader").
	DefaultVictim string
	// OptionFlags are `cluster up` flags that set a launcher option of
	// this kind (cassandra's --rf for cassandra.rf).
	OptionFlags []OptionFlag
	// OnHosts declares what one node of this kind needs on an inventory
	// host (programs, how to install them, ports); set, the launcher runs
	// this kind's nodes on the node hosts of an inventory, one node per
	// host, over SSH (`cluster up --hosts`, `scenario --nodes-from`;
	// docs/distributed.md). The hosts path checks it on every host
	// (launcher.PrepareHosts) and names no kind. Nil: this machine only.
	OnHosts *launcher.HostNeeds
	// WholeNode names the node that stands for the whole machine of node
	// (`fault ... --whole-node`): on postgres-ha nK (a postgres server
	// alone) is nK-keeper (pg_autoctl and its postgres). Nil: every node is
	// one process, the whole node already.
	WholeNode func(c *launcher.Cluster, node string) string
	// UpTimeout is how long starting a cluster, and each wait for health
	// or a restarted node during faults, may take (0: DefaultUpTimeout for
	// starting, the fault package's default for the rest); JVM-based kinds
	// start slowly, the more so under load.
	UpTimeout time.Duration
	// LibcClock says the kind's node programs read the clock through libc
	// (C and JVM binaries), so clock faults can move it (libfaketime,
	// launcher.OptClock); false for kinds whose nodes are Go programs run
	// from the faultbench binary (launcher.ErrGoClock says why).
	LibcClock bool
}

// OptionFlag is a `cluster up` flag that sets a launcher option.
type OptionFlag struct {
	Flag   string // flag name without dashes, e.g. "rf"
	Option string // the launcher option it sets, e.g. "cassandra.rf"
	Usage  string // one line for --help
}

// DefaultUpTimeout bounds starting a cluster when the kind says nothing.
const DefaultUpTimeout = 2 * time.Minute

// StartTimeout is how long starting a cluster of this kind may take.
func (t *Target) StartTimeout() time.Duration {
	if t.UpTimeout > 0 {
		return t.UpTimeout
	}
	return DefaultUpTimeout
}

// Sizing is how a kind's clusters are sized, counted and described.
type Sizing struct {
	// Nodes and Replicas size a cluster when the user says nothing.
	Nodes, Replicas int
	// NodesAre says what --nodes counts, e.g. "members", "masters".
	NodesAre string
	// NodesAlias is a second name for --nodes that reads better for this
	// kind (txkv: "servers", its region servers); "" for none.
	NodesAlias string
	// HasReplicas says whether --replicas means anything for this kind.
	HasReplicas bool
	// FaultTolerance returns the fault-tolerance index K of a cluster sized
	// (nodes, replicas): how many nodes may fail while it serves.
	FaultTolerance func(nodes, replicas int) int
	// ForK returns the cluster that realises fault-tolerance index k for the
	// Under Pressure Benchmark; nodes is what the scenario asked (0: the
	// default). Nil when the benchmark cannot run on this kind. Its error
	// says what to change.
	ForK func(k, nodes int) (n, replicas int, err error)
	// Describe says in words what a cluster sized (nodes, replicas) is, e.g.
	// "3 masters with 1 replica each, 6 nodes". Nil: "N nodes".
	Describe func(nodes, replicas int) string
	// NodeNames returns the node names the launcher gives a cluster sized
	// (nodes, replicas), so that a schedule is checked against them before
	// anything starts. Nil: n1..nN.
	NodeNames func(nodes, replicas int) []string
	// NodeNamesWith is NodeNames for a launcher whose options change the
	// names (txkv's txkv.servers-per-node); nil: NodeNames.
	NodeNamesWith func(nodes, replicas int, options map[string]string) []string
}

// Registry holds the targets by kind.
type Registry struct{ m map[string]*Target }

// New returns a registry of ts; a kind given twice or an entry that fails
// Validate is an error (a programming error, caught by the registry test).
func New(ts ...*Target) (*Registry, error) {
	r := &Registry{m: map[string]*Target{}}
	var errs []error
	for _, t := range ts {
		if err := t.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := r.m[t.Kind]; dup {
			errs = append(errs, fmt.Errorf("target %s: registered twice", t.Kind))
			continue
		}
		r.m[t.Kind] = t
	}
	return r, errors.Join(errs...)
}

// Builtin returns a registry of every target compiled into faultbench.
func Builtin() *Registry {
	r, err := New(Entries()...)
	if err != nil {
		panic("targets: " + err.Error()) // the registry test keeps this unreachable
	}
	return r
}

// Entries returns the built-in target entries, one per kind.
func Entries() []*Target {
	return []*Target{
		{
			Kind:            "etcd",
			Help:            "etcd v3 (the embedded default: members run from the faultbench binary)",
			Docs:            "docs/targets-etcd.md",
			NewDriver:       etcddriver.New,
			Launcher:        etcdlauncher.Launcher{},
			LauncherOptions: etcdlauncher.OptionNames(),
			NodeCommands:    map[string]func(context.Context, []string) error{"etcd": etcdlauncher.RunNode},
			EndpointKey:     "etcd.endpoints",
			PropertyPrefix:  "etcd.",
			DefaultVictim:   "leader",
			OnHosts:         ptr(etcdlauncher.HostNeeds()),
			Size: Sizing{
				Nodes: 3, NodesAre: "members",
				FaultTolerance: func(n, _ int) int { return (n - 1) / 2 },
				ForK: func(k, nodes int) (int, int, error) {
					if nodes != 0 {
						return 0, 0, errors.New("field target.nodes: the Under Pressure Benchmark runs 2K+1 etcd members for each K; remove it")
					}
					return 2*k + 1, 0, nil
				},
				Describe: func(n, _ int) string { return plural(n, "member") },
			},
		},
		{
			Kind:            "redis-cluster",
			Help:            "Redis Cluster (redis-server from Debian's package): masters with replicas",
			Docs:            "docs/targets-redis.md",
			NewDriver:       redisdriver.New,
			Launcher:        redislauncher.ClusterLauncher{},
			LibcClock:       true,
			LauncherOptions: redislauncher.OptionNames(),
			EndpointKey:     "redis.addr",
			PropertyPrefix:  "redis.",
			Defaults:        map[string]string{"redis.mode": "cluster"},
			DefaultVictim:   "primary",
			OnHosts:         ptr(redislauncher.HostNeeds(redislauncher.KindCluster)),
			Size: Sizing{
				// one replica per master: a master kill has somewhere to fail over to
				Nodes: 3, Replicas: 1, NodesAre: "masters", HasReplicas: true,
				FaultTolerance: func(_, r int) int { return r },
				ForK: func(k, masters int) (int, int, error) {
					if masters == 0 {
						masters = 3
					}
					return masters, k, nil
				},
				Describe:  mastersWithReplicas,
				NodeNames: func(n, r int) []string { return numbered(n * (1 + r)) },
			},
		},
		{
			Kind:            "redis",
			Help:            "Redis standalone or any Redis Cluster (-p redis.mode=cluster -p redis.addr=...)",
			Docs:            "docs/targets-redis.md",
			NewDriver:       redisdriver.New,
			Launcher:        redislauncher.StandaloneLauncher{},
			LibcClock:       true,
			LauncherOptions: redislauncher.OptionNames(),
			EndpointKey:     "redis.addr",
			PropertyPrefix:  "redis.",
			DefaultVictim:   "primary",
			OnHosts:         ptr(redislauncher.HostNeeds(redislauncher.KindStandalone)),
			Size: Sizing{
				Nodes: 1, NodesAre: "servers", HasReplicas: true,
				FaultTolerance: func(_, r int) int { return r },
				Describe:       mastersWithReplicas,
				// the primary n1, its replicas n2..
				NodeNames: func(_, r int) []string { return numbered(1 + r) },
			},
		},
		{
			Kind:            postgresha.Kind,
			Help:            "PostgreSQL 15 with pg_auto_failover 2.0 (Debian's packages): a monitor, a primary and standbys with automatic failover",
			Docs:            "docs/targets-postgres-ha.md",
			NewDriver:       sqldb.NewPostgres,
			Launcher:        postgresha.Launcher{},
			LibcClock:       true,
			LauncherOptions: postgresha.OptionNames(),
			EndpointKey:     postgresha.PropHosts,
			PropertyPrefix:  "postgres.",
			DriverProperties: func(p *properties.Properties) error {
				_, err := sqldb.Isolation(p)
				return err
			},
			Connect:       postgresha.Connect,
			DefaultVictim: "primary",
			WholeNode:     postgresKeeper,
			// a data node that was the primary rejoins through pg_rewind or
			// a base backup from the new primary: minutes under load (the
			// launcher's wait follows its progress and fails early when it
			// stalls)
			UpTimeout: 5 * time.Minute,
			Size: Sizing{
				Nodes: 3, NodesAre: "data nodes",
				// the primary keeps serving while any one data node is left
				// (pg_auto_failover drops synchronous replication then)
				FaultTolerance: func(n, _ int) int { return n - 1 },
				ForK: func(k, nodes int) (int, int, error) {
					if nodes != 0 {
						return 0, 0, errors.New("field target.nodes: the Under Pressure Benchmark runs K+1 postgres-ha data nodes for each K; remove it")
					}
					return k + 1, 0, nil
				},
				Describe: func(n, _ int) string { return "a monitor and " + plural(n, "data node") + " (1 primary)" },
				// the launcher's names: the monitor, each data node's
				// postgres (nK) and the whole node (nK-keeper)
				NodeNames: func(n, _ int) []string {
					out := []string{postgresha.MonitorName}
					for _, name := range numbered(n) {
						out = append(out, name, name+postgresha.KeeperSuffix)
					}
					return out
				},
			},
		},
		{
			Kind:            galera.Kind,
			Help:            "MariaDB 10.11 Galera 4 (Debian's packages): synchronous multi-primary, every node takes writes",
			Docs:            "docs/targets-galera.md",
			NewDriver:       sqldb.NewGalera,
			Launcher:        galera.Launcher{},
			LibcClock:       true,
			LauncherOptions: galera.OptionNames(),
			EndpointKey:     "galera.hosts",
			PropertyPrefix:  "galera.",
			DriverProperties: func(p *properties.Properties) error {
				_, err := sqldb.Isolation(p)
				return err
			},
			DefaultVictim: "primary",
			Size: Sizing{
				Nodes: 3, NodesAre: "nodes",
				// a primary component needs a majority of the nodes
				FaultTolerance: func(n, _ int) int { return (n - 1) / 2 },
				ForK: func(k, nodes int) (int, int, error) {
					if nodes != 0 {
						return 0, 0, errors.New("field target.nodes: the Under Pressure Benchmark runs 2K+1 Galera nodes for each K; remove it")
					}
					return 2*k + 1, 0, nil
				},
			},
		},
		{
			Kind:            "txkv",
			Help:            "txkv, the transactional key-value store with failure-recovery middleware (coordinator and region servers run from the faultbench binary)",
			Docs:            "docs/targets-txkv.md",
			NewDriver:       txkvdriver.New,
			Launcher:        txkvlauncher.Launcher{},
			LauncherOptions: txkvlauncher.OptionNames(),
			NodeCommands: map[string]func(context.Context, []string) error{
				"txkv-coordinator": txkvlauncher.RunCoordinator,
				"txkv-server":      txkvlauncher.RunServer,
				"txkv-client":      txkvlauncher.RunClient,
			},
			EndpointKey:   txkvdriver.PropCoordinator,
			Connect:       txkvlauncher.Connect,
			DefaultVictim: "random",
			Size: Sizing{
				Nodes: 2, NodesAre: "region servers", NodesAlias: "servers",
				FaultTolerance: func(n, _ int) int { return n - 1 },
				Describe:       func(n, _ int) string { return "a coordinator and " + plural(n, "region server") },
				NodeNames: func(n, _ int) []string {
					names := []string{txkvlauncher.CoordinatorNode}
					for i := 1; i <= n; i++ {
						names = append(names, "s"+strconv.Itoa(i))
					}
					return names
				},
				NodeNamesWith: func(n, _ int, opts map[string]string) []string {
					return append([]string{txkvlauncher.CoordinatorNode}, txkvlauncher.ServerNames(n, opts)...)
				},
			},
		},
		{
			Kind:      "cassandra",
			Help:      "Apache Cassandra " + cassandralauncher.Version + " (jars from Maven Central, one JVM per node on 127.0.0.x)",
			Docs:      "docs/targets-cassandra.md",
			NewDriver: cassandradriver.New,
			Launcher:  cassandralauncher.Launcher{},
			LibcClock: true,
			// cassandra.keyspace is a driver property too: no warning for it
			LauncherOptions: without(cassandralauncher.OptionNames(), cassandralauncher.OptKeyspace),
			EndpointKey:     cassandradriver.PropHosts,
			PropertyPrefix:  "cassandra.",
			Connect:         connectCassandra,
			DefaultVictim:   "random",
			OptionFlags: []OptionFlag{{Flag: "rf", Option: cassandralauncher.OptRF,
				Usage: "replication factor of the keyspace (default 3, or the number of nodes if fewer)"}},
			UpTimeout: 5 * time.Minute,
			Size: Sizing{
				Nodes: 3, NodesAre: "nodes",
				// at the driver's default consistency ONE with the default
				// replication factor min(3, nodes): every key stays readable
				// and writable while one of its replicas is left, so RF-1
				// nodes may fail (at QUORUM it would be (RF-1)/2)
				FaultTolerance: func(n, _ int) int { return min(3, n) - 1 },
				// UPB: K+1 nodes with RF = K+1 (the launcher's default RF for
				// up to 3 nodes), read and written at consistency ONE
				ForK: func(k, nodes int) (int, int, error) {
					if nodes != 0 {
						return 0, 0, errors.New("field target.nodes: the Under Pressure Benchmark runs K+1 Cassandra nodes with RF K+1 for each K; remove it")
					}
					if k > 2 {
						return 0, 0, fmt.Errorf("fault-tolerance index K=%d: the launcher's replication factor is at most 3 (K at most 2); lower upb.kmax", k)
					}
					return k + 1, 0, nil
				},
			},
		},
		{
			Kind:      hbaselauncher.Kind,
			Help:      "Apache HBase " + hbaselauncher.Version + " on HDFS (jars from Maven Central): ZooKeeper, NameNode, HMaster, Thrift2 gateway, and per node a DataNode and a region server, each a JVM",
			Docs:      "docs/targets-hbase.md",
			NewDriver: hbasedriver.New,
			Launcher:  hbaselauncher.Launcher{},
			LibcClock: true,
			// hbase.family is a driver property too: no warning for it
			LauncherOptions: without(hbaselauncher.OptionNames(), hbaselauncher.OptFamily),
			EndpointKey:     hbasedriver.PropThrift,
			PropertyPrefix:  "hbase.",
			Connect:         connectHBase,
			// a region server (the region servers are the primaries of
			// their regions)
			DefaultVictim: "primary",
			// node nK is the region server nK and the DataNode nK-dn
			WholeNode: hbaselauncher.WholeNode,
			UpTimeout: 8 * time.Minute,
			Size: Sizing{
				Nodes: 3, NodesAre: "nodes (a region server and a DataNode each)",
				// every region is served again once its server's regions
				// are reassigned, while one DataNode per block replica
				// is left: min(3, nodes) - 1 nodes may fail
				FaultTolerance: func(n, _ int) int { return min(3, n) - 1 },
				Describe: func(n, _ int) string {
					return "ZooKeeper, a NameNode, a master, a Thrift gateway and " + plural(n, "node") + " (region server + DataNode)"
				},
				NodeNames: func(n, _ int) []string { return hbaselauncher.NodeNames(n) },
			},
		},
	}
}

// connectHBase points the driver at the cluster's Thrift2 gateway and
// column family, and passes on the gateway's client settings so that the
// driver reports them (env.json's client_settings).
func connectHBase(p *properties.Properties, c *launcher.Cluster) {
	if n, err := c.Node(hbaselauncher.ThriftNode); err == nil && !p.Has(hbasedriver.PropThrift) {
		p.Set(hbasedriver.PropThrift, n.Addr)
	}
	if f := c.Options[hbaselauncher.OptFamily]; f != "" && !p.Has(hbasedriver.PropFamily) {
		p.Set(hbasedriver.PropFamily, f)
	}
	for _, k := range hbasedriver.GatewayClientKeys {
		if v, ok := c.Options[k]; ok && !p.Has(k) {
			p.Set(k, v)
		}
		p.Declare(k)
	}
	if !p.Has("faultbench.cluster") {
		p.Set("faultbench.cluster", c.Name)
	}
	p.Declare("faultbench.cluster")
}

// connectCassandra points the driver at every node and at the keyspace
// the launcher created.
func connectCassandra(p *properties.Properties, c *launcher.Cluster) {
	ConnectList(cassandradriver.PropHosts)(p, c)
	if ks := c.Options[cassandralauncher.OptKeyspace]; ks != "" && !p.Has(cassandradriver.PropKeyspace) {
		p.Set(cassandradriver.PropKeyspace, ks)
	}
}

// postgresKeeper names the whole node of a postgres-ha node: nK's keeper
// (pg_autoctl with its postgres, which die together;
// docs/targets-postgres-ha.md); the monitor and the keepers are whole
// already.
func postgresKeeper(c *launcher.Cluster, node string) string {
	if k, err := c.Node(node + postgresha.KeeperSuffix); err == nil {
		return k.Name
	}
	return node
}

// without returns xs minus drop.
func without(xs []string, drop string) []string {
	var out []string
	for _, x := range xs {
		if x != drop {
			out = append(out, x)
		}
	}
	return out
}

// Validate checks that an entry is complete: every field the rest of
// faultbench relies on is set.
func (t *Target) Validate() error {
	var missing []string
	need := func(ok bool, what string) {
		if !ok {
			missing = append(missing, what)
		}
	}
	need(t.Kind != "" && !strings.ContainsAny(t.Kind, " /\t"), "Kind (one word)")
	need(t.Help != "", "Help")
	need(strings.HasPrefix(t.Docs, "docs/"), "Docs (a page under docs/)")
	need(t.NewDriver != nil, "NewDriver")
	need(t.EndpointKey != "", "EndpointKey")
	need(t.DefaultVictim != "", "DefaultVictim")
	need(t.Size.Nodes >= 1, "Size.Nodes (at least 1)")
	need(t.Size.Replicas >= 0, "Size.Replicas (not negative)")
	need(t.Size.NodesAre != "", "Size.NodesAre")
	need(t.Size.FaultTolerance != nil, "Size.FaultTolerance")
	if t.Size.Replicas > 0 {
		need(t.Size.HasReplicas, "Size.HasReplicas (Size.Replicas is set)")
	}
	if t.OnHosts != nil || t.WholeNode != nil {
		need(t.Launcher != nil, "Launcher (OnHosts or WholeNode is set)")
	}
	for _, k := range t.LauncherOptions {
		if t.PropertyPrefix != "" && !strings.HasPrefix(k, t.PropertyPrefix) {
			missing = append(missing, fmt.Sprintf("LauncherOptions: %s outside the prefix %s", k, t.PropertyPrefix))
		}
	}
	if len(missing) > 0 {
		name := t.Kind
		if name == "" {
			name = "(no kind)"
		}
		return fmt.Errorf("target %s: incomplete entry: %s", name, strings.Join(missing, ", "))
	}
	return nil
}

// Get returns the target of kind, or an error listing the known kinds.
func (r *Registry) Get(kind string) (*Target, error) {
	t, ok := r.m[kind]
	if !ok {
		return nil, fmt.Errorf("unknown target %q (known: %s)", kind, strings.Join(r.Kinds(), ", "))
	}
	return t, nil
}

// Kinds lists the target kinds, sorted.
func (r *Registry) Kinds() []string {
	out := make([]string, 0, len(r.m))
	for k := range r.m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// OnNodeHosts lists the kinds whose nodes can run on inventory hosts
// (Target.OnHosts), sorted.
func (r *Registry) OnNodeHosts() []string {
	var out []string
	for _, k := range r.Kinds() {
		if r.m[k].OnHosts != nil {
			out = append(out, k)
		}
	}
	return out
}

// Launchable lists the kinds faultbench can start, sorted.
func (r *Registry) Launchable() []string {
	var out []string
	for _, k := range r.Kinds() {
		if r.m[k].Launcher != nil {
			out = append(out, k)
		}
	}
	return out
}

// NodeCommand returns the hidden node command name of any target, and the
// sorted names of all of them.
func (r *Registry) NodeCommand(name string) (func(context.Context, []string) error, []string) {
	var names []string
	var found func(context.Context, []string) error
	for _, t := range r.m {
		for n, f := range t.NodeCommands {
			names = append(names, n)
			if n == name {
				found = f
			}
		}
	}
	sort.Strings(names)
	return found, names
}

// OptionKeys returns the launcher option keys a cluster of this kind
// accepts (`cluster up -o`, a scenario's target.options): the launcher's
// own, the cluster manager's network key (netns.OptNet, `--net`) and disk
// key (diskfs.OptDisk, `--disk-faults`) and clock key (launcher.OptClock,
// `--clock-faults`).
func (t *Target) OptionKeys() []string {
	return append(append([]string(nil), t.LauncherOptions...), netns.OptNet, diskfs.OptDisk, launcher.OptClock)
}

// CheckOptionKey says whether k is one of OptionKeys; its error lists
// them and the kind's docs page. Every place that takes launcher options
// checks their keys here.
func (t *Target) CheckOptionKey(k string) error {
	keys := t.OptionKeys()
	if slices.Contains(keys, k) {
		return nil
	}
	return fmt.Errorf("unknown launcher option for %s (allowed: %s; see %s)", t.Kind, strings.Join(keys, ", "), t.Docs)
}

// CheckOptionValues checks the values of launcher options (their keys
// already checked against LauncherOptions) with the launcher's own parser,
// when the launcher can (launcher.OptionChecker); the network keys are the
// cluster manager's and are not passed on. Nothing is started.
func (t *Target) CheckOptionValues(opts map[string]string) error {
	c, ok := t.Launcher.(launcher.OptionChecker)
	if err := diskfs.CheckOption(opts[diskfs.OptDisk]); err != nil {
		return err
	}
	if err := t.CheckDiskLayer(opts); err != nil {
		return err
	}
	if err := t.CheckClock(opts); err != nil {
		return err
	}
	if !ok || len(opts) == 0 {
		return nil
	}
	if err := c.CheckOptions(launcher.OwnOptions(opts)); err != nil {
		return fmt.Errorf("%s launcher: %w (see %s)", t.Kind, err, t.Docs)
	}
	return nil
}

// CheckDiskLayer says whether the nodes of this kind can run on the disk
// faults' file-system layer when opts ask for it (diskfs.OptDisk): the
// launcher must declare it (launcher.DiskLayered) and accept its options
// on the layer. Nothing is started.
func (t *Target) CheckDiskLayer(opts map[string]string) error {
	if !diskfs.Wanted(opts) {
		return nil
	}
	d, ok := t.Launcher.(launcher.DiskLayered)
	if !ok {
		return fmt.Errorf("option %s=%s: the %s launcher does not put its nodes' data directories on the disk layer, so disk faults and power-loss cannot run on it (see %s)", diskfs.OptDisk, diskfs.DiskFuse, t.Kind, t.Docs)
	}
	if err := d.CheckDiskLayer(launcher.OwnOptions(opts)); err != nil {
		return fmt.Errorf("option %s=%s: %s launcher: %w (see %s)", diskfs.OptDisk, diskfs.DiskFuse, t.Kind, err, t.Docs)
	}
	return nil
}

// CheckClock refuses clock faults (option launcher.OptClock) on a kind
// whose nodes do not read the clock through libc, saying why.
func (t *Target) CheckClock(opts map[string]string) error {
	if err := launcher.CheckClockOption(opts[launcher.OptClock]); err != nil {
		return err
	}
	if launcher.ClockWanted(opts) && !t.LibcClock {
		return fmt.Errorf("%s takes no clock faults (option %s=%s, --clock-faults): %w", t.Kind, launcher.OptClock, launcher.ClockFaketime, launcher.ErrGoClock)
	}
	return nil
}

// ApplyDefaults sets the target's default properties where unset.
func (t *Target) ApplyDefaults(p *properties.Properties) {
	for k, v := range t.Defaults {
		p.SetDefault(k, v)
	}
}

// ConnectTo sets the properties that point the driver at cluster c (see
// Target.Connect), leaving properties the user set alone.
func (t *Target) ConnectTo(p *properties.Properties, c *launcher.Cluster) {
	if t.Connect != nil {
		t.Connect(p, c)
		return
	}
	ConnectList(t.EndpointKey)(p, c)
}

// Describe says in words what a cluster of this kind sized (nodes,
// replicas) is.
func (t *Target) Describe(nodes, replicas int) string {
	if t.Size.Describe != nil {
		return t.Size.Describe(nodes, replicas)
	}
	return plural(nodes, "node")
}

// NodeNamesWith returns the names of the nodes of a cluster of this kind
// sized (nodes, replicas) and started with the launcher options.
func (t *Target) NodeNamesWith(nodes, replicas int, options map[string]string) []string {
	if t.Size.NodeNamesWith != nil {
		return t.Size.NodeNamesWith(nodes, replicas, options)
	}
	return t.NodeNames(nodes, replicas)
}

// NodeNames returns the names of the nodes of a cluster of this kind sized
// (nodes, replicas), as its launcher names them.
func (t *Target) NodeNames(nodes, replicas int) []string {
	if t.Size.NodeNames != nil {
		return t.Size.NodeNames(nodes, replicas)
	}
	return numbered(nodes)
}

// numbered returns n1..nN.
func numbered(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "n" + strconv.Itoa(i+1)
	}
	return out
}

// ForK returns the cluster that realises fault-tolerance index k for the
// Under Pressure Benchmark, checked against FaultTolerance.
func (t *Target) ForK(k, nodes int) (n, replicas int, err error) {
	if k < 0 {
		return 0, 0, fmt.Errorf("fault-tolerance index %d: must not be negative", k)
	}
	if t.Size.ForK == nil {
		return 0, 0, fmt.Errorf("the Under Pressure Benchmark does not know how to realise a fault-tolerance index K on %s", t.Kind)
	}
	n, replicas, err = t.Size.ForK(k, nodes)
	if err != nil {
		return 0, 0, err
	}
	if got := t.Size.FaultTolerance(n, replicas); got != k {
		return 0, 0, fmt.Errorf("%s tolerate %d failures, not K=%d", t.Describe(n, replicas), got, k)
	}
	return n, replicas, nil
}

// ConnectList returns a Connect that sets key to the cluster's endpoints
// (comma-separated) and records the cluster's name.
func ConnectList(key string) func(*properties.Properties, *launcher.Cluster) {
	return func(p *properties.Properties, c *launcher.Cluster) {
		if !p.Has(key) {
			p.Set(key, strings.Join(c.Endpoints(), ","))
		}
		if !p.Has("faultbench.cluster") {
			p.Set("faultbench.cluster", c.Name)
		}
		p.Declare("faultbench.cluster")
	}
}

func mastersWithReplicas(nodes, replicas int) string {
	if replicas > 0 {
		return fmt.Sprintf("%s with %s each, %d nodes", plural(nodes, "master"), plural(replicas, "replica"), nodes*(1+replicas))
	}
	return plural(nodes, "node")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// ptr returns a pointer to a copy of v (an entry's optional declaration).
func ptr[T any](v T) *T { return &v }
