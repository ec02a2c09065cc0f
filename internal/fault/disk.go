package fault

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/diskfs"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/procstat"
)

// Disk fault actions. They need the file-system layer under every node's
// data directory (`cluster up --disk-faults`, target option disk: fuse;
// internal/diskfs); see docs/faults.md.
const (
	ActionPowerLoss Action = "power-loss" // SIGKILL the node's processes and drop every write not fsynced
	ActionDiskDelay Action = "disk-delay" // latency on reads, writes, fsyncs
	ActionDiskError Action = "disk-error" // EIO on a share of reads, writes, fsyncs
	ActionDiskFull  Action = "disk-full"  // ENOSPC on writes and new files
	ActionDiskStall Action = "disk-stall" // every operation blocks until healed
	ActionDiskHeal  Action = "disk-heal"  // remove the disk faults of the nodes
	ActionDiskSync  Action = "disk-sync"  // make everything written so far durable
)

// registerDisk adds the disk kinds' constructors to r.
func registerDisk(r *Registry) {
	r.m[ActionPowerLoss] = func() Fault { return &powerLossFault{} }
	r.m[ActionDiskDelay] = func() Fault { return &diskFault{action: ActionDiskDelay, name: diskfs.FaultDelay} }
	r.m[ActionDiskError] = func() Fault { return &diskFault{action: ActionDiskError, name: diskfs.FaultError} }
	r.m[ActionDiskFull] = func() Fault {
		return &diskFault{action: ActionDiskFull, name: diskfs.FaultFull, faults: diskfs.Faults{Full: true}}
	}
	r.m[ActionDiskStall] = func() Fault {
		return &diskFault{action: ActionDiskStall, name: diskfs.FaultStall, faults: diskfs.Faults{Stall: true}}
	}
	r.m[ActionDiskHeal] = func() Fault { return &diskHealFault{} }
	r.m[ActionDiskSync] = func() Fault { return &diskSyncFault{} }
}

// diskLayout returns the layer of node name, or why it has none.
func diskLayout(t *Cluster, name string) (diskfs.Layout, error) {
	c := t.Snapshot()
	if !diskfs.Wanted(c.Options) {
		return diskfs.Layout{}, fmt.Errorf("disk faults need the file-system layer under every node's data directory: start the cluster with `faultbench cluster up %s --disk-faults` (scenario: target options disk: fuse)", c.Kind)
	}
	n, err := c.Node(name)
	if err != nil {
		return diskfs.Layout{}, err
	}
	if n.Host != "" {
		return diskfs.Layout{}, fmt.Errorf("%s runs on host %s: disk faults act on nodes of this machine only", name, n.Host)
	}
	if n.DataDir == "" {
		return diskfs.Layout{}, fmt.Errorf("%s has no data directory", name)
	}
	return diskfs.LayoutOf(n.DataDir), nil
}

// diskCall makes one control call to node name's layer.
func diskCall(ctx context.Context, t *Cluster, name string, req diskfs.Request) (diskfs.Response, error) {
	l, err := diskLayout(t, name)
	if err != nil {
		return diskfs.Response{}, err
	}
	resp, err := diskfs.Call(ctx, l.Ctl, req)
	if err != nil {
		return resp, fmt.Errorf("%s: %w", name, err)
	}
	return resp, nil
}

// prepareDisk checks that every node has a layer whose server answers.
func prepareDisk(ctx context.Context, t *Cluster, nodes []string) error {
	return forEach(nodes, func(name string) error {
		_, err := diskCall(ctx, t, name, diskfs.Request{Op: diskfs.CtlStatus})
		return err
	})
}

// diskFault is disk-delay, disk-error, disk-full and disk-stall: a fault
// set in the nodes' layers until disk-heal (or its Restore) clears it.
type diskFault struct {
	noLifecycle
	action Action
	name   string // diskfs.FaultDelay ...
	faults diskfs.Faults
}

func (f *diskFault) Name() Action { return f.action }

