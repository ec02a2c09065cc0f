package launcher

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"
)

// Procs acts on the processes of one host: this machine (LocalProcs) or an
// inventory host reached over SSH (internal/remote). Fault and launcher code
// goes through it, never to the kernel directly, so that a node's Host
// decides where a signal goes.
type Procs interface {
	// Signal sends sig to pid.
	Signal(ctx context.Context, pid int, sig syscall.Signal) error
	// Alive reports whether pid is a running (not zombie) process.
	Alive(ctx context.Context, pid int) bool
	// Stopped reports whether pid is stopped by a signal (SIGSTOP).
	Stopped(ctx context.Context, pid int) bool
	// RunsNode reports whether n's recorded pid is alive and still runs
	// n's program (a guard against acting on a reused pid).
	RunsNode(ctx context.Context, n *Node) bool
}

// Host is a machine other than this one that nodes run on, by its
// inventory name (internal/remote implements it over SSH). Every call has
// a deadline of its own.
type Host interface {
	Procs
	// Address is the host's IP or DNS name, which its nodes listen on.
	Address() string
	// Prepare makes the host ready for nodes: the faultbench binary
	// installed (when missing or of another version). It returns the
	// binary's path there and faultbench's absolute directory there.
	Prepare(ctx context.Context) (self, dir string, err error)
	// Spawn starts argv on the host in a session of its own (it outlives
	// the SSH connection), standard output and error appended to logFile,
	// its pid written to the file "pid" next to logFile, and returns the pid.
	Spawn(ctx context.Context, argv []string, logFile string) (int, error)
	// RemoveAll removes path on the host (missing is fine).
	RemoveAll(ctx context.Context, path string) error
	// LogTail is LogTail of a file on the host.
	LogTail(ctx context.Context, path string, maxLines int) string
}

// Hosts finds the hosts of one inventory by name.
type Hosts interface {
	// Host returns the host named name.
	Host(name string) (Host, error)
	// Inventory is the inventory file's absolute path, recorded in the
	// cluster's state so that later commands reach the same hosts.
	Inventory() string
}

// LocalProcs is Procs on this machine.
type LocalProcs struct{}

// Signal implements Procs.
func (LocalProcs) Signal(_ context.Context, pid int, sig syscall.Signal) error {
	return Signal(pid, sig)
}

// Alive implements Procs.
func (LocalProcs) Alive(_ context.Context, pid int) bool { return Alive(pid) }

// Stopped implements Procs.
func (LocalProcs) Stopped(_ context.Context, pid int) bool { return Stopped(pid) }

// RunsNode implements Procs.
func (LocalProcs) RunsNode(_ context.Context, n *Node) bool { return RunsNode(n) }

// unreachable is the Procs of a node whose host cannot be reached (no
// inventory attached, or the host is not in it): it sees no process and
// refuses signals with the reason.
type unreachable struct{ err error }

func (u unreachable) Signal(context.Context, int, syscall.Signal) error { return u.err }
func (unreachable) Alive(context.Context, int) bool                     { return false }
func (unreachable) Stopped(context.Context, int) bool                   { return false }
func (unreachable) RunsNode(context.Context, *Node) bool                { return false }

// host returns the Host node n runs on (an error for a local node or when
// the cluster has no Hosts).
func (c *Cluster) host(n *Node) (Host, error) {
	if n.Host == "" {
		return nil, fmt.Errorf("%s runs on this machine", n.Name)
	}
	if c.Hosts == nil {
		return nil, fmt.Errorf("%s runs on host %s, but cluster %s has no inventory to reach it (recorded: %q)", n.Name, n.Host, c.Name, c.Inventory)
	}
	h, err := c.Hosts.Host(n.Host)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", n.Name, err)
	}
	return h, nil
}

// ProcsOf returns the Procs of the host node n runs on: LocalProcs for a
// node of this machine, the SSH host for a node with a Host.
func (c *Cluster) ProcsOf(n *Node) Procs {
	if n.Host == "" {
		return LocalProcs{}
	}
	h, err := c.host(n)
	if err != nil {
		return unreachable{err}
	}
	return h
}

// RunsNodeOn is RunsNode for n of c, on n's host.
func (c *Cluster) RunsNodeOn(ctx context.Context, n *Node) bool {
	return c.ProcsOf(n).RunsNode(ctx, n)
}

