// Package fault breaks and repairs clusters that a launcher started.
//
// A fault kind (kill, stop, start, restart, pause, resume, and crash-client,
// which acts on the load's client instead of a node) implements Fault,
// a lifecycle in the shape of roachprod's failure modes: Prepare, Inject,
// WaitEffective, Restore, WaitRestored, Cleanup. Every call takes a context
// first and every wait has a deadline whose error says what it waited for.
// Kinds are looked up by name in a Registry, which holds each kind's
// description (package kind: family, restores, report label and colour,
// parameters) with the constructor of its Fault; every fault event carries
// the kind's action and family in fields of its own.
//
// Faults act on node selectors — a node name, a role (leader, primary,
// replica, follower), random, any:N, all, or a name bound earlier with "as" —
// which a Resolver turns into node names against the cluster as it is at
// injection time.
//
// Run executes a Schedule (faults at times relative to the start of the
// measured run) and writes fault events; Watch polls the cluster and writes
// what it observes (nodes down and up, leader and role changes); RestoreAll
// brings every killed, stopped or paused node back after a run; Apply is the
// one-shot form behind `faultbench fault ACTION NODE`.
//
// Run, Watch, RestoreAll and Apply may share one Cluster concurrently: the
// Cluster owns a mutex, and every access to its Cluster goes through the
// Cluster's methods (Snapshot, Node, UpdateNode, Refresh, WaitHealthy,
// Persist). Launcher methods are called on private copies of the cluster, so
// a launcher may see concurrent calls on distinct *launcher.Cluster values.
// See docs/faults.md for the user-facing description.
package fault

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/fault/kind"
	"github.com/faultbench/faultbench/internal/launcher"
)

// Action names a fault kind, as written in a scenario's schedule and on the
// `faultbench fault` command line.
type Action string

// The built-in process actions. Other kinds (partition, heal, delay, loss,
// add-node, remove-node) are each one type plus one line in NewRegistry.
const (
	ActionKill    Action = "kill"    // SIGKILL the node's process
	ActionStop    Action = "stop"    // SIGTERM, SIGKILL after the stop grace
	ActionStart   Action = "start"   // start a dead node again with the same data and addresses
	ActionRestart Action = "restart" // stop, then start
	ActionPause   Action = "pause"   // SIGSTOP the node's process
	ActionResume  Action = "resume"  // SIGCONT a paused node
)

// Defaults for the Cluster's deadlines.
const (
	DefaultHealthTimeout = 60 * time.Second // Cluster.HealthTimeout when zero
	DefaultStopGrace     = 10 * time.Second // Cluster.StopGrace when zero
)

// Fault is one fault kind's lifecycle on a set of nodes. A value is made
// fresh for every use (see Registry) and may remember state between its
// calls, e.g. the pids it signalled. The same nodes are passed to every call.
//
// The executor calls Prepare, Inject, WaitEffective, and Cleanup at the end
// of a run; Restore and WaitRestored undo the fault where it has an undo
// (kill, stop: start the node; pause: resume it) and are no-ops for faults
// that repair (start, resume) or leave the node running (restart).
type Fault interface {
	// Name is the fault's action name.
	Name() Action
	// Prepare installs what Inject needs (nothing for signal faults).
	Prepare(ctx context.Context, t *Cluster, nodes []string) error
	// Inject applies the fault. It fails for nodes not in a state the fault
	// applies to (e.g. kill of a node that is not running) but still acts on
	// the others.
	Inject(ctx context.Context, t *Cluster, nodes []string) error
	// WaitEffective waits until the fault is in full effect (the process is
	// gone, the process is in stopped state, the started node serves).
	WaitEffective(ctx context.Context, t *Cluster, nodes []string) error
	// Restore undoes Inject where the fault has an undo.
	Restore(ctx context.Context, t *Cluster, nodes []string) error
	// WaitRestored waits until Restore took effect.
	WaitRestored(ctx context.Context, t *Cluster, nodes []string) error
	// Cleanup removes what Prepare installed; it does not restore.
	Cleanup(ctx context.Context, t *Cluster, nodes []string) error
}

// Repairer is implemented by faults that repair rather than break (start,
// resume). The executor does not wait for cluster health before them (the
// node they repair is what keeps the cluster unhealthy) and writes
// FaultRestore / FaultRestored events instead of FaultInject / FaultInjected.
type Repairer interface {
	// Repairs reports whether the fault repairs (true for start and resume).
	Repairs() bool
}

// IsRepair reports whether f repairs (see Repairer).
func IsRepair(f Fault) bool {
	r, ok := f.(Repairer)
	return ok && r.Repairs()
}

// Constructor makes a fresh Fault for one use.
type Constructor func() Fault

