package fault

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/fault/kind"
	"github.com/faultbench/faultbench/internal/launcher"
)

// Step is one fault of a schedule.
type Step struct {
	At     time.Duration // when, relative to the start of the measured run
	Action Action        // what: kill, stop, start, restart, pause, resume
	Node   string        // which nodes: a selector (see Resolver.Resolve)
	As     string        // optional: bind the resolved nodes to this name for later steps
	Label  string        // optional: the fault's label in events (default: As, else the bound name Node refers to, else "step N")
	// Hold is crash-client's parameter: how long the client commits
	// without flushing before it crashes (0: crash right away).
	Hold time.Duration
	// Count, Streaming and NoBootstrap are the scaling actions' parameters:
	// how many nodes add-node adds (0: 1), the streaming throttle of
	// add-node and remove-node (launcher.ParseStreaming: "", unthrottled,
	// 5mbit ...), and add-node without bootstrap streaming.
	Count       int
	Streaming   string
	NoBootstrap bool
	// Params are parameters of the step's kind as text by name (a scenario
	// step's params:); the fields above set the parameters of their names
	// (hold, count, streaming, bootstrap) and win over Params. Every
	// parameter is checked against the kind's declaration
	// (Registry.CheckParams).
	Params map[string]string
	// Concurrent injects the fault while earlier ones still hold: Run does
	// not wait for a healthy cluster before it (a chaos cycle's second and
	// later faults).
	Concurrent bool
	// Values are all the step's parameters, checked and parsed to their
	// types. The executor sets them, and the fields above from them,
	// before ConfigureStep.
	Values kind.Values
}

// The step fields that are parameters of built-in kinds, by parameter name.
const (
	paramHold      = "hold"
	paramCount     = "count"
	paramStreaming = "streaming"
	paramBootstrap = "bootstrap"
)

// withFieldParams returns s with the built-in kinds' parameters that have
// a field of their own but were given in Params moved into those fields, so
// that messages and the plan show them; a value that does not check is
// left where it is (validation reports it).
func (s Step) withFieldParams() Step {
	if len(s.Params) == 0 {
		return s
	}
	vals, _ := kind.Builtin().CheckParams(string(s.Action), s.rawParams())
	s.setFields(vals)
	return s
}

// setFields sets the fields of the parameters in vals.
func (s *Step) setFields(vals kind.Values) {
	if _, ok := vals[paramHold]; ok {
		s.Hold = vals.Duration(paramHold)
	}
	if _, ok := vals[paramCount]; ok {
		s.Count = vals.Int(paramCount)
	}
	if _, ok := vals[paramStreaming]; ok {
		s.Streaming = vals.String(paramStreaming)
	}
	if b, set := vals.Bool(paramBootstrap); set {
		s.NoBootstrap = !b
	}
}

// rawParams gathers the parameters the step sets: Params, and the fields
// that are not at their zero value.
func (s Step) rawParams() map[string]any {
	raw := make(map[string]any, len(s.Params)+4)
	for k, v := range s.Params {
		raw[k] = v
	}
	if s.Hold != 0 {
		raw[paramHold] = s.Hold
	}
	if s.Count != 0 {
		raw[paramCount] = s.Count
	}
	if s.Streaming != "" {
		raw[paramStreaming] = s.Streaming
	}
	if s.NoBootstrap {
		raw[paramBootstrap] = false
	}
	return raw
}

// String renders the step as in messages: "at 30s: kill leader as victim".
func (s Step) String() string {
	out := fmt.Sprintf("at %s: %s", s.At, s.detail())
	if s.As != "" {
		out += " as " + s.As
	}
	return out
}

// detail renders the action and what it acts on, as in event details:
// "kill leader", "crash-client (flushes held back 1s)".
func (s Step) detail() string {
	s = s.withFieldParams()
	if isScaleAction(s.Action) {
		return scaleDetail(s)
	}
	if s.Node == "" || s.Node == ClientNode { // a client fault (node faults need a node)
		out := string(s.Action)
		if s.Hold > 0 {
			out += fmt.Sprintf(" (flushes held back %s)", s.Hold)
		}
		return out
	}
	return fmt.Sprintf("%s %s", s.Action, s.Node)
}

