package fault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/launcher"
)

// obs builds an observation: spec items are "name=role" (up, running as
// this process), "name=role/down" (launcher says down) or "name=role/dead"
// (no process).
func obs(specs ...string) observation {
	c := &launcher.Cluster{}
	for _, s := range specs {
		name, rest, _ := strings.Cut(s, "=")
		role, state, _ := strings.Cut(rest, "/")
		n := launcher.Node{Name: name, Role: role, PID: os.Getpid()}
		switch state {
		case "down":
			n.Down = true
		case "dead":
			n.PID = 0
		case "newpid":
			n.PID = 1 // init: alive, a different pid
		}
		c.Nodes = append(c.Nodes, n)
	}
	return observe(context.Background(), c)
}

func stepEvents(w *watchState, o observation) []string {
	var out []string
	for _, e := range w.step(o) {
		out = append(out, fmt.Sprintf("%s %s|%s", e.Kind, e.Node, e.Detail))
	}
	return out
}

func TestWatchStepEtcdLeaderCrash(t *testing.T) {
	var w watchState
	if got := stepEvents(&w, obs("n1=leader", "n2=follower", "n3=follower")); got != nil {
		t.Fatalf("baseline wrote %v", got)
	}
	got := stepEvents(&w, obs("n1=leader/dead", "n2=follower", "n3=follower"))
	want := []string{fmt.Sprintf("node-down n1|process exited (pid %d)", os.Getpid())}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("crash: %v, want %v", got, want)
	}
	got = stepEvents(&w, obs("n1=/dead", "n2=follower", "n3=leader"))
	want = []string{"leader-change n3|n1 -> n3"} // follower -> leader is not a RoleChange
	if !reflect.DeepEqual(got, want) {
		t.Errorf("election: %v, want %v", got, want)
	}
	got = stepEvents(&w, obs("n1=follower", "n2=follower", "n3=leader"))
	want = []string{fmt.Sprintf("node-up n1|pid %d", os.Getpid())}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("restart: %v, want %v", got, want)
	}
	if got := stepEvents(&w, obs("n1=follower", "n2=follower", "n3=leader")); got != nil {
		t.Errorf("no change wrote %v", got)
	}
}