// ConfigureStep implements StepConfigurer: the fault from the step's
// parameters (checked by the kind's declaration).
func (f *diskFault) ConfigureStep(st Step, _ string) error {
	v := st.Values
	switch f.action {
	case ActionDiskDelay:
		f.faults.Delay = &diskfs.Delay{Read: v.Duration("read"), Write: v.Duration("write"), Fsync: v.Duration("fsync"),
			Distribution: v.String("distribution"), Jitter: v.Duration("jitter")}
	case ActionDiskError:
		e := &diskfs.ErrorFault{Ops: diskfs.DataOps, Percent: 100}
		if s := v.String("ops"); s != "" {
			ops, err := diskfs.ParseOps(s)
			if err != nil {
				return err
			}
			e.Ops = ops
		}
		if p := v.Int("percent"); p != 0 {
			e.Percent = p
		}
		f.faults.Error = e
	}
	return f.faults.Validate()
}

func (f *diskFault) Prepare(ctx context.Context, t *Cluster, nodes []string) error {
	if f.faults.None() {
		return fmt.Errorf("%s: no fault configured", f.action)
	}
	return prepareDisk(ctx, t, nodes)
}

func (f *diskFault) Inject(ctx context.Context, t *Cluster, nodes []string) error {
	return forEach(nodes, func(name string) error {
		_, err := diskCall(ctx, t, name, diskfs.Request{Op: diskfs.CtlSet, Faults: f.faults})
		return err
	})
}

func (f *diskFault) WaitEffective(ctx context.Context, t *Cluster, nodes []string) error {
	return forEach(nodes, func(name string) error {
		resp, err := diskCall(ctx, t, name, diskfs.Request{Op: diskfs.CtlStatus})
		if err != nil {
			return err
		}
		if !faultSet(resp.Status.Faults, f.name) {
			return fmt.Errorf("%s: the layer does not report the %s fault in place", name, f.action)
		}
		return nil
	})
}

// faultSet reports whether fs holds the fault named name.
func faultSet(fs diskfs.Faults, name string) bool {
	switch name {
	case diskfs.FaultDelay:
		return fs.Delay != nil
	case diskfs.FaultError:
		return fs.Error != nil
	case diskfs.FaultFull:
		return fs.Full
	case diskfs.FaultStall:
		return fs.Stall
	}
	return false
}

func (f *diskFault) Restore(ctx context.Context, t *Cluster, nodes []string) error {
	return forEach(nodes, func(name string) error {
		_, err := diskCall(ctx, t, name, diskfs.Request{Op: diskfs.CtlClear, Names: []string{f.name}})
		return err
	})
}

func (f *diskFault) WaitRestored(ctx context.Context, t *Cluster, nodes []string) error {
	return forEach(nodes, func(name string) error {
		resp, err := diskCall(ctx, t, name, diskfs.Request{Op: diskfs.CtlStatus})
		if err == nil && faultSet(resp.Status.Faults, f.name) {
			err = fmt.Errorf("%s: the %s fault is still in place", name, f.action)
		}
		return err
	})
}

// diskHealFault removes every disk fault of the nodes (a repair).
type diskHealFault struct {
	noLifecycle
	noUndo
}

func (*diskHealFault) Name() Action { return ActionDiskHeal }

// Repairs implements Repairer.
func (*diskHealFault) Repairs() bool { return true }

func (*diskHealFault) Inject(ctx context.Context, t *Cluster, nodes []string) error {
	return forEach(nodes, func(name string) error {
		_, err := diskCall(ctx, t, name, diskfs.Request{Op: diskfs.CtlClear})
		return err
	})
}

func (*diskHealFault) WaitEffective(ctx context.Context, t *Cluster, nodes []string) error {
	return forEach(nodes, func(name string) error {
		resp, err := diskCall(ctx, t, name, diskfs.Request{Op: diskfs.CtlStatus})
		if err == nil && !resp.Status.Faults.None() {
			err = fmt.Errorf("%s: disk faults still in place: %+v", name, resp.Status.Faults)
		}
		return err
	})
}

// diskSyncFault makes every write and name change the nodes made so far
// durable on their layers (the layer's sync), as the kernel's writeback
// and the file system's journal commits would in time: a power loss after
// it takes only what was written since. Nothing to undo.
type diskSyncFault struct {
	noLifecycle
	noUndo
}

