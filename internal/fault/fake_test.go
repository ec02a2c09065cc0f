package fault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/launcher"
)

// fakeLauncher is a launcher.Launcher for logic tests: Refresh copies the
// roles and down flags the test sets; WaitHealthy returns healthErr.
type fakeLauncher struct {
	mu        sync.Mutex
	roles     map[string]string
	down      map[string]bool
	healthErr error
	healthN   int // WaitHealthy calls
	refreshN  int
}

func (f *fakeLauncher) Kind() string { return "fake" }

func (f *fakeLauncher) Up(context.Context, *launcher.Env, launcher.Spec) (*launcher.Cluster, error) {
	return nil, errors.New("fake launcher: Up not supported")
}

func (f *fakeLauncher) StartNode(_ context.Context, _ *launcher.Env, c *launcher.Cluster, name string) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	n.PID = os.Getpid()
	n.Down = false
	f.setDown(name, false)
	return nil
}

func (f *fakeLauncher) Refresh(_ context.Context, c *launcher.Cluster) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refreshN++
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if r, ok := f.roles[n.Name]; ok {
			n.Role = r
		}
		n.Down = f.down[n.Name]
	}
	return nil
}

func (f *fakeLauncher) WaitHealthy(context.Context, *launcher.Cluster) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.healthN++
	return f.healthErr
}

func (f *fakeLauncher) setRole(name, role string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.roles[name] = role
}

func (f *fakeLauncher) setDown(name string, down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[name] = down
}

func (f *fakeLauncher) healthCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.healthN
}

// fakeTarget returns a Cluster over a fake cluster whose nodes are "running"
// as this test process (a live pid that is neither dead nor stopped).
// roles maps node names to roles; a node named in down is down (pid 0).
func fakeTarget(t *testing.T, roles map[string]string, down ...string) (*Cluster, *fakeLauncher) {
	t.Helper()
	fl := &fakeLauncher{roles: map[string]string{}, down: map[string]bool{}}
	c := &launcher.Cluster{Kind: "fake", Name: "fake-test"}
	var names []string
	for name := range roles {
		names = append(names, name)
	}
	sortNames(names)
	for _, name := range names {
		fl.roles[name] = roles[name]
		n := launcher.Node{Name: name, PID: os.Getpid(), Role: roles[name]}
		for _, d := range down {
			if d == name {
				n.PID, n.Down = 0, true
				fl.down[name] = true
			}
		}
		c.Nodes = append(c.Nodes, n)
	}
	return &Cluster{
		Launcher:      fl,
		Cluster:       c,
		Events:        event.NewMemory(time.Now()),
		HealthTimeout: 5 * time.Second,
	}, fl
}

// recLog records fault calls in order.
type recLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *recLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, s)
}

func (l *recLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// recFault records its lifecycle calls and, for kill and start, marks the
// nodes down or up in the fake cluster and launcher.
type recFault struct {
	name   Action
	repair bool
	log    *recLog
	fl     *fakeLauncher
	fail   error // returned by Inject
}

func (f *recFault) Name() Action  { return f.name }
func (f *recFault) Repairs() bool { return f.repair }

func (f *recFault) Prepare(_ context.Context, _ *Cluster, nodes []string) error {
	f.log.add(fmt.Sprintf("prepare %s %s", f.name, strings.Join(nodes, ",")))
	return nil
}

func (f *recFault) Inject(_ context.Context, t *Cluster, nodes []string) error {
	f.log.add(fmt.Sprintf("inject %s %s", f.name, strings.Join(nodes, ",")))
	if f.fail != nil {
		return f.fail
	}
	for _, name := range nodes {
		switch f.name {
		case ActionKill:
			f.fl.setDown(name, true)
			_ = t.UpdateNode(name, func(n *launcher.Node) { n.PID, n.Down = 0, true })
		case ActionStart:
			f.fl.setDown(name, false)
			_ = t.UpdateNode(name, func(n *launcher.Node) { n.PID, n.Down = os.Getpid(), false })
		}
	}
	return nil
}

func (f *recFault) WaitEffective(_ context.Context, _ *Cluster, nodes []string) error {
	f.log.add(fmt.Sprintf("effective %s %s", f.name, strings.Join(nodes, ",")))
	return nil
}

func (f *recFault) Restore(context.Context, *Cluster, []string) error      { return nil }
func (f *recFault) WaitRestored(context.Context, *Cluster, []string) error { return nil }

func (f *recFault) Cleanup(_ context.Context, _ *Cluster, nodes []string) error {
	f.log.add(fmt.Sprintf("cleanup %s %s", f.name, strings.Join(nodes, ",")))
	return nil
}

// recRegistry returns a registry whose kill, start, pause and resume are
// recording fakes; "broken" always fails to inject.
func recRegistry(fl *fakeLauncher, log *recLog) *Registry {
	reg := NewRegistry()
	for _, a := range []Action{ActionKill, ActionStop, ActionPause, ActionRestart} {
		reg.Register(a, func() Fault { return &recFault{name: a, log: log, fl: fl} })
	}
	for _, a := range []Action{ActionStart, ActionResume} {
		reg.Register(a, func() Fault { return &recFault{name: a, repair: true, log: log, fl: fl} })
	}
	reg.Register("broken", func() Fault {
		return &recFault{name: "broken", log: log, fl: fl, fail: errors.New("broken on purpose")}
	})
	return reg
}

// kinds returns "kind node detail fault" for every event of the given kinds
// (all kinds when none given).
func kinds(l *event.Log, only ...string) []string {
	var out []string
	for _, e := range l.Events() {
		keep := len(only) == 0
		for _, k := range only {
			keep = keep || e.Kind == k
		}
		if keep {
			out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s|%s|%s", e.Kind, e.Node, e.Detail, e.Fault)))
		}
	}
	return out
}

// waitEvent waits (generously) until the log has an event matching ok.
func waitEvent(t *testing.T, l *event.Log, what string, ok func(event.Event) bool) event.Event {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range l.Events() {
			if ok(e) {
				return e
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no event %s within 60s; events:\n%s", what, strings.Join(kinds(l), "\n"))
	return event.Event{}
}

// running reports whether n's local process exists and is not paused.
func running(n launcher.Node) bool {
	return nodeRunning(context.Background(), launcher.LocalProcs{}, n)
}