func TestWatchStepLeaderFirstSeen(t *testing.T) {
	var w watchState
	stepEvents(&w, obs("n1=follower", "n2=follower"))
	got := stepEvents(&w, obs("n1=follower", "n2=leader"))
	if want := []string{"leader-change n2|none -> n2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
	// Losing the leader writes nothing; the next leader names the last one.
	if got := stepEvents(&w, obs("n1=follower", "n2=follower/down")); !reflect.DeepEqual(got, []string{"node-down n2|" + fmt.Sprintf("not answering (pid %d runs)", os.Getpid())}) {
		t.Errorf("leader lost: %v", got)
	}
	got = stepEvents(&w, obs("n1=leader", "n2=follower/down"))
	if want := []string{"leader-change n1|n2 -> n1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}

func TestWatchStepRedisFailover(t *testing.T) {
	var w watchState
	stepEvents(&w, obs("n1=primary", "n2=replica"))
	got := stepEvents(&w, obs("n1=/dead", "n2=replica"))
	if want := []string{fmt.Sprintf("node-down n1|process exited (pid %d)", os.Getpid())}; !reflect.DeepEqual(got, want) {
		t.Errorf("kill: %v, want %v", got, want)
	}
	got = stepEvents(&w, obs("n1=/dead", "n2=primary"))
	if want := []string{"role-change n2|n2 replica -> primary"}; !reflect.DeepEqual(got, want) {
		t.Errorf("failover: %v, want %v", got, want)
	}
	// The old primary comes back as a replica: its last known role was primary.
	got = stepEvents(&w, obs("n1=replica", "n2=primary"))
	want := []string{fmt.Sprintf("node-up n1|pid %d", os.Getpid()), "role-change n1|n1 primary -> replica"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rejoin: %v, want %v", got, want)
	}
}

func TestWatchStepRestartBetweenPolls(t *testing.T) {
	var w watchState
	stepEvents(&w, obs("n1=follower"))
	got := stepEvents(&w, obs("n1=follower/newpid"))
	want := []string{
		fmt.Sprintf("node-down n1|process exited (pid %d); restarted between observations", os.Getpid()),
		"node-up n1|pid 1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}

// TestWatchLive runs Watch against a fake launcher whose roles change and
// waits (generously) for the events.
func TestWatchLive(t *testing.T) {
	tg, fl := fakeTarget(t, etcdRoles()) // n2 leads
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); Watch(ctx, tg, 100*time.Millisecond) }()
	t.Cleanup(func() { cancel(); wg.Wait() })

	// Let the baseline happen: Watch refreshes once, looks, then starts its refresh loop.
	waitFor(t, "the watcher's first refresh", func() bool {
		fl.mu.Lock()
		defer fl.mu.Unlock()
		return fl.refreshN >= 2 // the first, synchronous one precedes the baseline
	})
	fl.setDown("n2", true)
	fl.setRole("n2", launcher.RoleFollower)
	fl.setRole("n3", launcher.RoleLeader)
	waitEvent(t, tg.Events, "leader-change n2 -> n3", func(e event.Event) bool {
		return e.Kind == event.LeaderChange && e.Detail == "n2 -> n3" && e.Node == "n3"
	})
	waitEvent(t, tg.Events, "node-down n2", func(e event.Event) bool {
		return e.Kind == event.NodeDown && e.Node == "n2" && strings.Contains(e.Detail, "not answering")
	})
	fl.setDown("n2", false)
	waitEvent(t, tg.Events, "node-up n2", func(e event.Event) bool { return e.Kind == event.NodeUp && e.Node == "n2" })
	// The watcher's refreshes landed in the shared cluster.
	if n, _ := tg.Node("n3"); n.Role != launcher.RoleLeader {
		t.Errorf("n3 role in Cluster = %q", n.Role)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 60s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// recoveringLauncher is a fakeLauncher that also keeps recovery records.
type recoveringLauncher struct {
	*fakeLauncher
	recs []launcher.Recovery
	err  error
}

func (r *recoveringLauncher) Recoveries(context.Context, *launcher.Cluster) ([]launcher.Recovery, error) {
	return r.recs, r.err
}

// TestRecoveryWatch: records present at the first poll are the baseline;
// each later record becomes a failure-detected and a recovered event at the
// database's own times, once; a failed request writes nothing.
func TestRecoveryWatch(t *testing.T) {
	tg, fl := fakeTarget(t, map[string]string{"coord": "coordinator", "s1": "region-server"})
	rl := &recoveringLauncher{fakeLauncher: fl}
	tg.Launcher = rl
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	old := launcher.Recovery{Kind: "server", Name: "s2", Detected: t0, Done: t0.Add(time.Second), Detail: "before the run"}
	fresh := launcher.Recovery{Kind: "server", Name: "s1", Detected: t0.Add(time.Minute), Done: t0.Add(time.Minute + 1200*time.Millisecond), Detail: "4 regions back"}
	rl.recs = []launcher.Recovery{old}
	w := newRecoveryWatch(tg)
	w.every = 0 // ask on every poll
	steps := []struct {
		name string
		recs []launcher.Recovery
		err  error
		want []event.Event
	}{
		{"baseline", []launcher.Recovery{old}, nil, nil},
		{"nothing new", []launcher.Recovery{old}, nil, nil},
		{"request fails", nil, errors.New("coordinator down"), nil},
		{"a new recovery", []launcher.Recovery{old, fresh}, nil, []event.Event{
			{Wall: fresh.Detected, Kind: event.FailureDetected, Node: "s1"},
			{Wall: fresh.Done, Kind: event.Recovered, Node: "s1", Detail: "4 regions back"},
		}},
		{"the same again", []launcher.Recovery{old, fresh}, nil, nil},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			rl.recs, rl.err = st.recs, st.err
			got := w.poll(context.Background())
			if len(got) != len(st.want) {
				t.Fatalf("%d events %v, want %d", len(got), got, len(st.want))
			}
			for i, e := range got {
				wnt := st.want[i]
				if !e.Wall.Equal(wnt.Wall) || e.Kind != wnt.Kind || e.Node != wnt.Node || (wnt.Detail != "" && e.Detail != wnt.Detail) {
					t.Errorf("event %d: %+v, want %+v", i, e, wnt)
				}
			}
		})
	}
	t.Run("asked at most once per interval", func(t *testing.T) {
		rl.recs = []launcher.Recovery{old, fresh, {Kind: "server", Name: "s2", Detected: t0.Add(2 * time.Minute), Done: t0.Add(2*time.Minute + time.Second)}}
		w.every, w.last = time.Hour, time.Now()
		if got := w.poll(context.Background()); got != nil {
			t.Errorf("events %v within the interval", got)
		}
		w.last = time.Now().Add(-2 * time.Hour)
		if got := w.poll(context.Background()); len(got) != 2 {
			t.Errorf("%d events after the interval, want 2", len(got))
		}
	})
	t.Run("launcher without records", func(t *testing.T) {
		plain, _ := fakeTarget(t, map[string]string{"n1": "leader"})
		if got := newRecoveryWatch(plain).poll(context.Background()); got != nil {
			t.Errorf("events %v from a launcher that keeps no records", got)
		}
	})
}