// SpawnNode starts node n of c with its recorded command line: on this
// machine through Spawn (detached as c is), on n's host through its Spawn
// (always in a session of its own: nothing ties it to this process).
func (e *Env) SpawnNode(ctx context.Context, c *Cluster, n *Node) (int, error) {
	if n.Host == "" {
		if err := e.ReadyDisk(ctx, c, n); err != nil {
			return 0, fmt.Errorf("spawn %s: %w", n.Name, err)
		}
		return e.Spawn(n.Argv, n.LogFile, c.Detached)
	}
	h, err := c.host(n)
	if err != nil {
		return 0, fmt.Errorf("spawn: %w", err)
	}
	if n.Found != nil {
		return StartFound(ctx, h, c.Name, n)
	}
	return h.Spawn(ctx, n.Argv, n.LogFile)
}

// StartFound starts node n of an existing cluster on h the way its
// inventory says (Node.Found) and returns its pid once it is found running
// (within a minute, or ctx's deadline).
func StartFound(ctx context.Context, h Host, cluster string, n *Node) (int, error) {
	pf, ok := h.(ProcessFinder)
	if !ok {
		return 0, fmt.Errorf("%s: its host cannot find or start processes", n.Name)
	}
	if err := pf.StartFound(ctx, n.Found, cluster, n.Name); err != nil {
		return 0, fmt.Errorf("starting %s (%s): %w", n.Name, n.Found.What(), err)
	}
	ctx, cancel := WithDefaultTimeout(ctx, time.Minute)
	defer cancel()
	for {
		pid, err := pf.FindPID(ctx, n.Found)
		if err == nil && pid > 0 && h.Alive(ctx, pid) {
			return pid, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%s started, but its process is not found by its %s (last error: %v): %w", n.Name, n.Found.What(), err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ReadyDisk puts the disk layer under n's data directory when e has one
// (Env.Disk) and n is a node of this machine with a data directory; it does
// nothing otherwise. Launchers that spawn a node with a command line other
// than its recorded Argv (or prepare its directory with other programs
// first) call it before; SpawnNode calls it itself.
func (e *Env) ReadyDisk(ctx context.Context, c *Cluster, n *Node) error {
	if e.Disk == nil || n.Host != "" || n.DataDir == "" {
		return nil
	}
	return e.Disk.Ready(ctx, c, n)
}

// DiskLayer is a file-system layer under nodes' data directories (the
// disk faults' FUSE layer, internal/diskfs): Env.Disk.
type DiskLayer interface {
	// Ready makes sure the layer is mounted on n's data directory (and
	// its server runs) before n's process starts.
	Ready(ctx context.Context, c *Cluster, n *Node) error
}

// NodeLogTail is LogTail of n's log file, read on n's host.
func (c *Cluster) NodeLogTail(ctx context.Context, n *Node, maxLines int) string {
	if n.Host == "" {
		return LogTail(n.LogFile, maxLines)
	}
	h, err := c.host(n)
	if err != nil {
		return "  (no log: " + err.Error() + ")"
	}
	return h.LogTail(ctx, n.LogFile, maxLines)
}

// TerminateOn stops pid through p: SIGCONT (in case it is paused),
// SIGTERM, and SIGKILL if it has not exited after grace. It waits for the
// exit (at most grace+5s after the SIGKILL).
func TerminateOn(ctx context.Context, p Procs, pid int, grace time.Duration) error {
	if !p.Alive(ctx, pid) {
		return nil
	}
	_ = p.Signal(ctx, pid, syscall.SIGCONT)
	_ = p.Signal(ctx, pid, syscall.SIGTERM)
	gctx, cancel := context.WithTimeout(ctx, grace)
	err := waitGone(gctx, p, pid)
	cancel()
	if err == nil {
		return nil
	}
	if err := p.Signal(ctx, pid, syscall.SIGKILL); err != nil && p.Alive(ctx, pid) {
		return err
	}
	kctx, kcancel := context.WithTimeout(ctx, 5*time.Second)
	defer kcancel()
	return waitGone(kctx, p, pid)
}

// waitGone waits until pid is gone (as p sees it) or ctx ends. Remote
// hosts are polled less often than this machine.
func waitGone(ctx context.Context, p Procs, pid int) error {
	every := 10 * time.Millisecond
	if _, local := p.(LocalProcs); !local {
		every = 100 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for p.Alive(ctx, pid) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for pid %d to exit: %w", pid, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// RunsNodes is RunsNodeOn for every node of c, asked of all hosts at once
// (a remote host answers each question with an SSH command); out[i] is for
// c.Nodes[i].
func (c *Cluster) RunsNodes(ctx context.Context) []bool {
	out := make([]bool, len(c.Nodes))
	var wg sync.WaitGroup
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Host == "" {
			out[i] = RunsNode(n)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = c.RunsNodeOn(ctx, n)
		}()
	}
	wg.Wait()
	return out
}
