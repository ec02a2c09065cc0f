// Package target ties each database kind faultbench can drive to its driver
// and, where faultbench can start one, its launcher. Adding a target is one
// package under driver/ (and launcher/) plus one entry in Builtin.
package target

import (
	"fmt"
	"sort"
	"strings"

	"github.com/faultbench/faultbench/internal/driver"
	etcddriver "github.com/faultbench/faultbench/internal/driver/etcd"
	redisdriver "github.com/faultbench/faultbench/internal/driver/redis"
	txkvdriver "github.com/faultbench/faultbench/internal/driver/txkv"
	"github.com/faultbench/faultbench/internal/launcher"
	etcdlauncher "github.com/faultbench/faultbench/internal/launcher/etcd"
	redislauncher "github.com/faultbench/faultbench/internal/launcher/redis"
	txkvlauncher "github.com/faultbench/faultbench/internal/launcher/txkv"
	"github.com/faultbench/faultbench/internal/properties"
)

// Target is one database kind.
type Target struct {
	Kind string // name on the command line
	Help string // one line for --help
	// Driver builds the client.
	Driver driver.Factory
	// Launcher starts local clusters; nil if faultbench cannot start this kind.
	Launcher launcher.Launcher
	// Connect sets the driver properties that point at a launched cluster,
	// leaving properties the user set alone.
	Connect func(p *properties.Properties, c *launcher.Cluster)
	// EndpointKey is the property that names the database's address(es).
	EndpointKey string
	// PropertyPrefix starts every driver property (e.g. "etcd."); the driver
	// validates the keys under it.
	PropertyPrefix string
	// DefaultNodes and DefaultReplicas size a cluster when the user says nothing.
	DefaultNodes, DefaultReplicas int
	// FaultTolerance returns the fault-tolerance index K of a cluster of this
	// kind sized (nodes, replicas): how many nodes may fail while it serves.
	FaultTolerance func(nodes, replicas int) int
	// Defaults are properties a target sets before the user's (e.g. the
	// redis driver's mode for redis-cluster).
	Defaults map[string]string
}

// Registry holds the targets by kind.
type Registry struct{ m map[string]*Target }

// Builtin returns a registry of every target compiled into faultbench.
func Builtin() *Registry {
	r := &Registry{m: map[string]*Target{}}
	r.add(&Target{
		Kind:            "etcd",
		Help:            "etcd v3 (the embedded default: members run from the faultbench binary)",
		Driver:          etcddriver.New,
		Launcher:        etcdlauncher.Launcher{},
		EndpointKey:     "etcd.endpoints",
		PropertyPrefix:  "etcd.",
		DefaultNodes:    3,
		FaultTolerance:  func(n, _ int) int { return (n - 1) / 2 },
		Connect:         connectList("etcd.endpoints"),
		DefaultReplicas: 0,
	})
	r.add(&Target{
		Kind:           "redis-cluster",
		Help:           "Redis Cluster (redis-server from Debian's package): masters with replicas",
		Driver:         redisdriver.New,
		Launcher:       redislauncher.ClusterLauncher{},
		EndpointKey:    "redis.addr",
		PropertyPrefix: "redis.",
		DefaultNodes:   3,
		FaultTolerance: func(_, r int) int { return r },
		Connect:        connectList("redis.addr"),
		Defaults:       map[string]string{"redis.mode": "cluster"},
		// one replica per master: a master kill has somewhere to fail over to
		DefaultReplicas: 1,
	})
	r.add(&Target{
		Kind:           "redis",
		Help:           "Redis standalone or any Redis Cluster (-p redis.mode=cluster -p redis.addr=...)",
		Driver:         redisdriver.New,
		Launcher:       redislauncher.StandaloneLauncher{},
		EndpointKey:    "redis.addr",
		PropertyPrefix: "redis.",
		DefaultNodes:   1,
		FaultTolerance: func(_, r int) int { return r },
		Connect:        connectList("redis.addr"),
	})
	r.add(&Target{
		Kind:            "txkv",
		Help:            "txkv, the transactional store of seed 002 (coordinator and region servers run from the faultbench binary)",
		Driver:          txkvdriver.New,
		Launcher:        txkvlauncher.Launcher{},
		EndpointKey:     txkvdriver.PropCoordinator,
		DefaultNodes:    2, // region servers, besides the coordinator
		FaultTolerance:  func(n, _ int) int { return n - 1 },
		Connect:         txkvlauncher.Connect,
		DefaultReplicas: 0,
	})
	return r
}

func (r *Registry) add(t *Target) { r.m[t.Kind] = t }

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

// Launchers returns a launcher registry of every target that has one.
func (r *Registry) Launchers() *launcher.Registry {
	var ls []launcher.Launcher
	for _, k := range r.Kinds() {
		if l := r.m[k].Launcher; l != nil {
			ls = append(ls, l)
		}
	}
	return launcher.NewRegistry(ls...)
}

// ApplyDefaults sets the target's default properties where unset.
func (t *Target) ApplyDefaults(p *properties.Properties) {
	for k, v := range t.Defaults {
		p.SetDefault(k, v)
	}
}

func connectList(key string) func(*properties.Properties, *launcher.Cluster) {
	return func(p *properties.Properties, c *launcher.Cluster) {
		if !p.Has(key) {
			p.Set(key, strings.Join(c.Endpoints(), ","))
		}
		if c.Kind == "redis-cluster" && !p.Has("redis.mode") {
			p.Set("redis.mode", "cluster")
		}
		if !p.Has("faultbench.cluster") {
			p.Set("faultbench.cluster", c.Name)
		}
		p.Declare("faultbench.cluster")
	}
}
