package fault

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/launcher"
)

// pollEvery is how often process-state waits look at /proc.
const pollEvery = 10 * time.Millisecond

// forEach calls fn for every node and joins the errors, so one failing node
// does not keep the fault from the others.
func forEach(nodes []string, fn func(name string) error) error {
	var errs []error
	for _, name := range nodes {
		if err := fn(name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ownedProcess returns node name and checks that its recorded pid is a
// running process that is still that node's (not a reused pid).
func ownedProcess(ctx context.Context, t *Cluster, name string) (launcher.Node, error) {
	n, err := t.Node(name)
	if err != nil {
		return n, err
	}
	p := t.procs(&n)
	if n.PID <= 0 || !p.Alive(ctx, n.PID) {
		return n, fmt.Errorf("%s is not running (recorded pid %d%s)", name, n.PID, onHost(n))
	}
	if !p.RunsNode(ctx, &n) {
		return n, fmt.Errorf("%s: pid %d is no longer its process (command line lacks %q)", name, n.PID, filepath.Base(launcher.Program(n.Argv)))
	}
	return n, nil
}

// waitState polls until cond(pid) holds or ctx ends; the error says what it
// waited for.
func waitState(ctx context.Context, what string, cond func() bool) error {
	tk := time.NewTicker(pollEvery)
	defer tk.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-tk.C:
		}
	}
	return nil
}

// procs returns the Procs of the host node n runs on.
func (t *Cluster) procs(n *launcher.Node) launcher.Procs { return t.Cluster.ProcsOf(n) }

// procsOf returns the Procs of the host node name runs on (this machine's
// when there is no such node).
func (t *Cluster) procsOf(name string) launcher.Procs {
	n, err := t.Node(name)
	if err != nil {
		return launcher.LocalProcs{}
	}
	return t.procs(&n)
}

// onHost is ", on host H" for a node of another host, for messages.
func onHost(n launcher.Node) string {
	if n.Host == "" {
		return ""
	}
	return ", on host " + n.Host
}

// markDead records that name's process pid is gone.
func markDead(t *Cluster, name string, pid int) {
	_ = t.UpdateNode(name, func(n *launcher.Node) {
		if n.PID == pid {
			n.PID = 0
			n.Down = true
		}
	})
}

// noLifecycle provides the no-op Prepare and Cleanup of signal faults.
type noLifecycle struct{}

func (noLifecycle) Prepare(context.Context, *Cluster, []string) error { return nil }
func (noLifecycle) Cleanup(context.Context, *Cluster, []string) error { return nil }

// noUndo provides Restore and WaitRestored for faults without an undo.
type noUndo struct{}

func (noUndo) Restore(context.Context, *Cluster, []string) error      { return nil }
func (noUndo) WaitRestored(context.Context, *Cluster, []string) error { return nil }

// killFault sends SIGKILL. Effective when the process is gone; restored by
// starting the node.
type killFault struct {
	noLifecycle
	pids    map[string]int
	restore startFault
}

func (*killFault) Name() Action { return ActionKill }

func (f *killFault) Inject(ctx context.Context, t *Cluster, nodes []string) error {
	f.pids = map[string]int{}
	return forEach(nodes, func(name string) error {
		n, err := ownedProcess(ctx, t, name)
		if err != nil {
			return fmt.Errorf("kill %w", err)
		}
		if err := t.procs(&n).Signal(ctx, n.PID, syscall.SIGKILL); err != nil {
			return fmt.Errorf("kill %s: %w", name, err)
		}
		f.pids[name] = n.PID
		return nil
	})
}

func (f *killFault) WaitEffective(ctx context.Context, t *Cluster, nodes []string) error {
	return forEach(nodes, func(name string) error {
		pid, ok := f.pids[name]
		if !ok {
			return nil
		}
		p := t.procsOf(name)
		if err := waitState(ctx, fmt.Sprintf("%s (pid %d) to exit after SIGKILL", name, pid), func() bool { return !p.Alive(ctx, pid) }); err != nil {
			return err
		}
		markDead(t, name, pid)
		return nil
	})
}

func (f *killFault) Restore(ctx context.Context, t *Cluster, nodes []string) error {
	return f.restore.Inject(ctx, t, nodes)
}

func (f *killFault) WaitRestored(ctx context.Context, t *Cluster, nodes []string) error {
	return f.restore.WaitEffective(ctx, t, nodes)
}

// stopFault sends SIGCONT and SIGTERM, and SIGKILL if the process has not
// exited after the stop grace. Effective when the process is gone; restored
// by starting the node.
type stopFault struct {
	noLifecycle
	pids    map[string]int
	restore startFault
}

func (*stopFault) Name() Action { return ActionStop }

func (f *stopFault) Inject(ctx context.Context, t *Cluster, nodes []string) error {
	f.pids = map[string]int{}
	return forEach(nodes, func(name string) error {
		n, err := ownedProcess(ctx, t, name)
		if err != nil {
			return fmt.Errorf("stop %w", err)
		}
		p := t.procs(&n)
		_ = p.Signal(ctx, n.PID, syscall.SIGCONT) // a paused process could not handle SIGTERM
		if err := p.Signal(ctx, n.PID, syscall.SIGTERM); err != nil {
			return fmt.Errorf("stop %s: %w", name, err)
		}
		f.pids[name] = n.PID
		return nil
	})
}

func (f *stopFault) WaitEffective(ctx context.Context, t *Cluster, nodes []string) error {
	grace := t.stopGrace()
	return forEach(nodes, func(name string) error {
		pid, ok := f.pids[name]
		if !ok {
			return nil
		}
		p := t.procsOf(name)
		gone := func() bool { return !p.Alive(ctx, pid) }
		gctx, cancel := context.WithTimeout(ctx, grace)
		err := waitState(gctx, "", gone)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("waiting for %s (pid %d) to exit after SIGTERM: %w", name, pid, ctx.Err())
			}
			t.emit(event.Note, name, fmt.Sprintf("stop: %s (pid %d) still running %s after SIGTERM; sending SIGKILL", name, pid, grace), "")
			if err := p.Signal(ctx, pid, syscall.SIGKILL); err != nil && p.Alive(ctx, pid) {
				return fmt.Errorf("stop %s: %w", name, err)
			}
			if err := waitState(ctx, fmt.Sprintf("%s (pid %d) to exit after SIGTERM and, %s later, SIGKILL", name, pid, grace), gone); err != nil {
				return err
			}
		}
		markDead(t, name, pid)
		return nil
	})
}

