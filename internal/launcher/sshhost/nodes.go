package sshhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/procstat"
	"github.com/faultbench/faultbench/internal/remote"
)

// NodesDir is the directory under a host's faultbench directory that holds
// the node directories of every cluster faultbench started there
// (DIR/nodes/CLUSTER/NODE: data, node.log, pid). `faultbench cleanup
// --hosts` removes it.
const NodesDir = "nodes"

// nodeCallTimeout bounds one call to a node host (a signal, a look at
// /proc) when the caller's context has no sooner deadline.
const nodeCallTimeout = 15 * time.Second

// SpawnCommand is the hidden subcommand that starts a node detached on its
// host (see Spawn).
const SpawnCommand = "spawn"

// CleanupCommand is the hidden subcommand that `cleanup --hosts` runs on
// every host (see CleanNodes).
const CleanupCommand = "cleanup-host"

// NodeHosts reaches the hosts of one inventory over SSH for database nodes;
// it implements launcher.Hosts. Its hosts run the faultbench binary Bin
// (installed on first use).
type NodeHosts struct {
	inv  *remote.Inventory
	pool *remote.Pool
	bin  func() (*remote.Binary, error)
	abs  string

	mu       sync.Mutex
	binary   *remote.Binary       // hashed once, on first use
	prepared map[string][2]string // host name -> self, absolute dir
	seen     map[hostPid]procLook // recent looks at /proc, see procState
}

// hostPid names a process on a host.
type hostPid struct {
	host string
	pid  int
}

// procLook is one look at a process's /proc entries.
type procLook struct {
	at    time.Time
	state byte
	cmd   string
	gone  bool
}

// procLookTTL is how long one look at a process on a host answers the
// questions that follow it (alive? stopped? still the node's program?):
// each look is an SSH command, which a loaded host may take a good part
// of a second to run. A signal forgets the look.
const procLookTTL = 500 * time.Millisecond

// getBinary returns the binary to install, hashing it the first time.
func (hs *NodeHosts) getBinary() (*remote.Binary, error) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.binary == nil {
		b, err := hs.bin()
		if err != nil {
			return nil, err
		}
		hs.binary = b
	}
	return hs.binary, nil
}

var _ launcher.Hosts = (*NodeHosts)(nil)

// NewNodeHosts returns the node hosts of inv, reached through pool; bin
// returns the faultbench binary to install (called once a host needs it).
func NewNodeHosts(inv *remote.Inventory, pool *remote.Pool, bin func() (*remote.Binary, error)) (*NodeHosts, error) {
	abs, err := filepath.Abs(inv.Path)
	if err != nil {
		return nil, fmt.Errorf("inventory %s: %w", inv.Path, err)
	}
	return &NodeHosts{inv: inv, pool: pool, bin: bin, abs: abs, prepared: map[string][2]string{}, seen: map[hostPid]procLook{}}, nil
}

// Inventory implements launcher.Hosts.
func (hs *NodeHosts) Inventory() string { return hs.abs }

// Host implements launcher.Hosts.
func (hs *NodeHosts) Host(name string) (launcher.Host, error) {
	for _, h := range hs.inv.Hosts {
		if h.Name == name {
			return &nodeHost{hs: hs, h: h}, nil
		}
	}
	return nil, fmt.Errorf("host %q is not in the inventory %s", name, hs.abs)
}

// nodeHost is one inventory host as a launcher.Host.
type nodeHost struct {
	hs *NodeHosts
	h  remote.Host
}

func (n *nodeHost) run(ctx context.Context, argv ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, nodeCallTimeout)
	defer cancel()
	c, err := n.hs.pool.Get(ctx, n.h)
	if err != nil {
		return nil, err
	}
	return c.Run(ctx, argv, nil)
}

// Address implements launcher.Host.
func (n *nodeHost) Address() string { return n.h.Address }

