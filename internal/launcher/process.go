package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/procstat"
)

// Env is what launchers need from the process that runs them: a way to
// spawn node processes, the address plan, the faultbench executable (for
// node kinds the binary runs itself) and an optional observer of exits.
// One Env serves one faultbench process; build it with NewEnv.
type Env struct {
	// Self is the path of the faultbench executable, for `faultbench node ...`.
	Self string
	// Addrs assigns node addresses; the only place that does.
	Addrs Addresser
	// OnExit, if set, is called (from a background goroutine) when a node
	// process this Env spawned exits, with its pid and wait status text.
	OnExit func(pid int, status string)
	// Remote reaches inventory hosts, for clusters whose nodes run there
	// (Spec.Hosts); nil when no inventory was given.
	Remote Hosts
	// Disk, if set, puts a file-system layer under the data directory of
	// every node of this machine before SpawnNode starts it (disk faults,
	// internal/diskfs); nil: nodes use their directories as they are.
	Disk DiskLayer
	// Clock, if set, starts every node program (not faultbench's own
	// processes) under libfaketime with a control file of its own, for
	// clock faults (see ClockEnviron, WithClock); false: nodes start as
	// they are, at no cost.
	Clock bool

	spawnReq chan spawnReq
	mu       sync.Mutex
	waiting  map[int]chan struct{}
	once     sync.Once
}

// NewEnv returns an Env for this process with loopback addresses. Nodes the
// faultbench binary runs itself are started from $FAULTBENCH_SELF when set
// (tests point it at a normally built binary), else from this executable.
func NewEnv() (*Env, error) {
	self := os.Getenv("FAULTBENCH_SELF")
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("locating the faultbench executable: %w", err)
		}
	}
	return &Env{Self: self, Addrs: LoopbackAddresser{}, waiting: map[int]chan struct{}{}}, nil
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// The spawner goroutine is locked to one OS thread that never exits, so
// that Pdeathsig (which fires when the *thread* that forked the child dies)
// fires only when this process dies.
func (e *Env) spawner() {
	e.once.Do(func() {
		e.spawnReq = make(chan spawnReq)
		ready := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(ready)
			for r := range e.spawnReq {
				r.done <- r.cmd.Start()
			}
		}()
		<-ready
	})
}

// Spawn starts argv with stdout and stderr appended to logFile. A detached
// process gets its own session and outlives faultbench (it is found again
// through the state file); any other process is killed by the kernel when
// faultbench dies, whatever the cause. Spawn reaps its children and reports
// their exit through OnExit.
func (e *Env) Spawn(argv []string, logFile string, detached bool) (int, error) {
	if len(argv) == 0 {
		return 0, errors.New("spawn: empty command")
	}
	if err := os.MkdirAll(filepath.Dir(logFile), 0o755); err != nil {
		return 0, fmt.Errorf("spawn %s: %w", argv[0], err)
	}
	lf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("spawn %s: %w", argv[0], err)
	}
	defer lf.Close()
	environ, err := e.clockEnviron(argv, logFile)
	if err != nil {
		return 0, fmt.Errorf("spawn %s: %w", argv[0], err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = environ
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Stdin = nil
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	e.spawner()
	done := make(chan error, 1)
	e.spawnReq <- spawnReq{cmd: cmd, done: done}
	if err := <-done; err != nil {
		return 0, fmt.Errorf("spawn %s: %w", strings.Join(argv, " "), err)
	}
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	e.mu.Lock()
	e.waiting[pid] = exited
	e.mu.Unlock()
	go func() {
		err := cmd.Wait()
		status := "exited 0"
		if err != nil {
			status = err.Error()
		}
		e.mu.Lock()
		delete(e.waiting, pid)
		e.mu.Unlock()
		close(exited)
		if e.OnExit != nil {
			e.OnExit(pid, status)
		}
	}()
	return pid, nil
}

// Alive reports whether pid is a running (not zombie) process.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	return procstat.Alive(pid)
}

// Stopped reports whether pid is stopped by a signal (SIGSTOP).
func Stopped(pid int) bool {
	s, err := procstat.Read(procstat.Root, pid)
	return err == nil && s.Stopped()
}