// Registry maps action names to fault kinds: each kind's description
// (kind.Kind: family, the restores that undo it, report label and colour,
// parameters) and the constructor of its Fault.
type Registry struct {
	kinds *kind.Registry
	m     map[Action]Constructor
}

// NewRegistry returns a registry holding the built-in faults, described by
// kind.Builtin.
func NewRegistry() *Registry {
	r := &Registry{kinds: kind.Builtin(), m: map[Action]Constructor{}}
	r.m[ActionKill] = func() Fault { return &killFault{} }
	r.m[ActionStop] = func() Fault { return &stopFault{} }
	r.m[ActionStart] = func() Fault { return &startFault{} }
	r.m[ActionRestart] = func() Fault { return &restartFault{} }
	r.m[ActionPause] = func() Fault { return &pauseFault{} }
	r.m[ActionResume] = func() Fault { return &resumeFault{} }
	r.m[ActionCrashClient] = func() Fault { return &crashClientFault{} }
	r.m[ActionPartition] = func() Fault { return &partitionFault{} }
	r.m[ActionHeal] = func() Fault { return &healFault{} }
	r.m[ActionLoss] = func() Fault { return &linkFault{action: ActionLoss} }
	r.m[ActionBandwidth] = func() Fault { return &linkFault{action: ActionBandwidth} }
	r.m[ActionDelay] = func() Fault { return &linkFault{action: ActionDelay} }
	r.m[ActionAddNode] = func() Fault { return &addNodeFault{} }
	r.m[ActionRemoveNode] = func() Fault { return &removeNodeFault{} }
	registerDisk(r)
	registerGray(r)
	registerClock(r)
	registerSlow(r)
	return r
}

// Add adds (or replaces) the fault kind k with the constructor of its
// Fault, whose Name must be k.Name: the one call that adds a fault kind. A
// kind that does not validate is refused.
func (r *Registry) Add(k kind.Kind, c Constructor) error {
	if c == nil {
		return fmt.Errorf("fault kind %q: no constructor", k.Name)
	}
	if err := r.kinds.Add(k); err != nil {
		return err
	}
	r.m[Action(k.Name)] = c
	return nil
}

// Register sets the constructor of action name, keeping its description
// (tests swap a kind's Fault for a recording one this way). A name without
// a description gets a bare one: no family, no parameters; use Add to
// describe a new kind.
func (r *Registry) Register(name Action, c Constructor) {
	if _, ok := r.kinds.Lookup(string(name)); !ok {
		r.kinds.AddBare(string(name))
	}
	r.m[name] = c
}

// Kinds is the registry's kind descriptions, for analysis and reports
// (analyze.Params.Kinds, report.Run.Kinds).
func (r *Registry) Kinds() *kind.Registry { return r.kinds }

// Unlisted returns the descriptions of the kinds of actions that
// kind.Builtin lacks or describes otherwise, once each, for summary.json
// (rundir.Summary.FaultKinds): a report of the run, which reads the run
// directory alone, then knows them. Nil when every one is built in.
func (r *Registry) Unlisted(actions []Action) []kind.Description {
	builtin := kind.Builtin()
	var out []kind.Description
	seen := map[Action]bool{}
	for _, a := range actions {
		k, ok := r.Kind(a)
		if seen[a] || !ok || k.Family == "" {
			continue
		}
		seen[a] = true
		if b, ok := builtin.Lookup(string(a)); ok && reflect.DeepEqual(b.Describe(), k.Describe()) {
			continue
		}
		out = append(out, k.Describe())
	}
	return out
}

// Kind returns the description of action.
func (r *Registry) Kind(a Action) (kind.Kind, bool) { return r.kinds.Lookup(string(a)) }

// kindOf is the description of action, a bare one (no family) if it has
// none.
func (r *Registry) kindOf(a Action) kind.Kind {
	if k, ok := r.Kind(a); ok {
		return k
	}
	return kind.Kind{Name: string(a)}
}

// builtinKind is the description of a built-in action (for the faults the
// package runs by itself: restore-all's resume, start and heal).
func builtinKind(a Action) kind.Kind {
	if k, ok := kind.Builtin().Lookup(string(a)); ok {
		return k
	}
	return kind.Kind{Name: string(a)}
}

// Has reports whether name is a registered action.
func (r *Registry) Has(name Action) bool {
	_, ok := r.m[name]
	return ok
}

// New returns a fresh fault of kind name; an unknown name's error lists the
// known ones.
func (r *Registry) New(name Action) (Fault, error) {
	c, ok := r.m[name]
	if !ok {
		return nil, fmt.Errorf("unknown fault action %q (known: %s)", name, strings.Join(r.names(), ", "))
	}
	return c(), nil
}