func (f *stopFault) Restore(ctx context.Context, t *Cluster, nodes []string) error {
	return f.restore.Inject(ctx, t, nodes)
}

func (f *stopFault) WaitRestored(ctx context.Context, t *Cluster, nodes []string) error {
	return f.restore.WaitEffective(ctx, t, nodes)
}

// startFault starts dead nodes again through the launcher, with the same
// data directory and addresses; nodes already running are left alone.
// Effective when the new processes run and the cluster is healthy.
type startFault struct {
	noLifecycle
	noUndo
	pids map[string]int
}

func (*startFault) Name() Action { return ActionStart }

// Repairs implements Repairer.
func (*startFault) Repairs() bool { return true }

func (f *startFault) Inject(ctx context.Context, t *Cluster, nodes []string) error {
	f.pids = map[string]int{}
	return forEach(nodes, func(name string) error {
		n, err := t.Node(name)
		if err != nil {
			return fmt.Errorf("start: %w", err)
		}
		if nodePaused(ctx, t.procs(&n), n) {
			return fmt.Errorf("start %s: it is paused (pid %d), not dead; resume it instead", name, n.PID)
		}
		if _, err := ownedProcess(ctx, t, name); err == nil {
			return nil // already running
		}
		cp := t.Snapshot()
		if err := t.Launcher.StartNode(ctx, t.Env, cp, name); err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		started, err := cp.Node(name)
		if err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		sn := copyNode(*started)
		if sn.PID > 0 && t.procs(&sn).Alive(ctx, sn.PID) {
			sn.Down = false
		}
		_ = t.UpdateNode(name, func(n *launcher.Node) { *n = sn })
		if sn.PID <= 0 {
			return fmt.Errorf("start %s: the launcher recorded no pid", name)
		}
		f.pids[name] = sn.PID
		return nil
	})
}

// checkStarted fails for started nodes whose process is gone again.
func checkStarted(ctx context.Context, t *Cluster, pids map[string]int) error {
	var errs []error
	for name, pid := range pids {
		if !t.procsOf(name).Alive(ctx, pid) {
			n, _ := t.Node(name)
			errs = append(errs, fmt.Errorf("%s (pid %d) exited after it was started; see %s", name, pid, n.LogFile))
		}
	}
	return errors.Join(errs...)
}

func (f *startFault) WaitEffective(ctx context.Context, t *Cluster, nodes []string) error {
	if err := checkStarted(ctx, t, f.pids); err != nil {
		return err
	}
	if err := t.WaitHealthy(ctx, fmt.Sprintf("for %s to serve after start", joinNodes(nodes))); err != nil {
		return err
	}
	return checkStarted(ctx, t, f.pids)
}

