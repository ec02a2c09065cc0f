// Package launcher starts, stops and inspects clusters of database nodes on
// this machine. A Launcher (one per target kind, in sub-packages) knows how to
// bring a cluster up and how to restart one of its nodes; this package holds
// what every kind shares: the node and cluster model, the state file that lets
// `cluster down` and `cleanup` find every process again, process spawning
// that never leaves an orphan behind, and the one place where node addresses
// are assigned.
package launcher

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// Roles a node can have. Launchers report what their database calls it.
const (
	RoleLeader   = "leader"
	RoleFollower = "follower"
	RolePrimary  = "primary" // Redis Cluster master
	RoleReplica  = "replica"
	RoleUnknown  = ""
)

// Node is one database process of a cluster.
type Node struct {
	Name     string   `json:"name"`      // n1, n2, ...
	PID      int      `json:"pid"`       // 0 when not running
	Addr     string   `json:"addr"`      // client address host:port
	PeerAddr string   `json:"peer_addr"` // peer/bus address host:port, if any
	DataDir  string   `json:"data_dir"`
	LogFile  string   `json:"log_file"`
	Argv     []string `json:"argv"` // the command that (re)starts this node with the same data and addresses
	Role     string   `json:"role,omitempty"`
	ID       string   `json:"id,omitempty"` // the database's own id (etcd member id, redis node id)
	Down     bool     `json:"down,omitempty"`
	// Host is the inventory host the node runs on (internal/remote, over
	// SSH); empty for this machine. Its pid, files and Argv are the host's.
	Host string `json:"host,omitempty"`
	// Found, set on a node of an existing cluster faultbench did not start
	// (an inventory's cluster:), says how its process is found and started
	// again on its host; such a node is never stopped by Down nor its
	// files removed.
	Found *Finder `json:"found,omitempty"`
}

// Finder says how the process of a node faultbench did not start is found
// on its host: exactly one of Unit, PidFile and Process; Start (an
// argument vector) starts it again where it is not a unit.
type Finder struct {
	Unit    string   `json:"unit,omitempty"`
	PidFile string   `json:"pid_file,omitempty"`
	Process string   `json:"process,omitempty"`
	Start   []string `json:"start,omitempty"`
}

// What says how the process is found, for messages.
func (f *Finder) What() string {
	switch {
	case f.Unit != "":
		return "systemd unit " + f.Unit
	case f.PidFile != "":
		return "pid file " + f.PidFile
	}
	return "process pattern " + f.Process
}

// ProcessFinder is an optional ability of a Host: finding and starting the
// process of a node faultbench did not start (Node.Found).
type ProcessFinder interface {
	// FindPID returns the node's pid; 0 when it does not run.
	FindPID(ctx context.Context, f *Finder) (int, error)
	// StartFound starts the node (systemctl start UNIT, or Start detached)
	// without waiting for it; node names it in the host's directory for
	// Start's log.
	StartFound(ctx context.Context, f *Finder, cluster, node string) error
}

// Cluster is a running (or partly running) cluster, as recorded in its state file.
type Cluster struct {
	Kind      string            `json:"kind"` // target kind, e.g. "etcd"
	Name      string            `json:"name"` // state name, e.g. "etcd" or "run-20261122T...-etcd"
	Dir       string            `json:"dir"`  // root of node data and logs
	Nodes     []Node            `json:"nodes"`
	Options   map[string]string `json:"options,omitempty"`
	Detached  bool              `json:"detached"`  // nodes outlive the faultbench that started them
	OwnerPID  int               `json:"owner_pid"` // the faultbench process that owns a non-detached cluster
	KeepData  bool              `json:"keep_data,omitempty"`
	TempDir   bool              `json:"temp_dir,omitempty"` // Dir was created by faultbench and is removed on down
	CreatedAt time.Time         `json:"created_at"`
	// Inventory is the absolute path of the inventory file whose hosts run
	// nodes of this cluster (Node.Host); empty when every node is local.
	Inventory string `json:"inventory,omitempty"`
	// Hosts reaches the nodes' hosts; attached when the state is loaded
	// (StateStore.OpenHosts) or by the launcher, never recorded.
	Hosts Hosts `json:"-"`
}

// Node returns the node with the given name.
func (c *Cluster) Node(name string) (*Node, error) {
	for i := range c.Nodes {
		if c.Nodes[i].Name == name {
			return &c.Nodes[i], nil
		}
	}
	return nil, fmt.Errorf("cluster %s has no node %q (nodes: %s)", c.Name, name, strings.Join(c.NodeNames(), ", "))
}

// NodeNames returns the node names in order.
func (c *Cluster) NodeNames() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Name
	}
	return out
}

