package clusterctl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/launcher"
)

// FaultCluster returns the fault.Cluster that faults act on for the
// recorded cluster c: the launcher of c's kind, the manager's Env (which
// reaches the inventory hosts of a cluster on hosts) and state store (pids
// are saved as nodes restart), events to events (nil discards them), and
// every wait for health bounded by healthTimeout (0: the kind's UpTimeout,
// else the fault package's default). It is the one place a fault.Cluster
// is built: `faultbench fault`, a scenario's schedule and the Under
// Pressure Benchmark's failures all take theirs from here.
func (m *Manager) FaultCluster(c *launcher.Cluster, events *event.Log, healthTimeout time.Duration) (*fault.Cluster, error) {
	t, err := m.Targets.Get(c.Kind)
	if err != nil {
		return nil, err
	}
	if t.Launcher == nil {
		return nil, fmt.Errorf("no launcher for %s", c.Kind)
	}
	if healthTimeout <= 0 {
		healthTimeout = t.UpTimeout
	}
	env, err := diskEnv(m.Env, c.Options) // a node started again starts on its layer
	if err != nil {
		return nil, err
	}
	env = clockEnv(env, c.Options) // and under libfaketime
	return &fault.Cluster{Launcher: t.Launcher, Env: env, Cluster: c, Events: events, Save: m.Save, HealthTimeout: healthTimeout}, nil
}

// ErrNoneRunning is Choose's error when no cluster is recorded as running.
var ErrNoneRunning = errors.New("no cluster is running: start one with `faultbench cluster up etcd`")

// AmbiguousError is Choose's error when several clusters run and none was
// named: the caller must choose.
type AmbiguousError struct{ Names []string }

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("several clusters are recorded (%s): choose one with --cluster", strings.Join(e.Names, ", "))
}

// Choose returns the recorded cluster name, or when name is "" the only
// running one (Running); ErrNoneRunning or an *AmbiguousError otherwise.
func (m *Manager) Choose(name string) (*launcher.Cluster, error) {
	if name == "" {
		switch running := m.Running(); len(running) {
		case 0:
			return nil, ErrNoneRunning
		case 1:
			name = running[0]
		default:
			return nil, &AmbiguousError{Names: running}
		}
	}
	return m.Store.Load(name)
}

// WholeNodeSelector turns a fault's node selector into the one that acts
// on the whole node (`fault kill n2 --whole-node`), through the kind's
// targets.Target.WholeNode: on postgres-ha the nodes nK (a postgres server
// alone) become nK-keeper (pg_autoctl and its postgres, which die
// together: docs/targets-postgres-ha.md). Role selectors (primary, replica,
// random ...) are resolved first, against roles refreshed now. On a kind
// without WholeNode a node is one process, the whole node already, and
// the selector is returned as it is.
func (m *Manager) WholeNodeSelector(ctx context.Context, c *launcher.Cluster, sel string) (string, error) {
	t, err := m.Targets.Get(c.Kind)
	if err != nil {
		return "", err
	}
	if t.WholeNode == nil {
		return sel, nil
	}
	if t.Launcher == nil {
		return "", fmt.Errorf("no launcher for %s", c.Kind)
	}
	if err := t.Launcher.Refresh(ctx, c); err != nil {
		return "", fmt.Errorf("--whole-node: finding the nodes of %q: %w", sel, err)
	}
	nodes, err := fault.NewResolver(nil).Resolve(c, sel)
	if err != nil {
		return "", fmt.Errorf("--whole-node: %w", err)
	}
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, t.WholeNode(c, n))
	}
	return strings.Join(out, ","), nil
}
