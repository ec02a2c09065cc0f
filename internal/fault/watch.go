package fault

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/launcher"
)

// DefaultWatchEvery is Watch's interval when every <= 0.
const DefaultWatchEvery = 200 * time.Millisecond

// watchRefreshTimeout bounds one launcher Refresh made by Watch. It must
// exceed a launcher's own per-node timeout (etcd: 2 s), or a paused node would
// fail every refresh and hide leader changes.
const watchRefreshTimeout = 5 * time.Second

// Watch observes the cluster until ctx ends and writes what changed. Two
// loops share the Cluster: one calls the launcher's Refresh again and again
// (each call bounded by a short timeout, at most one per `every`), merging
// roles and liveness into the Cluster; the other, every `every`
// (DefaultWatchEvery when <= 0; 100–250 ms is the useful range), looks at
// the latest merged state and at every node's process in /proc — so a killed
// or paused process is seen within one interval even while a Refresh waits
// for a member that does not answer. The events, relative to the previous
// look:
//
//   - NodeDown: a node's process exited, was paused, or the launcher reports
//     it down (stopped answering); detail says which.
//   - NodeUp: a node runs and answers again; detail has its pid.
//   - LeaderChange: the up leader differs from the last one seen; node is the
//     new leader, detail "n1 -> n3" ("none -> n1" if no leader was seen).
//   - RoleChange: an up node's role differs from its last known role, e.g.
//     "n2 replica -> primary" (leader/follower swaps are LeaderChange only).
//   - FailureDetected and Recovered: where the launcher is a
//     launcher.RecoveryReporter (txkv), each new record of a failure the
//     database detected and recovered from, asked after every Refresh, as
//     two events at the database's own detection and completion times.
//
// The first look, after one Refresh, is the baseline and writes nothing. If
// Refresh fails, roles stay as last known while processes are still checked;
// the failure is noted once (and its end once). Run Watch in its own
// goroutine; it returns when ctx ends and its refresh loop has stopped. It
// shares t safely with Run, RestoreAll and Apply.
func Watch(ctx context.Context, t *Cluster, every time.Duration) {
	if every <= 0 {
		every = DefaultWatchEvery
	}
	refresh := func() error {
		rctx, cancel := context.WithTimeout(ctx, watchRefreshTimeout)
		defer cancel()
		_, err := t.Refresh(rctx)
		return err
	}
	failing := false
	noteRefresh := func(err error) {
		switch {
		case ctx.Err() != nil:
		case err != nil && !failing:
			failing = true
			t.emit(event.Note, "", fmt.Sprintf("watch: %v (keeping the last known roles until it works again)", err), "")
		case err == nil && failing:
			failing = false
			t.emit(event.Note, "", "watch: refreshing the cluster works again", "")
		}
	}
	noteRefresh(refresh())
	if ctx.Err() != nil {
		return
	}
	recs := newRecoveryWatch(t)
	recs.poll(ctx) // baseline: recoveries before the watch are not written
	var w watchState
	w.step(observe(ctx, t.Snapshot())) // baseline

	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			noteRefresh(refresh())
			for _, e := range recs.poll(ctx) {
				t.Events.Add(e)
			}
		}
	}()
	defer func() { <-done }()

	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		for _, e := range w.step(observe(ctx, t.Snapshot())) {
			t.Events.Add(e)
		}
	}
}

// recoveryPollEvery is how often the watcher asks for recovery records at
// most. The events carry the database's own times, so asking less often
// than Refresh runs delays them without making them less exact, and keeps
// the extra request off most refreshes.
const recoveryPollEvery = time.Second

// recoveryWatch turns a launcher's recovery records (launcher.RecoveryReporter)
// into FailureDetected and Recovered events, each record once.
type recoveryWatch struct {
	t     *Cluster
	rr    launcher.RecoveryReporter // nil: the launcher keeps no records
	seen  map[string]bool
	base  bool          // the first poll is the baseline
	every time.Duration // at most one request per every
	last  time.Time     // when the last request was made
}

func newRecoveryWatch(t *Cluster) *recoveryWatch {
	rr, _ := t.Launcher.(launcher.RecoveryReporter)
	return &recoveryWatch{t: t, rr: rr, seen: map[string]bool{}, base: true, every: recoveryPollEvery}
}

