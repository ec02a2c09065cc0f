package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// getsid returns this process's session id.
func getsid() int {
	sid, err := unix.Getsid(0)
	if err != nil {
		return -1
	}
	return sid
}

// ExecCommand is the hidden faultbench command that runs a program inside a
// named namespace: `faultbench netns-exec NS -- PROGRAM ARGS...`.
const ExecCommand = "netns-exec"

// Exec is the body of `faultbench netns-exec NS -- ARGV...`: it locks its
// thread, moves it into the named network namespace and replaces the
// process with ARGV (execve, no shell). Call it on the main thread (lock
// the main goroutine in an init function when this command is asked for):
// an execve from another thread briefly shows the pid as a zombie. The program keeps this process's
// pid, environment, open stdout/stderr and parent-death signal. It returns
// only on error.
func Exec(args []string) error {
	if len(args) < 3 || args[1] != "--" {
		return fmt.Errorf("usage: faultbench %s NAMESPACE -- PROGRAM [ARGS...]", ExecCommand)
	}
	name, argv := args[0], args[2:]
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("%s: %w", ExecCommand, err)
	}
	ppid := os.Getppid()
	// The namespace belongs to the thread; execve keeps the calling thread's.
	runtime.LockOSThread()
	// So does the parent-death signal, and this thread was not the one
	// forked with it: a node that dies with faultbench (not a session
	// leader, see launcher.Env.Spawn) gets it again here.
	if unix.Getpid() != getsid() {
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
			return fmt.Errorf("%s: parent-death signal: %w", ExecCommand, err)
		}
		if os.Getppid() != ppid {
			return fmt.Errorf("%s: faultbench exited before the node started", ExecCommand)
		}
	}
	ns, err := vnetns.GetFromName(name)
	if err != nil {
		return fmt.Errorf("%s: namespace %s: %w", ExecCommand, name, err)
	}
	if err := vnetns.Set(ns); err != nil {
		return fmt.Errorf("%s: entering namespace %s: %w", ExecCommand, name, err)
	}
	ns.Close()
	if err := syscall.Exec(path, argv, os.Environ()); err != nil {
		return fmt.Errorf("%s: exec %s: %w", ExecCommand, path, err)
	}
	return nil
}

// Do runs fn on a thread inside the named namespace and returns its error.
// Sockets fn opens belong to that namespace for their whole life.
func Do(name string, fn func() error) error {
	ns, err := vnetns.GetFromName(name)
	if err != nil {
		return fmt.Errorf("namespace %s: %w", name, err)
	}
	defer ns.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := vnetns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		if err := vnetns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering namespace %s: %w", name, err)
			return
		}
		ferr := fn()
		if err := vnetns.Set(orig); err != nil {
			// leave the thread locked: it dies with this goroutine
			errc <- errors.Join(ferr, fmt.Errorf("leaving namespace %s: %w", name, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Reach reports whether a TCP connection from inside namespace ns to addr
// (host:port) is established within timeout. A refused connection counts as
// reached (the packets got through); only a timeout or an unreachable
// network counts as not reached.
func Reach(ctx context.Context, ns, addr string, timeout time.Duration) (bool, error) {
	var reached bool
	err := Do(ns, func() error {
		dctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var d net.Dialer
		c, err := d.DialContext(dctx, "tcp", addr)
		if err == nil {
			c.Close()
			reached = true
			return nil
		}
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
			reached = true
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return reached, ctx.Err()
}
