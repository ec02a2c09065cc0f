package fault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/faultbench/faultbench/internal/cgroup"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/fault/kind"
)

// Slow-node fault actions: a node that runs, and is seen running, but
// slowly or not at all. Each puts the node's processes (its main process,
// their descendants and its process group) into a cgroup of their own
// (internal/cgroup) and limits it; restore moves them back and removes
// the cgroup. They need root (write access to the cgroup hierarchy).
const (
	ActionCPUThrottle    Action = "cpu-throttle"    // a share of one core for the node's processes together
	ActionMemoryPressure Action = "memory-pressure" // the kernel reclaims the node's memory down to a mark
	ActionStall          Action = "stall"           // the node's processes are frozen, their connections open
	ActionRestore        Action = "restore"         // undo cpu-throttle, memory-pressure and stall
)

// DefaultCPUPercent is cpu-throttle's share of a core when none is given.
const DefaultCPUPercent = 10

// registerSlow adds the slow-node kinds' constructors to r.
func registerSlow(r *Registry) {
	r.m[ActionCPUThrottle] = func() Fault { return &slowFault{action: ActionCPUThrottle, ctrl: cgroup.CPU} }
	r.m[ActionMemoryPressure] = func() Fault { return &slowFault{action: ActionMemoryPressure, ctrl: cgroup.Memory} }
	r.m[ActionStall] = func() Fault { return &slowFault{action: ActionStall, ctrl: cgroup.Freezer} }
	r.m[ActionRestore] = func() Fault { return &restoreSlowFault{} }
}

// groupName names node's cgroup (after cgroup.Prefix): unique per cluster
// and node, so that restore and cleanup find it again.
func groupName(cluster, node string) string { return cluster + "-" + node }

// slowNode returns node name's running process, refusing what the
// slow-node faults cannot act on.
func slowNode(ctx context.Context, t *Cluster, name string) (int, error) {
	n, err := ownedProcess(ctx, t, name)
	if err != nil {
		return 0, err
	}
	if n.Host != "" {
		return 0, fmt.Errorf("%s runs on host %s: slow-node faults act on nodes of this machine only", name, n.Host)
	}
	return n.PID, nil
}

// openCgroups opens this machine's cgroups and checks that ctrl can be
// used, with a message that says what is missing.
func openCgroups(ctrl cgroup.Controller) (*cgroup.System, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("slow-node faults put the node's processes into a cgroup of their own, which needs root (faultbench runs as uid %d)", os.Geteuid())
	}
	s, err := cgroup.Open()
	if err != nil {
		return nil, err
	}
	return s, s.Check(ctrl)
}

// slowFault is cpu-throttle, memory-pressure and stall.
type slowFault struct {
	action  Action
	ctrl    cgroup.Controller
	percent int   // cpu-throttle
	limit   int64 // memory-pressure; 0: half of the use at injection
	sys     *cgroup.System
	groups  map[string]*cgroup.Group
	limits  map[string]int64 // memory-pressure: the mark set per node
}

func (f *slowFault) Name() Action { return f.action }

// ConfigureStep implements StepConfigurer.
func (f *slowFault) ConfigureStep(st Step, _ string) error {
	f.percent = st.Values.Int("percent")
	if s := st.Values.String("limit"); s != "" {
		n, err := kind.ParseSize(s)
		if err != nil {
			return err
		}
		f.limit = n
	}
	return nil
}

func (f *slowFault) Prepare(ctx context.Context, t *Cluster, nodes []string) error {
	if f.action == ActionCPUThrottle && f.percent == 0 {
		f.percent = DefaultCPUPercent
	}
	sys, err := openCgroups(f.ctrl)
	if err != nil {
		return err
	}
	f.sys = sys
	return forEach(nodes, func(name string) error {
		_, err := slowNode(ctx, t, name)
		return err
	})
}

