package fault

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/fault/kind"
)

// ActionCrashClient crashes the client library instance the load runs on
// (ClientCrasher) and continues the load on a replacement instance.
const ActionCrashClient Action = "crash-client"

// ClientNode is the only node a client fault's step may name (or it names
// none): the load's client, which is not a node of the cluster.
const ClientNode = "client"

// MaxHold bounds a crash-client step's hold (its parameter's declaration
// is in package kind).
const MaxHold = kind.MaxHold

// ClientCrasher is what crash-client needs of the load's client: crash the
// client instance the load runs on (it stops heartbeating and abandons its
// pending work; the load continues on a replacement instance) and wait
// until the database has recovered the crashed instance. The orchestrator
// adapts the driver's ability to it; see docs/faults.md.
type ClientCrasher interface {
	CrashClient(ctx context.Context, hold time.Duration) (CrashedClient, error)
	WaitClientRecovered(ctx context.Context, c CrashedClient) (ClientRecovery, error)
}

// CrashedClient identifies the client instance a crash ended.
type CrashedClient struct {
	Name string    // the crashed instance's name at the database
	ID   string    // its registration id at the database
	At   time.Time // when it stopped (heartbeats ended, flushes abandoned)
	// Unflushed counts the write-sets it had committed and not flushed when
	// it stopped (with a hold: every commit of the hold).
	Unflushed int64
	// Replacement names the new instance the load continues on.
	Replacement string
}

// ClientRecovery is the database's recovery of a crashed client.
type ClientRecovery struct {
	Detected time.Time // the database declared the client failed
	Done     time.Time // its recovery finished
	Replayed int       // write-sets the recovery replayed
	Detail   string    // database-specific facts, e.g. the threshold replay started after
}

// Kinds of the events a crash-client fault writes (besides fault-inject,
// fault-injected and fault-error); node is empty, fault is the step's label.
const (
	// EventClientCrashed: the client instance stopped; detail names it, the
	// write-sets it left unflushed and the replacement.
	EventClientCrashed = "client-crashed"
	// EventClientFailed: the database declared the crashed client failed
	// (time: the database's detection time).
	EventClientFailed = "client-failed"
	// EventClientRecovered: the database finished recovering the crashed
	// client (time: when it finished); detail has the write-sets replayed.
	EventClientRecovered = "client-recovered"
)

// ClientFault is implemented by faults that act on the load's client
// rather than on cluster nodes (crash-client). Their steps name no node
// (or ClientNode), bind no "as" name, need Cluster.Load, and cannot run from
// `faultbench fault`, which has no load.
type ClientFault interface {
	// ActsOnClient reports whether the fault acts on the load's client.
	ActsOnClient() bool
}

// IsClientFault reports whether f acts on the load's client (see ClientFault).
func IsClientFault(f Fault) bool {
	c, ok := f.(ClientFault)
	return ok && c.ActsOnClient()
}

// StepConfigurer is implemented by faults that take parameters from their
// schedule step (crash-client: Hold). The executor calls ConfigureStep on
// the fresh fault before Prepare, with the step's events label.
type StepConfigurer interface {
	// ConfigureStep takes the fault's parameters from st; an error means
	// the step cannot run (its FaultError event carries it).
	ConfigureStep(st Step, label string) error
}

// isClientAction reports whether reg's action acts on the load's client.
func isClientAction(reg *Registry, a Action) bool {
	if !reg.Has(a) {
		return false
	}
	f, err := reg.New(a)
	return err == nil && IsClientFault(f)
}

// ClientSteps returns the indices of the steps whose action acts on the
// load's client.
func (s Schedule) ClientSteps(reg *Registry) []int {
	var out []int
	for i, st := range s {
		if isClientAction(reg, st.Action) {
			out = append(out, i)
		}
	}
	return out
}

// crashClientFault is crash-client.
type crashClientFault struct {
	hold  time.Duration
	label string

	mu      sync.Mutex
	crashed *CrashedClient
	stop    context.CancelFunc // ends the recovery watch
	done    chan struct{}      // closed when the recovery watch returned
}