// RunsNode reports whether n's recorded process is alive and is still n's
// program (a guard against acting on a reused pid). A process whose command
// line reads empty is in the middle of exec right after a spawn and counts
// as n's: that window was seen in about 1 of 300 spawns.
func RunsNode(n *Node) bool {
	if n.PID <= 0 || !Alive(n.PID) {
		return false
	}
	if len(n.Argv) == 0 {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(n.PID) + "/cmdline")
	if err != nil {
		return false
	}
	return len(b) == 0 || bytes.Contains(bytes.ReplaceAll(b, []byte{0}, []byte{' '}), []byte(filepath.Base(Program(n.Argv))))
}

// Program returns the program a node's command line runs: argv[0], or for a
// command line wrapped to run in a network namespace (`faultbench
// netns-exec NS -- PROGRAM ...`, see ArgvWrapper) the PROGRAM the wrapper
// becomes.
func Program(argv []string) string {
	if _, prog := SplitWrapper(argv); len(prog) > 0 {
		return prog[0]
	}
	return ""
}

// SplitWrapper splits a node's command line into the wrapper that runs it
// in a network namespace (`faultbench netns-exec NS --`, see ArgvWrapper)
// and the program's own command line. An argv that is not wrapped has no
// wrapper. Launchers that run a node's program through another one (a
// change of user, a PID namespace) put that between the two, because only
// the wrapper, which runs as root, can enter the namespace.
func SplitWrapper(argv []string) (wrapper, prog []string) {
	if len(argv) > 4 && argv[1] == "netns-exec" && argv[3] == "--" {
		return argv[:4:4], argv[4:]
	}
	return nil, argv
}

// CmdlineContains reports whether pid's command line contains s (a guard
// against acting on a reused pid).
func CmdlineContains(pid int, s string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	return bytes.Contains(bytes.ReplaceAll(b, []byte{0}, []byte{' '}), []byte(s))
}

// Signal sends sig to pid.
func Signal(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return fmt.Errorf("no process (pid %d)", pid)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("signal %v to pid %d: %w", sig, pid, err)
	}
	return nil
}

// WaitExit waits until pid is gone or ctx ends.
func WaitExit(ctx context.Context, pid int) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for Alive(pid) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for pid %d to exit: %w", pid, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// Terminate stops pid: SIGCONT (in case it is paused), SIGTERM, and SIGKILL
// if it has not exited after grace. It waits for the exit (at most grace+5s).
func Terminate(ctx context.Context, pid int, grace time.Duration) error {
	if !Alive(pid) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGCONT)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	gctx, cancel := context.WithTimeout(ctx, grace)
	err := WaitExit(gctx, pid)
	cancel()
	if err == nil {
		return nil
	}
	return Kill(ctx, pid)
}

// Kill sends SIGKILL to pid and waits (at most 5 s) until it is gone.
func Kill(ctx context.Context, pid int) error {
	if !Alive(pid) {
		return nil
	}
	if err := Signal(pid, syscall.SIGKILL); err != nil && Alive(pid) {
		return err
	}
	kctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return WaitExit(kctx, pid)
}

// Addresser assigns node addresses. It is the one place that decides where a
// node listens; a later network-namespace launcher replaces it.
type Addresser interface {
	// Host returns the IP node i (0-based) of a cluster listens on.
	Host(i int) string
	// Port returns a free TCP port on host.
	Port(host string) (int, error)
}

// ArgvWrapper is an optional ability of an Addresser whose nodes must run
// somewhere special, e.g. inside a network namespace of their own
// (internal/netns): it turns node i's command line into the one to spawn.
type ArgvWrapper interface {
	// WrapArgv returns the command line that runs argv as node i (0-based).
	WrapArgv(i int, argv []string) []string
}

// NodeArgv returns the command line that starts node i (0-based) with argv:
// argv itself, unless the Addresser wraps it (see ArgvWrapper). Launchers
// record the result as Node.Argv, so restarts run the same way.
func (e *Env) NodeArgv(i int, argv []string) []string {
	if w, ok := e.Addrs.(ArgvWrapper); ok {
		return w.WrapArgv(i, argv)
	}
	return argv
}

// LoopbackAddresser puts every node on 127.0.0.1 with free ports.
type LoopbackAddresser struct{}

// Host implements Addresser.
func (LoopbackAddresser) Host(int) string { return "127.0.0.1" }

// Port implements Addresser by asking the kernel for a free port.
func (LoopbackAddresser) Port(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitTCP waits until addr accepts TCP connections or ctx ends.
func WaitTCP(ctx context.Context, addr string) error {
	var d net.Dialer
	for {
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		c, err := d.DialContext(cctx, "tcp", addr)
		cancel()
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to accept connections: %w", addr, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
