package fault

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/fault/kind"
	"github.com/faultbench/faultbench/internal/launcher"
)

// The scaling actions of the elasticity benchmarks (EB1: one scaling action
// at a chosen time under constant load). They need a launcher with the
// optional ability launcher.Scaler (add-node) or launcher.Shrinker
// (remove-node).
const (
	// ActionAddNode adds Step.Count nodes (default 1) to the cluster: the
	// database's own way of adding capacity, data movement included. It
	// acts on no existing node: its step has no node.
	ActionAddNode Action = "add-node"
	// ActionRemoveNode takes the selected node(s) out of the cluster for
	// good, one after the other, moving their data to the others first.
	ActionRemoveNode Action = "remove-node"
)

// MaxScaleCount is the most nodes one add-node step adds (its parameter's
// declaration is in package kind).
const MaxScaleCount = kind.MaxScaleCount

// DefaultScaleTimeout bounds each phase of a scaling step (the streaming
// of a throttled bootstrap takes minutes by design) unless the cluster's
// HealthTimeout is longer.
const DefaultScaleTimeout = 30 * time.Minute

// phaseTimeouter is implemented by faults whose phases may take longer
// than the cluster's HealthTimeout.
type phaseTimeouter interface {
	phaseTimeout(health time.Duration) time.Duration
}

// nodeless is implemented by faults that act on no existing node and so
// take no selector (add-node).
type nodeless interface{ nodeless() bool }

// isNodeless reports whether f takes no node selector.
func isNodeless(f Fault) bool {
	n, ok := f.(nodeless)
	return ok && n.nodeless()
}

// isNodelessAction reports whether reg's action takes no node selector.
func isNodelessAction(reg *Registry, a Action) bool {
	if !reg.Has(a) {
		return false
	}
	f, err := reg.New(a)
	return err == nil && isNodeless(f)
}

// isScaleAction reports whether a is add-node or remove-node.
func isScaleAction(a Action) bool { return a == ActionAddNode || a == ActionRemoveNode }

// scaleOptions turns a step's parameters into launcher options that
// report milestones as events labelled label.
func scaleOptions(st Step, t *Cluster, label string) (launcher.ScaleOptions, error) {
	mbit, err := launcher.ParseStreaming(st.Streaming)
	if err != nil {
		return launcher.ScaleOptions{}, err
	}
	count := st.Count
	if count == 0 {
		count = 1
	}
	return launcher.ScaleOptions{
		Count: count, StreamMbit: mbit, NoBootstrap: st.NoBootstrap,
		Progress: func(e launcher.ScaleEvent) {
			t.Events.Add(event.Event{Kind: e.Kind, Node: e.Node, Detail: e.Detail, Fault: label, Wall: e.At})
		},
	}, nil
}

// scaleDetail renders a scaling step's options for events: "add-node 1
// (streaming 5mbit)", "add-node 3 (bootstrap false)".
func scaleDetail(st Step) string {
	var opts []string
	if st.Streaming != "" {
		opts = append(opts, "streaming "+st.Streaming)
	}
	if st.NoBootstrap {
		opts = append(opts, "bootstrap false")
	}
	out := string(st.Action)
	if st.Action == ActionAddNode {
		n := st.Count
		if n == 0 {
			n = 1
		}
		out = fmt.Sprintf("%s %d", out, n)
	} else {
		out += " " + st.Node
	}
	if len(opts) > 0 {
		out += " (" + strings.Join(opts, ", ") + ")"
	}
	return out
}

// scaleBase holds what both scaling faults share.
type scaleBase struct {
	noLifecycle
	noUndo
	step  Step
	label string
}

// ConfigureStep takes the step's count, streaming and bootstrap, checked
// against the kind's declaration.
func (f *scaleBase) ConfigureStep(st Step, label string) error {
	f.step, f.label = st, label
	return nil
}

func (f *scaleBase) phaseTimeout(health time.Duration) time.Duration {
	return max(health, DefaultScaleTimeout)
}

func (f *scaleBase) WaitEffective(context.Context, *Cluster, []string) error { return nil }

// addNodeFault is add-node: Inject runs the launcher's AddNodes on a copy
// of the cluster and merges the new nodes in once they serve.
type addNodeFault struct{ scaleBase }

func (*addNodeFault) Name() Action   { return ActionAddNode }
func (*addNodeFault) nodeless() bool { return true }