func (f *crashClientFault) Name() Action       { return ActionCrashClient }
func (f *crashClientFault) ActsOnClient() bool { return true }

// ConfigureStep takes the hold, checked against the kind's declaration.
func (f *crashClientFault) ConfigureStep(st Step, label string) error {
	f.hold, f.label = st.Values.Duration(paramHold), label
	return nil
}

func crasherOf(t *Cluster) (ClientCrasher, error) {
	if t.Load == nil {
		return nil, fmt.Errorf("%s acts on the load's client, and no load runs here (it works in a scenario's schedule only)", ActionCrashClient)
	}
	cc, ok := t.Load.(ClientCrasher)
	if !ok {
		return nil, fmt.Errorf("%s: the load's driver (%T) cannot crash its client", ActionCrashClient, t.Load)
	}
	return cc, nil
}

func (f *crashClientFault) Prepare(_ context.Context, t *Cluster, _ []string) error {
	_, err := crasherOf(t)
	return err
}

// Inject crashes the client (after holding flushes back for f.hold) and
// starts watching for its recovery, which Cleanup waits for.
func (f *crashClientFault) Inject(ctx context.Context, t *Cluster, _ []string) error {
	cc, err := crasherOf(t)
	if err != nil {
		return err
	}
	// a hold must not eat the phase's deadline
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.healthTimeout()+f.hold)
	defer cancel()
	c, err := cc.CrashClient(ictx, f.hold)
	if c.Name == "" {
		return err
	}
	t.emit(EventClientCrashed, "", fmt.Sprintf("client %s (id %s) crashed with %d committed write-sets not flushed; the load continues on %s",
		c.Name, c.ID, c.Unflushed, c.Replacement), f.label)
	wctx, stop := context.WithTimeout(context.WithoutCancel(ctx), t.healthTimeout())
	done := make(chan struct{})
	f.mu.Lock()
	f.crashed, f.stop, f.done = &c, stop, done
	f.mu.Unlock()
	go func() {
		defer close(done)
		defer stop()
		r, werr := cc.WaitClientRecovered(wctx, c)
		if werr != nil {
			t.emitFault(event.FaultError, builtinKind(ActionCrashClient), "", fmt.Sprintf("%s: %v", ActionCrashClient, werr), f.label)
			return
		}
		t.Events.Add(eventAt(r.Detected, EventClientFailed, fmt.Sprintf("client %s (id %s) declared failed after missed heartbeats, %s after the crash",
			c.Name, c.ID, r.Detected.Sub(c.At).Round(time.Millisecond)), f.label))
		t.Events.Add(eventAt(r.Done, EventClientRecovered, fmt.Sprintf("client %s: replayed %d %s in %s (%s after the crash)",
			c.Name, r.Replayed, r.Detail, r.Done.Sub(r.Detected).Round(time.Millisecond), r.Done.Sub(c.At).Round(time.Millisecond)), f.label))
	}()
	return err
}

// WaitEffective checks that the client crashed; the replacement serves
// already (CrashClient registered it before the crash).
func (f *crashClientFault) WaitEffective(context.Context, *Cluster, []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed == nil {
		return errors.New("the client did not crash")
	}
	return nil
}

// Restore does nothing: the replacement client is the restore, and Inject
// started it.
func (f *crashClientFault) Restore(context.Context, *Cluster, []string) error { return nil }

func (f *crashClientFault) WaitRestored(context.Context, *Cluster, []string) error { return nil }

// Cleanup waits, until ctx ends, for the recovery watch to write its events.
func (f *crashClientFault) Cleanup(ctx context.Context, _ *Cluster, _ []string) error {
	f.mu.Lock()
	done, stop := f.done, f.stop
	f.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		stop()
		<-done
		return fmt.Errorf("waiting for the crashed client's recovery: %w", ctx.Err())
	}
}

// eventAt is an event that happened at wall time at (not now).
func eventAt(at time.Time, kind, detail, label string) event.Event {
	return event.Event{Wall: at, Kind: kind, Detail: detail, Fault: label}
}