// poll asks for the records, unless it asked less than w.every ago, and
// returns the events of those not seen before (none on the first poll). A
// failed request returns nothing: the records are still there next time.
func (w *recoveryWatch) poll(ctx context.Context) []event.Event {
	if w.rr == nil || (!w.base && time.Since(w.last) < w.every) {
		return nil
	}
	w.last = time.Now()
	rctx, cancel := context.WithTimeout(ctx, watchRefreshTimeout)
	defer cancel()
	recs, err := w.rr.Recoveries(rctx, w.t.Snapshot())
	if err != nil {
		return nil
	}
	base := w.base
	w.base = false
	var out []event.Event
	for _, r := range recs {
		key := fmt.Sprintf("%s/%s/%d", r.Kind, r.Name, r.Detected.UnixNano())
		if w.seen[key] {
			continue
		}
		w.seen[key] = true
		if base {
			continue
		}
		out = append(out,
			event.Event{Wall: r.Detected, Kind: event.FailureDetected, Node: r.Name,
				Detail: fmt.Sprintf("%s %s declared failed by the database", r.Kind, r.Name)},
			event.Event{Wall: r.Done, Kind: event.Recovered, Node: r.Name, Detail: r.Detail})
	}
	return out
}

// nodeObs is what one poll saw of one node.
type nodeObs struct {
	up   bool
	why  string // why it is not up
	pid  int
	role string
}

// observation is what one poll saw of the cluster.
type observation struct {
	order  []string
	nodes  map[string]nodeObs
	leader string // up node(s) with role leader, comma separated; "" if none
}

// observe looks at c and the nodes' processes.
func observe(ctx context.Context, c *launcher.Cluster) observation {
	o := observation{nodes: map[string]nodeObs{}}
	var leaders []string
	for _, n := range c.Nodes {
		ob := nodeObs{pid: n.PID, role: n.Role}
		p := c.ProcsOf(&n)
		switch {
		case n.PID <= 0:
			ob.why = "process not running"
		case !p.Alive(ctx, n.PID):
			ob.why = fmt.Sprintf("process exited (pid %d)", n.PID)
		case p.Stopped(ctx, n.PID):
			ob.why = fmt.Sprintf("process paused (pid %d)", n.PID)
		case n.Down:
			ob.why = fmt.Sprintf("not answering (pid %d runs)", n.PID)
		default:
			ob.up = true
		}
		if ob.up && n.Role == launcher.RoleLeader {
			leaders = append(leaders, n.Name)
		}
		o.order = append(o.order, n.Name)
		o.nodes[n.Name] = ob
	}
	sortNames(leaders)
	o.leader = strings.Join(leaders, ",")
	return o
}

// watchState is the watcher's memory between polls.
type watchState struct {
	started  bool
	prev     observation
	lastRole map[string]string // last non-empty role of each node seen up
	leader   string            // last leader seen ("" before any)
}

// step compares cur with the previous observation and returns the events
// (times unset) to write. The first call only records a baseline.
func (w *watchState) step(cur observation) []event.Event {
	if w.lastRole == nil {
		w.lastRole = map[string]string{}
	}
	var out []event.Event
	add := func(kind, node, detail string) {
		if w.started {
			out = append(out, event.Event{Kind: kind, Node: node, Detail: detail})
		}
	}
	for _, name := range cur.order {
		now := cur.nodes[name]
		before, seen := w.prev.nodes[name]
		if seen {
			switch {
			case before.up && !now.up:
				why := now.why
				if now.pid <= 0 && before.pid > 0 { // a fault or the launcher already cleared the pid
					why = fmt.Sprintf("process exited (pid %d)", before.pid)
				}
				add(event.NodeDown, name, why)
			case !before.up && now.up:
				add(event.NodeUp, name, fmt.Sprintf("pid %d", now.pid))
			case before.up && now.up && before.pid != now.pid:
				add(event.NodeDown, name, fmt.Sprintf("process exited (pid %d); restarted between observations", before.pid))
				add(event.NodeUp, name, fmt.Sprintf("pid %d", now.pid))
			}
		}
		if now.up && now.role != "" {
			last := w.lastRole[name]
			if last != "" && last != now.role && !(leaderOrFollower(last) && leaderOrFollower(now.role)) {
				add(event.RoleChange, name, fmt.Sprintf("%s %s -> %s", name, last, now.role))
			}
			w.lastRole[name] = now.role
		}
	}
	if cur.leader != "" && cur.leader != w.leader {
		old := w.leader
		if old == "" {
			old = "none"
		}
		add(event.LeaderChange, cur.leader, fmt.Sprintf("%s -> %s", old, cur.leader))
		w.leader = cur.leader
	}
	w.prev = cur
	w.started = true
	return out
}

func leaderOrFollower(role string) bool {
	return role == launcher.RoleLeader || role == launcher.RoleFollower
}
