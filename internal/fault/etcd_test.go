package fault

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/launcher/etcd"
)

// countingLauncher counts Refresh calls of the launcher it wraps.
type countingLauncher struct {
	launcher.Launcher
	refreshN atomic.Int64
}

func (l *countingLauncher) Refresh(ctx context.Context, c *launcher.Cluster) error {
	l.refreshN.Add(1)
	return l.Launcher.Refresh(ctx, c)
}

// TestEtcdLeaderKillThroughRun starts a real 3-member etcd cluster (members
// run from this test binary, see TestMain), kills the leader through Run
// with a schedule while Watch runs, and checks that the watcher reports the
// new leader and that the victim is started again.
func TestEtcdLeaderKillThroughRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real etcd processes")
	}
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	uctx, ucancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer ucancel()
	c, err := etcd.Launcher{}.Up(uctx, env, launcher.Spec{Nodes: 3, Dir: filepath.Join(t.TempDir(), "etcd")})
	if err != nil {
		t.Fatalf("etcd Up: %v", err)
	}
	cl := &countingLauncher{Launcher: etcd.Launcher{}}
	tg := &Cluster{Launcher: cl, Env: env, Cluster: c, Events: event.NewMemory(time.Now()), HealthTimeout: 60 * time.Second}
	t.Cleanup(func() {
		if err := launcher.Down(context.Background(), tg.Snapshot(), 5*time.Second); err != nil {
			t.Errorf("Down: %v", err)
		}
	})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); Watch(ctx, tg, 100*time.Millisecond) }()
	defer func() { cancel(); wg.Wait() }()
	waitFor(t, "the watcher's baseline", func() bool { return cl.refreshN.Load() >= 2 })

	leaders := tg.Snapshot().WithRole(launcher.RoleLeader)
	if len(leaders) != 1 {
		t.Fatalf("leaders before the fault: %v", leaders)
	}
	old := leaders[0]
	oldPID := mustNode(t, tg, old).PID
	sched := Schedule{
		{At: 0, Action: ActionKill, Node: "leader", As: "victim"},
		{At: 3 * time.Second, Action: ActionStart, Node: "victim"},
	}
	if err := Run(ctx, time.Now(), sched, tg, NewRegistry(), NewResolver(nil)); err != nil {
		t.Fatal(err)
	}
	inj := waitEvent(t, tg.Events, "fault-inject", func(e event.Event) bool { return e.Kind == event.FaultInject })
	if inj.Node != old || inj.Detail != "kill leader" || inj.Fault != "victim" {
		t.Errorf("fault-inject event %+v, want node %s", inj, old)
	}
	lc := waitEvent(t, tg.Events, "leader-change from "+old, func(e event.Event) bool {
		return e.Kind == event.LeaderChange && strings.HasPrefix(e.Detail, old+" -> ")
	})
	if lc.Node == old || lc.Node == "" {
		t.Errorf("leader-change %+v", lc)
	}
	waitEvent(t, tg.Events, "node-down "+old, func(e event.Event) bool { return e.Kind == event.NodeDown && e.Node == old })
	restored := waitEvent(t, tg.Events, "fault-restored", func(e event.Event) bool { return e.Kind == event.FaultRestored })
	if restored.Node != old || restored.Fault != "victim" {
		t.Errorf("fault-restored event %+v, want node %s", restored, old)
	}
	if n := mustNode(t, tg, old); n.PID == oldPID || !running(n) {
		t.Errorf("victim %s after start: %+v", old, n)
	}
	waitEvent(t, tg.Events, "node-up "+old, func(e event.Event) bool { return e.Kind == event.NodeUp && e.Node == old })

	// Pause the (new) leader: the watcher must still see the next election
	// although the paused member makes every Refresh wait for its timeout.
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	if _, err := tg.Refresh(rctx); err != nil {
		t.Fatal(err)
	}
	rcancel()
	paused, err := Apply(ctx, tg, NewRegistry(), ActionPause, "leader")
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, tg.Events, "leader-change from paused "+paused[0], func(e event.Event) bool {
		return e.Kind == event.LeaderChange && strings.HasPrefix(e.Detail, paused[0]+" -> ")
	})
	waitEvent(t, tg.Events, "node-down "+paused[0]+" (paused)", func(e event.Event) bool {
		return e.Kind == event.NodeDown && e.Node == paused[0] && strings.Contains(e.Detail, "paused")
	})
	if _, err := Apply(ctx, tg, NewRegistry(), ActionResume, paused[0]); err != nil {
		t.Fatal(err)
	}

	// With a follower paused, the health wait before the next kill must not
	// wait for the paused member (a fault-error would say it timed out).
	sched = Schedule{
		{At: 0, Action: ActionPause, Node: "follower", As: "frozen"},
		{At: 500 * time.Millisecond, Action: ActionKill, Node: "leader", As: "victim2"},
		{At: 2 * time.Second, Action: ActionResume, Node: "frozen"},
		{At: 3 * time.Second, Action: ActionStart, Node: "victim2"},
	}
	if err := Run(ctx, time.Now(), sched, tg, NewRegistry(), NewResolver(nil)); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, tg.Events, "cluster-healthy before the kill", func(e event.Event) bool {
		return e.Kind == event.ClusterHealthy && e.Fault == "victim2"
	})
	if err := RestoreAll(ctx, tg); err != nil {
		t.Fatal(err)
	}
	for _, n := range tg.Snapshot().Nodes {
		if !running(n) {
			t.Errorf("%s not running at the end: %+v", n.Name, n)
		}
	}
	if n := countKind(tg.Events, event.FaultError); n != 0 {
		t.Errorf("fault errors:\n%s", strings.Join(kinds(tg.Events, event.FaultError), "\n"))
	}
	for _, e := range tg.Events.Events() {
		t.Logf("%8.3fs %-15s %-4s %s %s", e.Since().Seconds(), e.Kind, e.Node, e.Detail, e.Fault)
	}
}