// restartFault stops the nodes (as stop does) and starts them again.
// Effective when the new processes run and the cluster is healthy.
type restartFault struct {
	noLifecycle
	noUndo
	stop  stopFault
	start startFault
}

func (*restartFault) Name() Action { return ActionRestart }

func (f *restartFault) Inject(ctx context.Context, t *Cluster, nodes []string) error {
	serr := f.stop.Inject(ctx, t, nodes)
	if werr := f.stop.WaitEffective(ctx, t, nodes); werr != nil {
		return errors.Join(serr, werr)
	}
	var stopped []string
	for _, name := range nodes {
		if _, ok := f.stop.pids[name]; ok {
			stopped = append(stopped, name)
		}
	}
	return errors.Join(serr, f.start.Inject(ctx, t, stopped))
}

func (f *restartFault) WaitEffective(ctx context.Context, t *Cluster, nodes []string) error {
	return f.start.WaitEffective(ctx, t, nodes)
}

// pauseFault sends SIGSTOP. Effective when the process is in stopped state;
// restored by resuming it.
type pauseFault struct {
	noLifecycle
	pids    map[string]int
	restore resumeFault
}

func (*pauseFault) Name() Action { return ActionPause }

func (f *pauseFault) Inject(ctx context.Context, t *Cluster, nodes []string) error {
	f.pids = map[string]int{}
	return forEach(nodes, func(name string) error {
		n, err := ownedProcess(ctx, t, name)
		if err != nil {
			return fmt.Errorf("pause %w", err)
		}
		p := t.procs(&n)
		if p.Stopped(ctx, n.PID) {
			return fmt.Errorf("pause %s: already paused (pid %d)", name, n.PID)
		}
		if err := p.Signal(ctx, n.PID, syscall.SIGSTOP); err != nil {
			return fmt.Errorf("pause %s: %w", name, err)
		}
		f.pids[name] = n.PID
		return nil
	})
}

func (f *pauseFault) WaitEffective(ctx context.Context, t *Cluster, nodes []string) error {
	return forEach(nodes, func(name string) error {
		pid, ok := f.pids[name]
		if !ok {
			return nil
		}
		p := t.procsOf(name)
		err := waitState(ctx, fmt.Sprintf("%s (pid %d) to be stopped after SIGSTOP", name, pid), func() bool {
			return p.Stopped(ctx, pid) || !p.Alive(ctx, pid)
		})
		if err != nil {
			return err
		}
		if !p.Alive(ctx, pid) {
			markDead(t, name, pid)
			return fmt.Errorf("pause %s: pid %d exited instead of stopping", name, pid)
		}
		return nil
	})
}

func (f *pauseFault) Restore(ctx context.Context, t *Cluster, nodes []string) error {
	return f.restore.Inject(ctx, t, nodes)
}

func (f *pauseFault) WaitRestored(ctx context.Context, t *Cluster, nodes []string) error {
	return f.restore.WaitEffective(ctx, t, nodes)
}

// resumeFault sends SIGCONT to paused nodes (running ones are left alone).
// Effective when no process is in stopped state and the cluster is healthy.
type resumeFault struct {
	noLifecycle
	noUndo
	pids map[string]int
}

func (*resumeFault) Name() Action { return ActionResume }

// Repairs implements Repairer.
func (*resumeFault) Repairs() bool { return true }

func (f *resumeFault) Inject(ctx context.Context, t *Cluster, nodes []string) error {
	f.pids = map[string]int{}
	return forEach(nodes, func(name string) error {
		n, err := ownedProcess(ctx, t, name)
		if err != nil {
			return fmt.Errorf("resume %w; start it instead", err)
		}
		p := t.procs(&n)
		if err := p.Signal(ctx, n.PID, syscall.SIGCONT); err != nil {
			if l, ok := p.(launcher.Leftovers); ok {
				return fmt.Errorf("resume %s: %w; left: %s", name, err, l.StoppedLeftover(n.PID))
			}
			return fmt.Errorf("resume %s: %w", name, err)
		}
		f.pids[name] = n.PID
		return nil
	})
}

func (f *resumeFault) WaitEffective(ctx context.Context, t *Cluster, nodes []string) error {
	err := forEach(nodes, func(name string) error {
		pid, ok := f.pids[name]
		if !ok {
			return nil
		}
		p := t.procsOf(name)
		return waitState(ctx, fmt.Sprintf("%s (pid %d) to run again after SIGCONT", name, pid), func() bool {
			return !p.Stopped(ctx, pid)
		})
	})
	if err != nil {
		return err
	}
	return t.WaitHealthy(ctx, fmt.Sprintf("for %s to serve after resume", joinNodes(nodes)))
}