func (f *slowFault) Inject(ctx context.Context, t *Cluster, nodes []string) error {
	f.groups, f.limits = map[string]*cgroup.Group{}, map[string]int64{}
	cname := t.Snapshot().Name
	return forEach(nodes, func(name string) error {
		pid, err := slowNode(ctx, t, name)
		if err != nil {
			return err
		}
		g, err := f.sys.Make(f.ctrl, groupName(cname, name), pid)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		f.groups[name] = g
		if f.action == ActionCPUThrottle { // limited before the processes arrive
			if err := g.SetCPU(f.percent); err != nil {
				return err
			}
		}
		if err := g.Add(cgroup.Tree(pid)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		switch f.action {
		case ActionMemoryPressure:
			// the group is charged what the node allocates from now on (no
			// charge moves with a process); the default mark is half of
			// what its processes hold resident now
			rss := cgroup.RSS(cgroup.Tree(pid))
			limit := f.limit
			if limit == 0 {
				limit = max(rss/2, kind.MinMemoryHigh)
			}
			if err := g.SetMemory(limit); err != nil {
				return fmt.Errorf("%s: memory mark %d bytes: %w", name, limit, err)
			}
			f.limits[name] = limit
			t.emit(event.Note, name, fmt.Sprintf("memory-pressure: %s may use %.1f MiB more (its processes hold %.1f MiB resident)", name, float64(limit)/(1<<20), float64(rss)/(1<<20)), "")
		case ActionStall:
			return g.Freeze(true)
		}
		return nil
	})
}

func (f *slowFault) WaitEffective(ctx context.Context, t *Cluster, nodes []string) error {
	return forEach(nodes, func(name string) error {
		g := f.groups[name]
		if g == nil {
			return fmt.Errorf("%s: no cgroup", name)
		}
		switch f.action {
		case ActionCPUThrottle:
			got, err := g.CPU()
			if err == nil && got != f.percent {
				err = fmt.Errorf("%s: the cgroup allows %d%% of a core, not %d%%", name, got, f.percent)
			}
			return err
		case ActionMemoryPressure:
			got, err := g.MemoryLimit()
			if err == nil && got == 0 {
				err = fmt.Errorf("%s: the cgroup has no memory mark", name)
			}
			return err
		default:
			return waitState(ctx, name+"'s processes to be frozen", func() bool {
				ok, err := g.Frozen()
				return err == nil && ok
			})
		}
	})
}

func (f *slowFault) Restore(ctx context.Context, t *Cluster, nodes []string) error {
	return releaseGroups(t, nodes, []cgroup.Controller{f.ctrl})
}

func (f *slowFault) WaitRestored(ctx context.Context, t *Cluster, nodes []string) error {
	return checkReleased(t, nodes, []cgroup.Controller{f.ctrl})
}

// Cleanup leaves the fault in place: restore (or restore-all after a run)
// undoes it, `faultbench cleanup` removes what a killed faultbench left.
func (f *slowFault) Cleanup(context.Context, *Cluster, []string) error { return nil }

// nodeGroups returns the groups of node name for ctrls that exist.
func nodeGroups(sys *cgroup.System, cluster, name string, ctrls []cgroup.Controller) []*cgroup.Group {
	var out []*cgroup.Group
	for _, ctrl := range ctrls {
		if g, _ := sys.Find(ctrl, groupName(cluster, name)); g != nil {
			out = append(out, g)
		}
	}
	return out
}

// releaseGroups moves the nodes' processes out of their groups for ctrls
// and removes the groups; a throttled node's throttling is noted.
func releaseGroups(t *Cluster, nodes []string, ctrls []cgroup.Controller) error {
	sys, err := cgroup.Open()
	if err != nil {
		return err
	}
	cname := t.Snapshot().Name
	return forEach(nodes, func(name string) error {
		var errs []error
		for _, g := range nodeGroups(sys, cname, name, ctrls) {
			if g.Ctrl == cgroup.CPU {
				if st, err := g.Throttled(); err == nil {
					t.emit(event.Note, name, fmt.Sprintf("cpu-throttle on %s: throttled in %d of %d periods of %v, %v in all", name, st.Throttled, st.Periods, cgroup.CPUPeriod, st.Time), "")
				}
			}
			errs = append(errs, g.Release())
		}
		return errors.Join(errs...)
	})
}

// checkReleased checks that the nodes have no group for ctrls left.
func checkReleased(t *Cluster, nodes []string, ctrls []cgroup.Controller) error {
	sys, err := cgroup.Open()
	if err != nil {
		return err
	}
	cname := t.Snapshot().Name
	return forEach(nodes, func(name string) error {
		var left []string
		for _, g := range nodeGroups(sys, cname, name, ctrls) {
			left = append(left, g.Dir)
		}
		if len(left) > 0 {
			return fmt.Errorf("%s: cgroups still in place: %s", name, strings.Join(left, ", "))
		}
		return nil
	})
}

// restoreSlowFault undoes every slow-node fault of the nodes (a repair):
// thawed, unlimited, back in the cgroups they came from.
type restoreSlowFault struct {
	noLifecycle
	noUndo
}

func (*restoreSlowFault) Name() Action { return ActionRestore }

// Repairs implements Repairer.
func (*restoreSlowFault) Repairs() bool { return true }

func (*restoreSlowFault) Inject(_ context.Context, t *Cluster, nodes []string) error {
	return releaseGroups(t, nodes, cgroup.Controllers)
}

func (*restoreSlowFault) WaitEffective(_ context.Context, t *Cluster, nodes []string) error {
	return checkReleased(t, nodes, cgroup.Controllers)
}

// restoreAllSlow undoes the slow-node faults left on any node of the
// cluster (RestoreAll), writing restore events when there were some.
func restoreAllSlow(ctx context.Context, t *Cluster, label string) error {
	sys, err := cgroup.Open()
	if err != nil {
		return nil // no cgroups here: no slow-node fault either
	}
	c := t.Snapshot()
	var slow []string
	for _, n := range c.Nodes {
		if n.Host == "" && len(nodeGroups(sys, c.Name, n.Name, cgroup.Controllers)) > 0 {
			slow = append(slow, n.Name)
		}
	}
	if len(slow) == 0 {
		return nil
	}
	sortNames(slow)
	_, err = execute(ctx, t, &restoreSlowFault{}, builtinKind(ActionRestore), slow, "restore "+joinNodes(slow), label)
	return err
}

// CheckSlow refuses, before anything starts, a schedule with slow-node
// faults on a machine where they cannot work: not root, or no writable
// cgroup hierarchy with the controller. Each refused step is named.
func CheckSlow(sched Schedule) error {
	ctrls := map[Action]cgroup.Controller{ActionCPUThrottle: cgroup.CPU, ActionMemoryPressure: cgroup.Memory, ActionStall: cgroup.Freezer}
	var errs []error
	for i, st := range sched {
		ctrl, ok := ctrls[st.Action]
		if !ok {
			continue
		}
		if _, err := openCgroups(ctrl); err != nil {
			errs = append(errs, fmt.Errorf("schedule step %d (%s): %w", i+1, st, err))
		}
	}
	return errors.Join(errs...)
}