// Endpoints returns the client addresses of all nodes, down ones included
// (clients are expected to fail over between them).
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// WithRole returns the names of the up nodes having role, sorted.
func (c *Cluster) WithRole(role string) []string {
	var out []string
	for _, n := range c.Nodes {
		if n.Role == role && !n.Down {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Spec says what cluster to bring up.
type Spec struct {
	Name     string            // state name; defaults to the kind
	Nodes    int               // members (etcd) or masters (redis-cluster)
	Replicas int               // replicas per master where the kind has them
	Dir      string            // root directory for data and logs; a temp dir when empty
	Detached bool              // nodes survive this process (cluster up); otherwise they die with it
	KeepData bool              // keep data directories on down
	Options  map[string]string // kind-specific options, documented by each launcher
	// Hosts names the inventory hosts (Env.Remote) to run the nodes on, one
	// node per host in order (Nodes*(1+Replicas) hosts: the replicas
	// after the nodes they replicate, as on this machine); empty: every node
	// on this machine. Only kinds whose target entry declares what they need
	// on a host support it (targets.Target.OnHosts).
	Hosts []string
}

// Validate checks the parts every kind shares.
func (s Spec) Validate() error {
	if s.Nodes < 1 {
		return fmt.Errorf("nodes must be at least 1, got %d", s.Nodes)
	}
	if total := s.Nodes * (1 + s.Replicas); len(s.Hosts) > 0 && len(s.Hosts) != total {
		if s.Replicas > 0 {
			return fmt.Errorf("%d nodes (%d with %d replicas each) on %d hosts: one node per host", total, s.Nodes, s.Replicas, len(s.Hosts))
		}
		return fmt.Errorf("%d nodes on %d hosts: one node per host", total, len(s.Hosts))
	}
	if s.Nodes > 64 {
		return fmt.Errorf("nodes must be at most 64 on one machine, got %d", s.Nodes)
	}
	if s.Replicas < 0 {
		return fmt.Errorf("replicas must not be negative, got %d", s.Replicas)
	}
	return nil
}

// Launcher brings up clusters of one target kind.
type Launcher interface {
	// Kind is the target kind, e.g. "etcd".
	Kind() string
	// Up starts every node and returns once the cluster is healthy (or ctx ends).
	// On error, whatever was started is stopped again.
	Up(ctx context.Context, env *Env, spec Spec) (*Cluster, error)
	// StartNode starts a stopped node again with the same data directory and addresses.
	StartNode(ctx context.Context, env *Env, c *Cluster, name string) error
	// Refresh updates roles (leader, primary ...) and liveness of the nodes.
	Refresh(ctx context.Context, c *Cluster) error
	// WaitHealthy waits until every up node is healthy and the cluster can
	// serve (etcd: all members healthy and a leader; redis: all slots covered
	// and replicas in sync). The error says what it was still waiting for.
	WaitHealthy(ctx context.Context, c *Cluster) error
}

// Recovery is a database's own record of a failure it detected and
// recovered from, e.g. txkv's recovery manager declaring a region server
// failed and bringing its regions back.
type Recovery struct {
	Kind     string    // what failed, in the database's words (txkv: "server", "coordinator")
	Name     string    // the failed node's name (a cluster node name where it is one)
	Detected time.Time // when the database declared the failure (wall clock)
	Done     time.Time // when its recovery finished (wall clock)
	Detail   string    // what the recovery did, e.g. "4 regions, 914 write-sets replayed after T_P 1234"
}

// RecoveryReporter is implemented by launchers whose database keeps records
// of the failures it recovered from (txkv). The fault watcher asks for them
// on every refresh and writes each new record as two events, at the
// database's detection and completion times.
type RecoveryReporter interface {
	// Recoveries returns the finished recoveries the database remembers,
	// oldest first. It fails when the database cannot be asked right now.
	Recoveries(ctx context.Context, c *Cluster) ([]Recovery, error)
}

// NewCluster returns the record of a new cluster of kind (no nodes yet)
// owned by this process: named spec.Name (default: the kind), rooted at
// dir (temp: faultbench created it), with the launcher's resolved options.
func NewCluster(kind string, spec Spec, dir string, temp bool, options map[string]string) *Cluster {
	name := spec.Name
	if name == "" {
		name = kind
	}
	return &Cluster{Kind: kind, Name: name, Dir: dir, Options: options, Detached: spec.Detached,
		OwnerPID: os.Getpid(), KeepData: spec.KeepData, TempDir: temp, CreatedAt: time.Now().UTC()}
}

// NetFaulter is an optional ability of a Host (found by type assertion):
// network faults on the host's own packet filter, for the node it runs.
// Rules are grouped by owner (one fault), so that one fault's rules can be
// removed without the others'. Every call is idempotent where it says so
// and has a deadline of its own.
type NetFaulter interface {
	// AddDrops makes the host drop the packets that arrive from any of
	// from and are addressed to to (IP addresses), under owner.
	AddDrops(ctx context.Context, owner, to string, from []string) error
	// AddLoss makes the host drop the fraction p (0 < p <= 1) of the
	// packets that arrive for to (an IP address) at random, except those of
	// the host's SSH server, under owner.
	AddLoss(ctx context.Context, owner, to string, p float64) error
	// RemoveNet removes owner's rules (none in place is fine) and returns
	// whether there were any.
	RemoveNet(ctx context.Context, owner string) (bool, error)
	// NetOwners lists the owners whose rules are in place on the host.
	NetOwners(ctx context.Context) ([]string, error)
	// ClearNet removes every network fault faultbench put on the host
	// (idempotent) and reports whether there was any.
	ClearNet(ctx context.Context) (bool, error)
}

// Leftovers is an optional ability of a Host: it says what a fault that
// could not be undone there leaves behind and how a user removes it (a
// command to run on the host, the cleanup that does), for the error that
// reports it.
type Leftovers interface {
	// NetLeftover describes owner's network fault rules left on the host.
	NetLeftover(owner string) string
	// StoppedLeftover describes pid left stopped (SIGSTOP) on the host.
	StoppedLeftover(pid int) string
}
