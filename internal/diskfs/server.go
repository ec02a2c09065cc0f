package diskfs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Mount is one layer mounted in this process.
type Mount struct {
	lay   Layout
	srv   *fuse.Server
	l     *layer
	mu    sync.Mutex // guards crashes, last
	crash int
	last  *CrashReport
}

// mountLayer mounts the layer of l: the backing directory (created if
// missing) on the data directory (created if missing). Kernel caches of
// names and attributes are off, so that what a crash puts back is what the
// next lookup sees.
func mountLayer(l Layout) (*Mount, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	for _, d := range []string{l.Backing, l.Data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("disk layer: %w", err)
		}
	}
	root, lay, err := newLayer(l.Backing, l.Trash)
	if err != nil {
		return nil, fmt.Errorf("disk layer: %w", err)
	}
	zero := time.Duration(0)
	opts := &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName:      "faultbench-diskfs",
			Name:        "faultbench",
			AllowOther:  os.Geteuid() == 0, // nodes that run as a database user reach it too
			DirectMount: os.Geteuid() == 0,
			Options:     []string{"default_permissions"},
			MaxWrite:    1 << 20,
		},
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
	}
	srv, err := fs.Mount(l.Data, root, opts)
	if err != nil {
		return nil, fmt.Errorf("disk layer: mounting %s on %s: %w", l.Backing, l.Data, err)
	}
	return &Mount{lay: l, srv: srv, l: lay}, nil
}

// Crash drops every change that is not durable (see the package comment).
// The node's processes must be dead: whatever still writes through the
// mount waits until the backing directory is put back.
func (m *Mount) Crash() CrashReport {
	m.l.gate.Lock()
	r := m.l.t.crash()
	m.l.gate.Unlock()
	m.mu.Lock()
	m.crash++
	m.last = &r
	m.mu.Unlock()
	return r
}

// SetFaults replaces the faults in effect.
func (m *Mount) SetFaults(f Faults) { m.l.in.set(f) }

// Faults returns the faults in effect.
func (m *Mount) Faults() Faults { f, _ := m.l.in.get(); return f }

// Status says what the layer holds.
func (m *Mount) Status() Status {
	m.l.gate.RLock()
	files, bytes, meta := m.l.t.pending()
	m.l.gate.RUnlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	return Status{PID: os.Getpid(), Data: m.lay.Data, Backing: m.lay.Backing, Faults: m.Faults(),
		DirtyFiles: files, DirtyBytes: bytes, MetaPending: meta, Crashes: m.crash, LastCrash: m.last}
}

// Unmount unmounts the layer; a mount still in use is detached lazily
// (it goes once its last user closes it). Faults are cleared first so that
// a stalled operation does not hold the mount.
func (m *Mount) Unmount() error {
	m.SetFaults(Faults{})
	if err := m.srv.Unmount(); err == nil {
		return nil
	}
	return unmount(m.lay.Data, true)
}

// Status is what a layer's server reports.
type Status struct {
	PID         int          `json:"pid"`
	Data        string       `json:"data"`
	Backing     string       `json:"backing"`
	Faults      Faults       `json:"faults"`
	DirtyFiles  int          `json:"dirty_files"`  // files with writes not fsynced
	DirtyBytes  int64        `json:"dirty_bytes"`  // old bytes kept to put them back
	MetaPending int          `json:"meta_pending"` // name changes not durable
	Crashes     int          `json:"crashes"`
	LastCrash   *CrashReport `json:"last_crash,omitempty"`
}

// Control operations (Request.Op).
const (
	CtlStatus = "status" // report Status
	CtlSet    = "set"    // add Request.Faults (replacing faults of the same kinds)
	CtlClear  = "clear"  // remove the faults Request.Names (none: all)
	CtlCrash  = "crash"  // drop what is not durable; the reply carries the CrashReport
	// CtlSync makes everything durable now, as the kernel's writeback
	// would in time (a test's starting point: what was written before is
	// not at stake).
	CtlSync = "sync"
)

// Request is one control call.
type Request struct {
	Op     string   `json:"op"`
	Faults Faults   `json:"faults"`
	Names  []string `json:"names,omitempty"`
}

// Response answers a Request.
type Response struct {
	Error  string       `json:"error,omitempty"`
	Status Status       `json:"status"`
	Crash  *CrashReport `json:"crash,omitempty"`
}

// handle answers one request.
func (m *Mount) handle(req Request) Response {
	var resp Response
	switch req.Op {
	case CtlStatus:
	case CtlSet:
		if err := req.Faults.Validate(); err != nil {
			resp.Error = err.Error()
			break
		}
		m.SetFaults(m.Faults().Merge(req.Faults))
	case CtlClear:
		m.SetFaults(m.Faults().Without(req.Names))
	case CtlCrash:
		r := m.Crash()
		resp.Crash = &r
	case CtlSync:
		m.l.gate.Lock()
		m.l.t.durableAll()
		m.l.gate.Unlock()
	default:
		resp.Error = fmt.Sprintf("unknown control operation %q", req.Op)
	}
	resp.Status = m.Status()
	return resp
}

// serveControl answers control calls on ln until it is closed.
func (m *Mount) serveControl(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(CallTimeout))
			sc := bufio.NewScanner(c)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			enc := json.NewEncoder(c)
			for sc.Scan() {
				var req Request
				resp := Response{}
				if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
					resp.Error = "bad request: " + err.Error()
				} else {
					resp = m.handle(req)
				}
				if enc.Encode(resp) != nil {
					return
				}
			}
		}()
	}
}

// ServeOptions are the options of Serve.
type ServeOptions struct {
	// DieWithParent makes the server unmount and exit when the process
	// that started it dies (a layer under a cluster that dies with its
	// faultbench).
	DieWithParent bool
	// Log receives the server's messages (nil: standard error).
	Log *log.Logger
}

// Serve is the body of `faultbench diskfs serve --data DIR`: it mounts the
// layer of DIR, answers control calls on its socket, and runs until ctx
// ends (SIGTERM) or the mount is unmounted from outside (Release), then
// unmounts and removes the socket.
func Serve(ctx context.Context, data string, o ServeOptions) error {
	lg := o.Log
	if lg == nil {
		lg = log.New(os.Stderr, "faultbench diskfs: ", log.LstdFlags|log.Lmicroseconds|log.LUTC)
	}
	if o.DieWithParent {
		ppid := os.Getppid()
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
			return fmt.Errorf("disk layer: %w", err)
		}
		if os.Getppid() != ppid { // the parent died before the request
			return errors.New("disk layer: the process that started the server is gone")
		}
	}
	l := LayoutOf(data)
	if err := l.Check(); err != nil {
		return err
	}
	m, err := mountLayer(l)
	if err != nil {
		return err
	}
	_ = os.Remove(l.Ctl)
	ln, err := net.Listen("unix", l.Ctl)
	if err != nil {
		_ = m.Unmount()
		return fmt.Errorf("disk layer: control socket: %w", err)
	}
	go m.serveControl(ln)
	lg.Printf("pid %d: %s mounted on %s, control %s", os.Getpid(), l.Backing, l.Data, l.Ctl)
	done := make(chan struct{})
	go func() { m.srv.Wait(); close(done) }()
	select {
	case <-done:
		lg.Printf("unmounted from outside")
	case <-ctx.Done():
		lg.Printf("stopping: %v", context.Cause(ctx))
		if err := m.Unmount(); err != nil {
			lg.Printf("unmount: %v", err)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	}
	ln.Close()
	_ = os.Remove(l.Ctl)
	return nil
}