func (*diskSyncFault) Name() Action { return ActionDiskSync }

func (*diskSyncFault) Inject(ctx context.Context, t *Cluster, nodes []string) error {
	return forEach(nodes, func(name string) error {
		if l, err := diskLayout(t, name); err == nil {
			// pages of shared writable mmaps reach the layer first
			fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_ = diskfs.Flush(fctx, l.Data)
			cancel()
		}
		_, err := diskCall(ctx, t, name, diskfs.Request{Op: diskfs.CtlSync})
		return err
	})
}

func (*diskSyncFault) WaitEffective(context.Context, *Cluster, []string) error { return nil }

// powerLossFault kills the node's processes (its whole process group)
// with SIGKILL and, once they are gone, has the layer drop every write
// and name change not made durable by an fsync. Restored by start, on
// what survived.
type powerLossFault struct {
	pids    map[string]int
	restore startFault
}

func (*powerLossFault) Name() Action { return ActionPowerLoss }

func (f *powerLossFault) Prepare(ctx context.Context, t *Cluster, nodes []string) error {
	if err := prepareDisk(ctx, t, nodes); err != nil {
		return err
	}
	return checkSharedLayers(ctx, t, nodes)
}

// checkSharedLayers refuses a power loss of nodes that leaves another
// node on the same layer running (txkv's region servers share one
// storage directory; a postgres-ha server nK shares its keeper's): that
// node would go on running on files the crash put back under it. A node
// whose process descends from a selected node's dies with it and does
// not count.
func checkSharedLayers(ctx context.Context, t *Cluster, nodes []string) error {
	c := t.Snapshot()
	sel := map[string]bool{}
	for _, n := range nodes {
		sel[n] = true
	}
	var errs []error
	for _, name := range nodes {
		n, err := c.Node(name)
		if err != nil || n.DataDir == "" {
			continue
		}
		for i := range c.Nodes {
			o := &c.Nodes[i]
			if sel[o.Name] || o.DataDir == "" || filepath.Clean(o.DataDir) != filepath.Clean(n.DataDir) {
				continue
			}
			if o.PID <= 0 || !t.procs(o).Alive(ctx, o.PID) || descendsFrom(o.PID, n.PID) {
				continue
			}
			errs = append(errs, fmt.Errorf("power-loss %s: its data directory %s (one disk layer) is shared with %s, which runs and would go on running on what the crash put back: select every node on that directory at once (e.g. %s,%s, or all)",
				name, n.DataDir, o.Name, name, o.Name))
			sel[o.Name] = true // one message per node
		}
	}
	return errors.Join(errs...)
}

// descendsFrom reports whether process pid is anc or one of its
// descendants (the parent chain in /proc), or in anc's process group.
func descendsFrom(pid, anc int) bool {
	if anc <= 0 {
		return false
	}
	if g, err := syscall.Getpgid(pid); err == nil && g == anc {
		return true
	}
	return procstat.DescendsFrom(procstat.Root, pid, anc, 64)
}

func (*powerLossFault) Cleanup(context.Context, *Cluster, []string) error { return nil }