// Prepare implements launcher.Host: it installs the binary (Binary.Install)
// and resolves the host's faultbench directory (created if missing).
func (n *nodeHost) Prepare(ctx context.Context) (string, string, error) {
	n.hs.mu.Lock()
	p, ok := n.hs.prepared[n.h.Name]
	n.hs.mu.Unlock()
	if ok && p[0] != "" {
		return p[0], p[1], nil
	}
	bin, err := n.hs.getBinary()
	if err != nil {
		return "", "", err
	}
	c, err := n.hs.pool.Get(ctx, n.h)
	if err != nil {
		return "", "", err
	}
	self, err := bin.Install(ctx, c)
	if err != nil {
		return "", "", fmt.Errorf("host %s: %w", n.h.Name, err)
	}
	dir, err := n.dir(ctx)
	if err != nil {
		return "", "", err
	}
	if !path.IsAbs(self) {
		self = path.Join(dir, strings.TrimPrefix(self, path.Clean(n.h.Dir)+"/"))
	}
	n.hs.mu.Lock()
	n.hs.prepared[n.h.Name] = [2]string{self, dir}
	n.hs.mu.Unlock()
	return self, dir, nil
}

// dir returns the host's faultbench directory as an absolute path
// (realpath -m: it need not exist).
func (n *nodeHost) dir(ctx context.Context) (string, error) {
	n.hs.mu.Lock()
	p, ok := n.hs.prepared[n.h.Name]
	n.hs.mu.Unlock()
	if ok {
		return p[1], nil
	}
	out, err := n.run(ctx, "realpath", "-m", "--", n.h.Dir)
	if err != nil {
		return "", fmt.Errorf("host %s: resolving %s: %w", n.h.Name, n.h.Dir, err)
	}
	dir := strings.TrimSpace(string(out))
	n.hs.mu.Lock()
	if _, ok := n.hs.prepared[n.h.Name]; !ok {
		n.hs.prepared[n.h.Name] = [2]string{"", dir}
	}
	n.hs.mu.Unlock()
	return dir, nil
}

// Spawn implements launcher.Host: `faultbench spawn` on the host starts
// argv in a session of its own and prints its pid. A node that runs an
// installed faultbench (argv[0] is DIR/bin/faultbench-HASH) is spawned by
// that same binary, which saves checking the installed copy again; any
// other program by the binary Prepare installs.
func (n *nodeHost) Spawn(ctx context.Context, argv []string, logFile string) (int, error) {
	if len(argv) == 0 {
		return 0, errors.New("spawn: empty command")
	}
	spawner := argv[0]
	if !strings.HasPrefix(path.Base(spawner), "faultbench-") || !path.IsAbs(spawner) {
		self, _, err := n.Prepare(ctx)
		if err != nil {
			return 0, err
		}
		spawner = self
	}
	out, err := n.run(ctx, append([]string{spawner, SpawnCommand, "--log", logFile, "--"}, argv...)...)
	if err != nil {
		return 0, fmt.Errorf("host %s: spawn %s: %w", n.h.Name, argv[0], err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("host %s: spawn printed %q, not a pid", n.h.Name, bytes.TrimSpace(out))
	}
	return pid, nil
}

// RemoveAll implements launcher.Host. It removes only paths inside the
// host's node directories (DIR/nodes/...), which faultbench created.
func (n *nodeHost) RemoveAll(ctx context.Context, p string) error {
	dir, err := n.dir(ctx)
	if err != nil {
		return err
	}
	root := path.Join(dir, NodesDir) + "/"
	if !strings.HasPrefix(path.Clean(p)+"/", root) || path.Clean(p)+"/" == root {
		return fmt.Errorf("host %s: refusing to remove %s: not inside %s", n.h.Name, p, root)
	}
	if _, err := n.run(ctx, "rm", "-rf", "--", path.Clean(p)); err != nil {
		return fmt.Errorf("host %s: %w", n.h.Name, err)
	}
	return nil
}

// LogTail implements launcher.Host.
func (n *nodeHost) LogTail(ctx context.Context, p string, maxLines int) string {
	out, err := n.run(ctx, "tail", "-n", strconv.Itoa(maxLines), "--", p)
	if err != nil {
		return "  (no log " + p + " on " + n.h.Name + ": " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return "  last lines of " + p + " on " + n.h.Name + ":\n    " + strings.Join(lines, "\n    ")
}

// signalName is sig's name for kill(1) ("" for signals not sent remotely).
func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGKILL:
		return "KILL"
	case syscall.SIGTERM:
		return "TERM"
	case syscall.SIGSTOP:
		return "STOP"
	case syscall.SIGCONT:
		return "CONT"
	case syscall.SIGINT:
		return "INT"
	case syscall.SIGHUP:
		return "HUP"
	}
	return ""
}