// eventDetail is detail with the step's other parameters, for its events:
// "disk-delay n1 (fsync=50ms, distribution=exponential)".
func (s Step) eventDetail() string {
	return s.detail() + paramsText(s.Params)
}

// paramsText renders a step's params but those with a field of their own
// (which detail shows), sorted by name: " (fsync=50ms,
// distribution=exponential)"; "" without any.
func paramsText(p map[string]string) string {
	names := make([]string, 0, len(p))
	for n := range p {
		switch n {
		case paramHold, paramCount, paramStreaming, paramBootstrap:
			continue
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	for i, n := range names {
		names[i] = n + "=" + p[n]
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// Schedule is a list of steps in time order.
type Schedule []Step

// Actions lists the steps' actions, in step order.
func (s Schedule) Actions() []Action {
	out := make([]Action, len(s))
	for i, st := range s {
		out[i] = st.Action
	}
	return out
}

// Validate checks the schedule against the built-in fault kinds; see
// ValidateFor.
func (s Schedule) Validate() error { return s.ValidateFor(NewRegistry(), nil) }

// ValidateFor checks that times are not negative and in order, that every
// action is in reg, that selectors are well formed, that every "as" name is a
// plain name bound once, and that a bound name is used only after the step
// that binds it. With c set it also checks that node names exist in c and
// that no bound name is also a node name. All problems are reported, each
// naming its step.
func (s Schedule) ValidateFor(reg *Registry, c *launcher.Cluster) error {
	binds := map[string]int{} // name -> index of the binding step
	for i, st := range s {
		if st.As == "" {
			continue
		}
		if _, ok := binds[st.As]; !ok {
			binds[st.As] = i
		}
	}
	nodes := map[string]bool{}
	if c != nil {
		for _, n := range c.Nodes {
			nodes[n.Name] = true
		}
	}
	var errs []error
	bad := func(i int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("schedule step %d (%s): %s", i+1, s[i], fmt.Sprintf(format, args...)))
	}
	bound := map[string]int{}
	scaled := false // an earlier add-node: node names beyond the cluster's may exist by then
	for i, st := range s {
		if st.At < 0 {
			bad(i, "at must not be negative")
		}
		if i > 0 && st.At < s[i-1].At {
			bad(i, "steps must be in time order, but %s comes after %s", st.At, s[i-1].At)
		}
		if !reg.Has(st.Action) {
			bad(i, "unknown fault action %q (known: %s)", st.Action, strings.Join(reg.names(), ", "))
		} else {
			_, perrs := reg.CheckParams(st)
			for _, e := range perrs {
				bad(i, "%v", e)
			}
		}
		if isClientAction(reg, st.Action) {
			if st.Node != "" && st.Node != ClientNode {
				bad(i, "%s acts on the load's client, not on a cluster node: leave node out (or write node: %s), not %q", st.Action, ClientNode, st.Node)
			}
			if st.As != "" {
				bad(i, "%s acts on no node, so there is nothing to bind with as %q", st.Action, st.As)
			}
			continue
		}
		if isNodelessAction(reg, st.Action) {
			if st.Node != "" {
				bad(i, "%s acts on no existing node (it starts new ones): leave node out, not %q", st.Action, st.Node)
			}
			if st.As != "" {
				bad(i, "%s: as cannot bind nodes that do not exist yet; later steps name the new nodes (n4, n5 ...) directly", st.Action)
			}
			scaled = true
			continue
		}
		if f, err := reg.New(st.Action); err == nil {
			if af, ok := f.(argFault); ok { // network faults: their own argument syntax
				if err := af.checkArg(st.Node); err != nil {
					bad(i, "%v", err)
				}
				continue
			}
		}
		if sel, err := parseSelector(st.Node); err != nil {
			bad(i, "%v", err)
		} else if sel.kind == selRandomOf {
			parts, _ := randomOfParts(st.Node)
			for _, p := range parts {
				if _, isBound := bound[p]; c != nil && !isKeyword(p) && !nodes[p] && !isBound && !scaled {
					bad(i, "node %q in %s is neither a node of cluster %s (%s) nor a name bound earlier with as", p, st.Node, c.Name, strings.Join(c.NodeNames(), ", "))
				}
			}
		} else if sel.kind == selName {
			if _, ok := bound[st.Node]; ok {
				// a reference to an earlier binding
			} else if j, ok := binds[st.Node]; ok && j == i {
				bad(i, "node %q is the name this step binds with as; it can be used only by later steps", st.Node)
			} else if ok {
				bad(i, "node %q is bound by step %d, which comes later; a name can be used only after the step that binds it", st.Node, j+1)
			} else if c != nil && !nodes[st.Node] && !scaled {
				bad(i, "node %q is neither a node of cluster %s (%s) nor a name bound earlier with as", st.Node, c.Name, strings.Join(c.NodeNames(), ", "))
			}
		}
		if st.As != "" {
			switch {
			case !validName(st.As):
				bad(i, "as %q must be a plain name (letters, digits, '.', '_', '-')", st.As)
			case isKeyword(st.As):
				bad(i, "as %q is a selector keyword; choose another name", st.As)
			case nodes[st.As]:
				bad(i, "as %q is also a node name; choose another name", st.As)
			default:
				if j, ok := bound[st.As]; ok {
					bad(i, "as %q is already bound by step %d", st.As, j+1)
				} else {
					bound[st.As] = i
				}
			}
		}
	}
	return errors.Join(errs...)
}

// label returns the events label of step i.
func (s Schedule) label(i int, r *Resolver) string {
	st := s[i]
	switch {
	case st.Label != "":
		return st.Label
	case st.As != "":
		return st.As
	}
	if _, ok := r.Bound(st.Node); ok {
		return st.Node
	}
	return fmt.Sprintf("step %d", i+1)
}

// cleanupTimeout bounds the Cleanup calls at the end of a run.
const cleanupTimeout = 30 * time.Second

// lateNote is how late a step may fire before Run notes it in the events.
const lateNote = time.Second

// Run executes sched: step i fires at start+sched[i].At (or right after the
// previous step if that took longer). Before a fault that breaks something it
// waits, at most HealthTimeout, until the cluster is healthy; before a repair
// (start, resume) or a Concurrent step it does not. It then resolves the step's selector
// (refreshing roles first for role selectors, random and any:N), binds "as",
// and runs Prepare, Inject and WaitEffective (each bounded by HealthTimeout),
// saving the state after Inject and at the end of the step.
//
// Events: ClusterHealthy after the health wait; a Note when the step fires
// more than a second late; FaultInject (or FaultRestore
// for repairs; node: resolved names, detail: action and selector, fault: the
// step's label) right before Inject; FaultInjected (FaultRestored) once
// WaitEffective succeeded; FaultError when anything failed. A failed step does
// not stop the schedule; Run returns every step's error joined. Cleanup runs
// for every prepared fault when Run returns. Run validates sched against reg
// and the cluster first and runs nothing if that fails. A nil r is a
// NewResolver(nil). A client fault (crash-client) resolves no selector and
// acts on t.Load; its events carry no node.
func Run(ctx context.Context, start time.Time, sched Schedule, t *Cluster, reg *Registry, r *Resolver) error {
	if r == nil {
		r = NewResolver(nil)
	}
	if err := sched.ValidateFor(reg, t.Snapshot()); err != nil {
		return err
	}
	type prepared struct {
		f     Fault
		k     kind.Kind
		nodes []string
	}
	var done []prepared
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		for i := len(done) - 1; i >= 0; i-- {
			if err := done[i].f.Cleanup(cctx, t, done[i].nodes); err != nil {
				t.emitFault(event.FaultError, done[i].k, joinNodes(done[i].nodes), fmt.Sprintf("cleanup of %s: %v", done[i].f.Name(), err), "")
			}
		}
	}()
	var errs []error
	for i, st := range sched {
		at := start.Add(st.At)
		if err := sleepUntil(ctx, at); err != nil {
			errs = append(errs, fmt.Errorf("schedule stopped before step %d (%s): %w", i+1, st, err))
			break
		}
		label := sched.label(i, r)
		detail := st.eventDetail()
		k := reg.kindOf(st.Action)
		f, err := reg.New(st.Action)
		if err != nil { // validated above; only a registry changed meanwhile gets here
			errs = append(errs, err)
			continue
		}
		stepErr := func(err error) {
			errs = append(errs, fmt.Errorf("schedule step %d (%s): %w", i+1, st, err))
		}
		if err := configure(reg, f, &st, label); err != nil {
			t.emitFault(event.FaultError, k, "", fmt.Sprintf("%s: %v", detail, err), label)
			stepErr(err)
			continue
		}
		detail = st.eventDetail() // with the parameters as configured
		if !IsRepair(f) && !st.Concurrent {
			if err := t.WaitHealthy(ctx, fmt.Sprintf("before %s", detail)); err != nil {
				if ctx.Err() == nil {
					t.emitFault(event.FaultError, k, "", fmt.Sprintf("%s: %v; injecting anyway", detail, err), label)
					stepErr(err)
				}
			} else {
				t.emit(event.ClusterHealthy, "", "before "+detail, label)
			}
		}
		if ctx.Err() != nil {
			errs = append(errs, fmt.Errorf("schedule stopped at step %d (%s): %w", i+1, st, ctx.Err()))
			break
		}
		var nodes []string // a client fault and add-node act on no node
		if !IsClientFault(f) && !isNodeless(f) {
			nodes, err = resolveFault(ctx, t, r, f, st.Node)
		}
		if err != nil {
			t.emitFault(event.FaultError, k, "", fmt.Sprintf("%s: %v", detail, err), label)
			stepErr(err)
			continue
		}
		if st.As != "" {
			if err := r.Bind(st.As, nodes); err != nil {
				t.emitFault(event.FaultError, k, joinNodes(nodes), fmt.Sprintf("%s: %v", detail, err), label)
				stepErr(err)
				continue
			}
		}
		if late := time.Since(at); late > lateNote {
			t.emit(event.Note, joinNodes(nodes), fmt.Sprintf("%s fires %s after its scheduled time %s", detail, late.Round(time.Millisecond), st.At), label)
		}
		prepErr, err := executeAt(ctx, at, t, f, k, nodes, detail, label)
		if !prepErr {
			done = append(done, prepared{f, k, nodes})
		}
		if err != nil {
			stepErr(err)
		}
	}
	return errors.Join(errs...)
}

// sleepUntil waits until at or until ctx ends.
func sleepUntil(ctx context.Context, at time.Time) error {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// resolveNow resolves selector against the cluster, refreshed first when the
// selector depends on roles or on which nodes answer (role selectors, random,
// any:N); node names, bound names, all and group:G need no refresh.
func resolveNow(ctx context.Context, t *Cluster, r *Resolver, selector string) ([]string, error) {
	if sel, err := parseSelector(selector); err == nil && (sel.kind == selName || sel.kind == selAll || sel.kind == selGroup) {
		return r.Resolve(t.Snapshot(), selector)
	}
	rctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	c, err := t.Refresh(rctx)
	if err != nil {
		// Resolve against what is known; role selectors may be stale.
		t.emit(event.Note, "", fmt.Sprintf("resolving %q with the last known roles: %v", selector, err), "")
		c = t.Snapshot()
	}
	return r.Resolve(c, selector)
}

// configure checks the parameters of step st against its kind, sets
// st.Values and hands the step to f if f takes parameters (StepConfigurer).
func configure(reg *Registry, f Fault, st *Step, label string) error {
	vals, perrs := reg.CheckParams(*st)
	if len(perrs) > 0 {
		return paramErrs(perrs)
	}
	if vals != nil { // a kind without a description takes the fields as they are
		st.Values = vals
		st.setFields(vals)
	}
	if c, ok := f.(StepConfigurer); ok {
		return c.ConfigureStep(*st, label)
	}
	return nil
}

// paramErrs joins parameter errors into one.
func paramErrs(perrs []*kind.ParamError) error {
	errs := make([]error, len(perrs))
	for i, e := range perrs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// execute is executeAt scheduled now.
func execute(ctx context.Context, t *Cluster, f Fault, k kind.Kind, nodes []string, detail, label string) (prepFailed bool, err error) {
	return executeAt(ctx, time.Now(), t, f, k, nodes, detail, label)
}

// executeAt runs one fault of kind k on nodes, scheduled at: Prepare, the
// start event, Inject, save, WaitEffective, save, the done or error event
// (each with k's action and family; the done event with the delay from at
// to Inject's return and the inventory hosts it acted on over SSH). Each
// phase is bounded by HealthTimeout. prepFailed reports that Prepare failed
// (nothing to clean up).
func executeAt(ctx context.Context, at time.Time, t *Cluster, f Fault, k kind.Kind, nodes []string, detail, label string) (prepFailed bool, err error) {
	startKind, doneKind := event.FaultInject, event.FaultInjected
	if IsRepair(f) {
		startKind, doneKind = event.FaultRestore, event.FaultRestored
	}
	node, on := "", ""
	if len(nodes) > 0 { // a client fault acts on no node
		node = joinNodes(nodes)
		on = " on " + node
	}
	timeout := t.healthTimeout()
	if pt, ok := f.(phaseTimeouter); ok {
		timeout = pt.phaseTimeout(timeout)
	}
	phase := func(fn func(context.Context, *Cluster, []string) error) error {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return fn(pctx, t, nodes)
	}
	fail := func(err error) error {
		t.emitFault(event.FaultError, k, node, fmt.Sprintf("%s: %v", detail, err), label)
		return fmt.Errorf("%s%s: %w", detail, on, err)
	}
	if err := refuseOnHosts(t, f); err != nil {
		return true, fail(err)
	}
	if err := phase(f.Prepare); err != nil {
		return true, fail(fmt.Errorf("prepare: %w", err))
	}
	t.emitFault(startKind, k, node, detail, label)
	ierr := phase(f.Inject)
	applied := time.Since(at)
	serr := t.Persist()
	werr := phase(f.WaitEffective)
	if err := t.Persist(); err != nil && serr == nil {
		serr = err
	}
	if err := errors.Join(ierr, werr); err != nil {
		return false, errors.Join(fail(err), serr)
	}
	t.Events.Add(event.Event{Kind: doneKind, Node: node, Detail: detail, Fault: label, Action: k.Name, Family: string(k.Family),
		DelayNS: int64(applied), Hosts: hostsOf(t.Snapshot(), nodes)})
	if serr != nil {
		t.emit(event.Note, node, serr.Error(), label)
	}
	return false, serr
}

// RestoreAll brings back every node that is still paused (resume) or dead
// (start), so checks can run after a fault schedule, then waits for the
// cluster to be healthy. It writes FaultRestore / FaultRestored events with
// the label "restore-all" and a ClusterHealthy event at the end.
func RestoreAll(ctx context.Context, t *Cluster) error {
	rctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	c, _ := t.Refresh(rctx)
	cancel()
	var toResume, toStart []string
	for _, n := range c.Nodes {
		p := c.ProcsOf(&n)
		switch {
		case nodePaused(ctx, p, n):
			toResume = append(toResume, n.Name)
		case n.PID <= 0 || !p.Alive(ctx, n.PID):
			toStart = append(toStart, n.Name)
		}
	}
	sortNames(toResume)
	sortNames(toStart)
	const label = "restore-all"
	var errs []error
	errs = append(errs, healNetwork(ctx, t, label), healDisks(ctx, t, label), resetAllClocks(ctx, t, label), restoreAllSlow(ctx, t, label))
	if len(toResume) > 0 {
		_, err := execute(ctx, t, &resumeFault{}, builtinKind(ActionResume), toResume, "resume "+joinNodes(toResume), label)
		errs = append(errs, err)
	}
	if len(toStart) > 0 {
		_, err := execute(ctx, t, &startFault{}, builtinKind(ActionStart), toStart, "start "+joinNodes(toStart), label)
		errs = append(errs, err)
	}
	if err := t.WaitHealthy(ctx, "after restoring every node"); err != nil {
		t.emit(event.FaultError, "", err.Error(), label)
		errs = append(errs, err)
	} else {
		t.emit(event.ClusterHealthy, "", "after restore-all", label)
	}
	return errors.Join(errs...)
}

// ErrClientFaultOutsideLoad is the error for a client fault (crash-client)
// asked for outside a scenario: it acts on the client library instance of
// the load running inside a faultbench process, which `faultbench fault`,
// a process of its own, cannot reach.
func ErrClientFaultOutsideLoad(action Action) error {
	return fmt.Errorf("%s acts on the client of a load running inside a faultbench process; `faultbench fault` runs in a process of its own and cannot reach it: put it in a scenario's schedule instead, e.g. `- {at: 30s, fault: %s, hold: 1s}`", action, action)
}

// Apply runs one fault now, for `faultbench fault ACTION NODE`: it refreshes
// the cluster, resolves selector (random and any:N draw from a time-seeded
// source), runs Prepare, Inject and WaitEffective, writes the same events as
// Run and saves the state. It does not wait for health first and does not
// call Cleanup (the fault stays in place). It returns the resolved nodes.
func Apply(ctx context.Context, t *Cluster, reg *Registry, action Action, selector string) ([]string, error) {
	return ApplyStep(ctx, t, reg, Step{Action: action, Node: selector})
}

// CommandStep is the step `faultbench fault ACTION NODE --param
// NAME=VALUE ...` asks for, its parameters checked as a schedule's are
// (CheckParams); the error names every bad one.
func (r *Registry) CommandStep(action Action, selector string, params []string) (Step, error) {
	st := Step{Action: action, Node: selector}
	var errs []error
	for _, p := range params {
		name, value, ok := strings.Cut(p, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			errs = append(errs, fmt.Errorf("--param %q: want NAME=VALUE", p))
			continue
		}
		if st.Params == nil {
			st.Params = map[string]string{}
		}
		st.Params[name] = value
	}
	if len(errs) == 0 {
		if _, perrs := r.CheckParams(st); len(perrs) > 0 {
			errs = append(errs, paramErrs(perrs))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Step{}, fmt.Errorf("%s: %w", action, err)
	}
	return st, nil
}

// ApplyStep is Apply with the step's parameters (Params, or the fields of
// the built-in kinds' parameters), checked as a schedule's are.
func ApplyStep(ctx context.Context, t *Cluster, reg *Registry, st Step) ([]string, error) {
	action, selector := st.Action, st.Node
	f, err := reg.New(action)
	if err != nil {
		return nil, err
	}
	if IsClientFault(f) {
		return nil, ErrClientFaultOutsideLoad(action)
	}
	if _, perrs := reg.CheckParams(st); len(perrs) > 0 {
		return nil, fmt.Errorf("%s: %w", action, paramErrs(perrs))
	}
	var nodes []string
	if !isNodeless(f) {
		nodes, err = resolveFault(ctx, t, newTimeResolver(), f, selector)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", action, selector, err)
		}
		st.Node = joinNodes(nodes) // what it acts on, in the fault's own messages
	}
	if err := configure(reg, f, &st, ""); err != nil {
		return nil, fmt.Errorf("%s: %w", action, err)
	}
	h, holds := f.(applyHolder)
	if holds {
		if err := h.checkApply(); err != nil {
			return nil, err
		}
	}
	_, err = execute(ctx, t, f, reg.kindOf(action), nodes, fmt.Sprintf("%s %s%s", action, selector, paramsText(st.Params)), "")
	if holds && err == nil {
		err = h.holdApply(ctx)
	}
	return nodes, err
}

// hostsOf names the inventory hosts nodes of c run on, in node order,
// each once ("" when every node is on this machine).
func hostsOf(c *launcher.Cluster, nodes []string) string {
	var out []string
	for _, name := range nodes {
		if n, err := c.Node(name); err == nil && n.Host != "" && !slices.Contains(out, n.Host) {
			out = append(out, n.Host)
		}
	}
	return strings.Join(out, ",")
}