func (f *addNodeFault) Inject(ctx context.Context, t *Cluster, _ []string) error {
	s, ok := t.Launcher.(launcher.Scaler)
	if !ok {
		return fmt.Errorf("the %s launcher cannot add nodes to a running cluster", t.Launcher.Kind())
	}
	st := f.step
	if st.Action == "" { // used without a schedule step (faultbench fault add-node)
		st = Step{Action: ActionAddNode}
	}
	opts, err := scaleOptions(st, t, f.label)
	if err != nil {
		return err
	}
	detail := scaleDetail(st)
	t.emit(event.ScaleStart, "", detail, f.label)
	cp := t.Snapshot()
	before := len(cp.Nodes)
	names, err := s.AddNodes(ctx, t.Env, cp, opts)
	if err != nil {
		t.emit(event.ScaleEnd, "", fmt.Sprintf("%s failed: %v", detail, err), f.label)
		return err
	}
	t.mu.Lock()
	have := map[string]bool{}
	for _, n := range t.Cluster.Nodes {
		have[n.Name] = true
	}
	for _, n := range cp.Nodes[before:] {
		if !have[n.Name] {
			t.Cluster.Nodes = append(t.Cluster.Nodes, copyNode(n))
		}
	}
	t.mu.Unlock()
	t.emit(event.ScaleEnd, joinNodes(names), detail+": "+joinNodes(names)+" joined", f.label)
	return nil
}

// removeNodeFault is remove-node: Inject runs the launcher's RemoveNode for
// each selected node in turn and deletes it from the cluster.
type removeNodeFault struct{ scaleBase }

func (*removeNodeFault) Name() Action { return ActionRemoveNode }

func (f *removeNodeFault) Inject(ctx context.Context, t *Cluster, nodes []string) error {
	s, ok := t.Launcher.(launcher.Shrinker)
	if !ok {
		return fmt.Errorf("the %s launcher cannot remove nodes from a running cluster", t.Launcher.Kind())
	}
	st := f.step
	if st.Action == "" {
		st = Step{Action: ActionRemoveNode, Node: joinNodes(nodes)}
	}
	opts, err := scaleOptions(st, t, f.label)
	if err != nil {
		return err
	}
	detail := scaleDetail(st)
	t.emit(event.ScaleStart, joinNodes(nodes), detail, f.label)
	var errs []error
	for _, name := range nodes {
		cp := t.Snapshot()
		if err := s.RemoveNode(ctx, t.Env, cp, name, opts); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", name, err))
			continue
		}
		t.mu.Lock()
		for i := range t.Cluster.Nodes {
			if t.Cluster.Nodes[i].Name == name {
				t.Cluster.Nodes = append(t.Cluster.Nodes[:i], t.Cluster.Nodes[i+1:]...)
				break
			}
		}
		t.mu.Unlock()
	}
	end := detail + ": removed " + joinNodes(nodes)
	if err := errors.Join(errs...); err != nil {
		end = fmt.Sprintf("%s failed: %v", detail, err)
	}
	t.emit(event.ScaleEnd, joinNodes(nodes), end, f.label)
	return errors.Join(errs...)
}

// CheckScaling checks, before anything starts, that the launcher l has the
// abilities the schedule's scaling steps need (launcher.Scaler for
// add-node, launcher.Shrinker for remove-node). A nil l (no launcher: an
// external cluster) fails any scaling step.
func CheckScaling(s Schedule, l launcher.Launcher) error {
	var errs []error
	for i, st := range s {
		var ok bool
		switch st.Action {
		case ActionAddNode:
			_, ok = l.(launcher.Scaler)
		case ActionRemoveNode:
			_, ok = l.(launcher.Shrinker)
		default:
			continue
		}
		if ok {
			if c, isChecker := l.(launcher.ScaleOptionChecker); isChecker {
				mbit, err := launcher.ParseStreaming(st.Streaming)
				if err == nil {
					err = c.CheckScaleOptions(launcher.ScaleOptions{Count: max(1, st.Count), StreamMbit: mbit, NoBootstrap: st.NoBootstrap})
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("schedule step %d (%s): %w", i+1, st, err))
				}
			}
			continue
		}
		if !ok {
			kind := "this target"
			if l != nil {
				kind = "the " + l.Kind() + " launcher"
			}
			errs = append(errs, fmt.Errorf("schedule step %d (%s): %s cannot %s (scaling works on cassandra, etcd and redis-cluster)", i+1, st, kind, st.Action))
		}
	}
	return errors.Join(errs...)
}