// Names lists the registered actions, sorted.
func (r *Registry) Names() []Action {
	out := make([]Action, 0, len(r.m))
	for k := range r.m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (r *Registry) names() []string {
	var out []string
	for _, a := range r.Names() {
		out = append(out, string(a))
	}
	return out
}

// CheckParams checks the parameters step st sets (Params, and its Hold,
// Count, Streaming and NoBootstrap by their parameter names) against its
// kind's declaration and returns them parsed, with one *kind.ParamError per
// problem. It is the one check of fault parameters: the schedule's
// validation, a scenario's (scenario.Validate, so `scenario --dry-run`
// too) and `faultbench fault` use it. An action the registry does not know
// is not checked here.
func (r *Registry) CheckParams(st Step) (kind.Values, []*kind.ParamError) {
	return r.kinds.CheckParams(string(st.Action), st.rawParams())
}

// ActsOnClient reports whether action acts on the load's client rather
// than on cluster nodes (crash-client): its step names no node.
func (r *Registry) ActsOnClient(a Action) bool { return isClientAction(r, a) }

// Nodeless reports whether action acts on no existing node (add-node): its
// step names no node.
func (r *Registry) Nodeless(a Action) bool { return isNodelessAction(r, a) }

// Restores lists the actions that undo a fault of action a (kill: start),
// none when nothing in a schedule undoes it or a is not known.
func (r *Registry) Restores(a Action) []Action {
	k, _ := r.Kind(a)
	out := make([]Action, len(k.Restores))
	for i, n := range k.Restores {
		out[i] = Action(n)
	}
	return out
}

// Cluster is the cluster faults act on, with what acting on it needs: the
// launcher, the recorded cluster state (field Cluster), the events log and
// the load's client.
//
// The state is shared by the executor, the watcher and the CLI helpers;
// once any of them runs, read and change it only through the Cluster's
// methods, which hold its mutex. Do not copy a Cluster.
type Cluster struct {
	// Launcher restarts nodes and reports roles and health.
	Launcher launcher.Launcher
	// Env spawns node processes (for start and restart).
	Env *launcher.Env
	// Cluster is the cluster's state; see the type comment for access rules.
	Cluster *launcher.Cluster
	// Events receives fault and observation events; nil discards them.
	Events *event.Log
	// Save persists the cluster state after pids change; may be nil.
	Save func(*launcher.Cluster) error
	// HealthTimeout bounds every wait for cluster health and each fault
	// phase; DefaultHealthTimeout when zero.
	HealthTimeout time.Duration
	// StopGrace is how long stop waits after SIGTERM before SIGKILL;
	// DefaultStopGrace when zero.
	StopGrace time.Duration
	// Load is the client the running load uses, for faults that act on it
	// (crash-client asserts ClientCrasher, see ClientFault); nil when no
	// load runs in this process. Set it before Run starts.
	Load any

	mu sync.Mutex // guards Cluster
}

func (t *Cluster) healthTimeout() time.Duration {
	if t.HealthTimeout > 0 {
		return t.HealthTimeout
	}
	return DefaultHealthTimeout
}

func (t *Cluster) stopGrace() time.Duration {
	if t.StopGrace > 0 {
		return t.StopGrace
	}
	return DefaultStopGrace
}

func (t *Cluster) emit(kind, node, detail, label string) {
	t.Events.Add(event.Event{Kind: kind, Node: node, Detail: detail, Fault: label})
}

// emitFault writes a fault event (fault-inject ... fault-error) about a
// fault of kind k: its action and family go in the event's own fields.
func (t *Cluster) emitFault(evKind string, k kind.Kind, node, detail, label string) {
	t.Events.Add(event.Event{Kind: evKind, Node: node, Detail: detail, Fault: label, Action: k.Name, Family: string(k.Family)})
}

// copyCluster returns a deep copy of c.
func copyCluster(c *launcher.Cluster) *launcher.Cluster {
	cp := *c
	cp.Nodes = make([]launcher.Node, len(c.Nodes))
	for i, n := range c.Nodes {
		cp.Nodes[i] = copyNode(n)
	}
	if c.Options != nil {
		cp.Options = make(map[string]string, len(c.Options))
		for k, v := range c.Options {
			cp.Options[k] = v
		}
	}
	return &cp
}

func copyNode(n launcher.Node) launcher.Node {
	n.Argv = append([]string(nil), n.Argv...)
	return n
}

// Snapshot returns a deep copy of the cluster, safe to read and to hand to
// a launcher.
func (t *Cluster) Snapshot() *launcher.Cluster {
	t.mu.Lock()
	defer t.mu.Unlock()
	return copyCluster(t.Cluster)
}

// Node returns a copy of node name.
func (t *Cluster) Node(name string) (launcher.Node, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, err := t.Cluster.Node(name)
	if err != nil {
		return launcher.Node{}, err
	}
	return copyNode(*n), nil
}

// UpdateNode calls fn with node name while holding the Cluster's mutex. fn
// must not block or call other Cluster methods.
func (t *Cluster) UpdateNode(name string, fn func(n *launcher.Node)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, err := t.Cluster.Node(name)
	if err != nil {
		return err
	}
	fn(n)
	return nil
}

// Refresh asks the launcher for current roles and liveness, on a copy of
// the cluster, and merges the result back node by node — except for nodes
// whose pid changed meanwhile (a fault restarted or killed them), whose
// newer state is kept. It returns the refreshed copy, which the caller owns.
// On a launcher error the copy holds whatever the launcher managed to fill
// in and nothing is merged.
func (t *Cluster) Refresh(ctx context.Context) (*launcher.Cluster, error) {
	cp := t.Snapshot()
	before := make(map[string]int, len(cp.Nodes))
	for _, n := range cp.Nodes {
		before[n.Name] = n.PID
	}
	if err := t.Launcher.Refresh(ctx, cp); err != nil {
		return cp, fmt.Errorf("refreshing cluster %s: %w", cp.Name, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, rn := range cp.Nodes {
		live, err := t.Cluster.Node(rn.Name)
		if err != nil {
			continue
		}
		if pid, ok := before[rn.Name]; ok && live.PID == pid {
			*live = copyNode(rn)
		}
	}
	return cp, nil
}

// WaitHealthy waits, at most HealthTimeout, until the launcher reports the
// cluster healthy. Nodes that are dead or paused cannot be healthy, so the
// copy the launcher checks shows them as not running (pid 0, down) and the
// wait is for the nodes that can serve. The error names the cluster, the
// deadline and what the wait was for (why).
func (t *Cluster) WaitHealthy(ctx context.Context, why string) error {
	timeout := t.healthTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cp := t.Snapshot() // pids are kept current by the faults; roles do not matter here
	for i := range cp.Nodes {
		if !nodeRunning(ctx, cp.ProcsOf(&cp.Nodes[i]), cp.Nodes[i]) {
			cp.Nodes[i].PID, cp.Nodes[i].Down = 0, true
		}
	}
	if err := t.Launcher.WaitHealthy(ctx, cp); err != nil {
		return fmt.Errorf("cluster %s not healthy within %s (waiting %s): %w", cp.Name, timeout, why, err)
	}
	return nil
}

// Persist saves a snapshot of the cluster through Save (if set).
func (t *Cluster) Persist() error {
	if t.Save == nil {
		return nil
	}
	c := t.Snapshot()
	if err := t.Save(c); err != nil {
		return fmt.Errorf("saving state of cluster %s: %w", c.Name, err)
	}
	return nil
}

// refreshTimeout bounds one launcher Refresh made by the executor.
const refreshTimeout = 10 * time.Second

// refuseOnHosts refuses bandwidth and delay on a cluster with nodes on
// other hosts (Node.Host): they are applied in this machine's network
// namespaces only. Partition, loss and heal reach the hosts' own packet
// filters (remotenet.go).
func refuseOnHosts(t *Cluster, f Fault) error {
	switch f.Name() {
	case ActionBandwidth, ActionDelay:
	default:
		return nil
	}
	var remote []string
	for _, n := range t.Snapshot().Nodes {
		if n.Host != "" {
			remote = append(remote, n.Name+"@"+n.Host)
		}
	}
	if len(remote) == 0 {
		return nil
	}
	return fmt.Errorf("%s on remote nodes is not supported yet (nodes on inventory hosts %s); partition, loss, heal, kill, stop, start, restart, pause and resume are",
		f.Name(), strings.Join(remote, ", "))
}

// nodeRunning reports whether n's process exists (on its host, through p)
// and is not paused.
func nodeRunning(ctx context.Context, p launcher.Procs, n launcher.Node) bool {
	return n.PID > 0 && p.Alive(ctx, n.PID) && !p.Stopped(ctx, n.PID)
}

// nodePaused reports whether n's process exists (on its host, through p)
// and is stopped by a signal.
func nodePaused(ctx context.Context, p launcher.Procs, n launcher.Node) bool {
	return n.PID > 0 && p.Alive(ctx, n.PID) && p.Stopped(ctx, n.PID)
}

// nodeUp reports whether n can serve as far as faultbench knows: the
// launcher does not say it is down and its process runs.
func nodeUp(ctx context.Context, p launcher.Procs, n launcher.Node) bool {
	return !n.Down && nodeRunning(ctx, p, n)
}
