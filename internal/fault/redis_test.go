package fault

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/launcher/redis"
)

// TestRedisPrimaryKillFailover starts a real Redis Cluster (3 masters, one
// replica each), kills the first primary through Run while Watch runs, and
// checks that the watcher reports its replica's promotion, then starts the
// victim with Apply and sees it rejoin as a replica.
func TestRedisPrimaryKillFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real redis-server processes")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not on PATH")
	}
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	uctx, ucancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer ucancel()
	c, err := redis.ClusterLauncher{}.Up(uctx, env, launcher.Spec{Name: "fault-test-redis", Nodes: 3, Replicas: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("redis-cluster Up: %v", err)
	}
	cl := &countingLauncher{Launcher: redis.ClusterLauncher{}}
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

	r := NewResolver(nil)
	sched := Schedule{{At: 0, Action: ActionKill, Node: "primary", As: "victim"}}
	if err := Run(ctx, time.Now(), sched, tg, NewRegistry(), r); err != nil {
		t.Fatal(err)
	}
	victim, ok := r.Bound("victim")
	if !ok || len(victim) != 1 || victim[0] != "n1" {
		t.Fatalf("victim = %v, want [n1] (the first primary by name)", victim)
	}
	// n4 replicates n1 (see the redis launcher) and takes over.
	waitEvent(t, tg.Events, "role-change n4 replica -> primary", func(e event.Event) bool {
		return e.Kind == event.RoleChange && e.Node == "n4" && e.Detail == "n4 replica -> primary"
	})
	if _, err := Apply(ctx, tg, NewRegistry(), ActionStart, "n1"); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, tg.Events, "role-change n1 primary -> replica", func(e event.Event) bool {
		return e.Kind == event.RoleChange && e.Node == "n1" && e.Detail == "n1 primary -> replica"
	})
	if n := countKind(tg.Events, event.FaultError); n != 0 {
		t.Errorf("fault errors:\n%s", strings.Join(kinds(tg.Events, event.FaultError), "\n"))
	}
	for _, e := range tg.Events.Events() {
		t.Logf("%8.3fs %-15s %-4s %s %s", e.Since().Seconds(), e.Kind, e.Node, e.Detail, e.Fault)
	}
}