func (f *powerLossFault) Inject(ctx context.Context, t *Cluster, nodes []string) error {
	f.pids = map[string]int{}
	// every node loses power first, then every layer drops what was
	// not durable: a cluster-wide power loss leaves no node running on
	// the others' lost writes
	err := forEach(nodes, func(name string) error {
		n, err := ownedProcess(ctx, t, name)
		if err != nil {
			return fmt.Errorf("power-loss %w", err)
		}
		if err := killGroup(n.PID); err != nil {
			return fmt.Errorf("power-loss %s: %w", name, err)
		}
		f.pids[name] = n.PID
		return nil
	})
	crashErr := forEach(nodes, func(name string) error {
		pid, ok := f.pids[name]
		if !ok {
			return nil
		}
		if err := waitState(ctx, fmt.Sprintf("%s (pid %d) and its process group to exit after SIGKILL", name, pid), func() bool { return !groupAlive(pid) }); err != nil {
			return err
		}
		markDead(t, name, pid)
		// dirty pages of shared writable mmaps (the kernel's, not yet
		// the layer's) are written to the layer now and dropped with
		// the rest, not written back after the crash; not under a
		// stall, which would hold the flush until healed
		if l, err := diskLayout(t, name); err == nil {
			if st, err := diskCall(ctx, t, name, diskfs.Request{Op: diskfs.CtlStatus}); err == nil && !st.Status.Faults.Stall {
				fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
				if err := diskfs.Flush(fctx, l.Data); err != nil {
					t.emit(event.Note, name, "power-loss: "+err.Error(), "")
				}
				fcancel()
			}
		}
		resp, err := diskCall(ctx, t, name, diskfs.Request{Op: diskfs.CtlCrash})
		if err != nil {
			return fmt.Errorf("power-loss %s: the node is dead but its writes were not dropped: %w", name, err)
		}
		if resp.Crash != nil {
			t.emit(event.Note, name, "power-loss: "+resp.Crash.String(), "")
		}
		return nil
	})
	return errors.Join(err, crashErr)
}

func (f *powerLossFault) WaitEffective(context.Context, *Cluster, []string) error { return nil }

func (f *powerLossFault) Restore(ctx context.Context, t *Cluster, nodes []string) error {
	return f.restore.Inject(ctx, t, nodes)
}

func (f *powerLossFault) WaitRestored(ctx context.Context, t *Cluster, nodes []string) error {
	return f.restore.WaitEffective(ctx, t, nodes)
}

// killGroup sends SIGKILL to pid's process group when pid leads one (a
// node spawned by faultbench does: children it forked, such as a
// rewriting Redis, die with it), else to pid alone.
func killGroup(pid int) error {
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
		if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("SIGKILL to process group %d: %w", pid, err)
		}
		return nil
	}
	return launcher.Signal(pid, syscall.SIGKILL)
}

// groupAlive reports whether a live (not zombie) process is in process
// group pgid, or is pgid itself.
func groupAlive(pgid int) bool {
	if launcher.Alive(pgid) {
		return true
	}
	tab, err := procstat.Scan(procstat.Root)
	if err != nil {
		return false
	}
	return len(tab.Live().Group(pgid)) > 0
}

// healDisks clears the disk faults left on any node of a cluster with the
// layer (RestoreAll), writing restore events when there were some.
func healDisks(ctx context.Context, t *Cluster, label string) error {
	c := t.Snapshot()
	if !diskfs.Wanted(c.Options) {
		return nil
	}
	var faulty []string
	for _, n := range c.Nodes {
		resp, err := diskCall(ctx, t, n.Name, diskfs.Request{Op: diskfs.CtlStatus})
		if err == nil && !resp.Status.Faults.None() {
			faulty = append(faulty, n.Name)
		}
	}
	if len(faulty) == 0 {
		return nil
	}
	sortNames(faulty)
	_, err := execute(ctx, t, &diskHealFault{}, builtinKind(ActionDiskHeal), faulty, "disk-heal "+joinNodes(faulty), label)
	return err
}

// isDiskAction reports whether a acts through the disk layer.
func isDiskAction(a Action) bool {
	switch a {
	case ActionPowerLoss, ActionDiskDelay, ActionDiskError, ActionDiskFull, ActionDiskStall, ActionDiskHeal, ActionDiskSync:
		return true
	}
	return false
}

// CheckDisk refuses, before anything starts, a schedule with disk faults
// on a cluster without the disk layer (cluster options opts lack disk:
// fuse); each refused step is named.
func CheckDisk(sched Schedule, opts map[string]string) error {
	if diskfs.Wanted(opts) {
		return nil
	}
	var errs []error
	for i, st := range sched {
		if isDiskAction(st.Action) {
			errs = append(errs, fmt.Errorf("schedule step %d (%s): %s needs the file-system layer under the nodes' data directories: set target options disk: fuse (`faultbench cluster up --disk-faults`; docs/faults.md)", i+1, st, st.Action))
		}
	}
	return errors.Join(errs...)
}