// Signal implements launcher.Procs with kill(1) on the host.
func (n *nodeHost) Signal(ctx context.Context, pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return fmt.Errorf("no process (pid %d) on %s", pid, n.h.Name)
	}
	name := signalName(sig)
	if name == "" {
		return fmt.Errorf("signal %v: not supported on remote hosts", sig)
	}
	n.hs.mu.Lock()
	delete(n.hs.seen, hostPid{n.h.Name, pid})
	n.hs.mu.Unlock()
	if _, err := n.run(ctx, "kill", "-s", name, strconv.Itoa(pid)); err != nil {
		return fmt.Errorf("signal %s to pid %d on %s: %w", name, pid, n.h.Name, err)
	}
	return nil
}

// procState reads /proc/PID/stat and cmdline on the host (or takes a look
// younger than procLookTTL). gone is true when the process does not exist;
// err is set when the host could not be asked.
func (n *nodeHost) procState(ctx context.Context, pid int) (state byte, cmd string, gone bool, err error) {
	if pid <= 0 {
		return 0, "", true, nil
	}
	key := hostPid{n.h.Name, pid}
	n.hs.mu.Lock()
	l, ok := n.hs.seen[key]
	n.hs.mu.Unlock()
	if ok && time.Since(l.at) < procLookTTL {
		return l.state, l.cmd, l.gone, nil
	}
	d := "/proc/" + strconv.Itoa(pid)
	at := time.Now()
	out, err := n.run(ctx, "cat", "--", d+"/stat", d+"/cmdline")
	l = procLook{at: at, gone: true}
	if err != nil {
		var ee *remote.ExitError
		if !errors.As(err, &ee) {
			return 0, "", false, err
		}
	} else {
		stat, rest, _ := bytes.Cut(out, []byte("\n"))
		if st, err := procstat.Parse(stat); err == nil {
			l.state, l.gone = st.State, false
			l.cmd = string(bytes.ReplaceAll(rest, []byte{0}, []byte{' '}))
		}
	}
	n.hs.mu.Lock()
	n.hs.seen[key] = l
	n.hs.mu.Unlock()
	return l.state, l.cmd, l.gone, nil
}

// Alive implements launcher.Procs. When the host cannot be asked it
// reports true: a process faultbench cannot see is not declared dead (a
// wait for its exit times out instead of being cut short).
func (n *nodeHost) Alive(ctx context.Context, pid int) bool {
	st, _, gone, err := n.procState(ctx, pid)
	if err != nil {
		return true
	}
	return !gone && st != 'Z' && st != 'X'
}

// Stopped implements launcher.Procs (false when the host cannot be asked).
func (n *nodeHost) Stopped(ctx context.Context, pid int) bool {
	st, _, gone, err := n.procState(ctx, pid)
	return err == nil && !gone && (st == 'T' || st == 't')
}

// RunsNode implements launcher.Procs: the pid is alive and its command
// line names the node's program. When the host cannot be asked it reports
// true (see Alive).
func (n *nodeHost) RunsNode(ctx context.Context, nd *launcher.Node) bool {
	st, cmd, gone, err := n.procState(ctx, nd.PID)
	if err != nil {
		return nd.PID > 0
	}
	if gone || st == 'Z' || st == 'X' {
		return false
	}
	if len(nd.Argv) == 0 || cmd == "" {
		return true
	}
	return strings.Contains(cmd, path.Base(launcher.Program(nd.Argv)))
}
