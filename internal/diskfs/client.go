package diskfs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Call makes one control call to the layer whose control socket is ctl.
func Call(ctx context.Context, ctl string, req Request) (Response, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, CallTimeout)
		defer cancel()
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", ctl)
	if err != nil {
		return Response{}, fmt.Errorf("disk layer %s: %w", ctl, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	b, err := json.Marshal(req)
	if err != nil {
		return Response{}, err
	}
	if _, err := c.Write(append(b, '\n')); err != nil {
		return Response{}, fmt.Errorf("disk layer %s: %w", ctl, err)
	}
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() {
		err := sc.Err()
		if err == nil {
			err = errors.New("no answer")
		}
		return Response{}, fmt.Errorf("disk layer %s: %s: %w", ctl, req.Op, err)
	}
	var resp Response
	if err := json.Unmarshal(sc.Bytes(), &resp); err != nil {
		return Response{}, fmt.Errorf("disk layer %s: %w", ctl, err)
	}
	if resp.Error != "" {
		return resp, fmt.Errorf("disk layer of %s: %s", resp.Status.Data, resp.Error)
	}
	return resp, nil
}

// Mounted reports whether path is a mount point (in /proc/self/mounts).
func Mounted(path string) bool {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return false
	}
	path = filepath.Clean(path)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && unescapeMount(f[1]) == path {
			return true
		}
	}
	return false
}

// MountsUnder lists the layer's mounts (file system type fuse.faultbench)
// at or below dir, for a test's or cleanup's check that none is left.
func MountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return nil
	}
	dir = filepath.Clean(dir)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasSuffix(f[2], ".faultbench") {
			continue
		}
		p := unescapeMount(f[1])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	return out
}

// unescapeMount undoes the octal escapes of /proc/mounts (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmount unmounts path: umount(2) as root (lazily with lazy, or when it
// is busy), else fusermount3 -u (-z).
func unmount(path string, lazy bool) error {
	if os.Geteuid() == 0 {
		flags := 0
		if lazy {
			flags = syscall.MNT_DETACH
		}
		err := syscall.Unmount(path, flags)
		if errors.Is(err, syscall.EBUSY) && !lazy {
			err = syscall.Unmount(path, syscall.MNT_DETACH)
		}
		if err != nil {
			return fmt.Errorf("unmounting %s: %w", path, err)
		}
		return nil
	}
	prog := "fusermount3"
	if _, err := exec.LookPath(prog); err != nil {
		prog = "fusermount"
	}
	args := []string{"-u", "-z", path}
	if !lazy {
		args = []string{"-u", path}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, prog, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("unmounting %s: %s: %w: %s", path, prog, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Ping reports whether the layer of data answers on its control socket
// and is mounted.
func Ping(ctx context.Context, data string) (Status, error) {
	l := LayoutOf(data)
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := Call(pctx, l.Ctl, Request{Op: CtlStatus})
	if err != nil {
		return Status{}, err
	}
	if !Mounted(l.Data) {
		return resp.Status, fmt.Errorf("disk layer: its server (pid %d) answers, but %s is not mounted", resp.Status.PID, l.Data)
	}
	return resp.Status, nil
}

// Starter starts a layer's server process: argv with its output appended
// to logFile.
type Starter func(argv []string, logFile string) error

// Ensure makes sure the layer is mounted on data and its server answers:
// nothing when it is, else it prepares the backing directory (moving what
// data holds already, written before the layer, into it), starts the
// server through start with self (the faultbench executable) and waits
// for it to mount and answer. A mount left by a dead server is removed
// first.
func Ensure(ctx context.Context, data, self string, dieWithParent bool, start Starter) error {
	l := LayoutOf(data)
	if err := l.Check(); err != nil {
		return err
	}
	if _, err := Ping(ctx, data); err == nil {
		return nil
	}
	if Mounted(l.Data) {
		if err := unmount(l.Data, true); err != nil {
			return fmt.Errorf("disk layer: removing the mount of a dead server: %w", err)
		}
	}
	if err := adopt(l); err != nil {
		return err
	}
	argv := []string{self, ServeCommand, "serve", "--data", l.Data}
	if dieWithParent {
		argv = append(argv, "--die-with-parent")
	}
	if err := start(argv, l.Log); err != nil {
		return fmt.Errorf("disk layer: starting its server: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	var last error
	for {
		if _, last = Ping(wctx, data); last == nil {
			return nil
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("disk layer on %s not ready within %v: %w\n%s", l.Data, ReadyTimeout, last, logTail(l.Log))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// adopt prepares the backing directory of l: created, and holding what
// the data directory holds (moved there) if it is new.
func adopt(l Layout) error {
	if err := os.MkdirAll(l.State, 0o755); err != nil {
		return fmt.Errorf("disk layer: %w", err)
	}
	if err := os.MkdirAll(l.Data, 0o755); err != nil {
		return fmt.Errorf("disk layer: %w", err)
	}
	ents, err := os.ReadDir(l.Data)
	if err != nil {
		return fmt.Errorf("disk layer: %w", err)
	}
	if _, err := os.Stat(l.Backing); err == nil {
		if len(ents) > 0 {
			return fmt.Errorf("disk layer: both %s and its backing directory %s hold files; remove one", l.Data, l.Backing)
		}
		return nil
	}
	if err := os.Mkdir(l.Backing, 0o755); err != nil {
		return fmt.Errorf("disk layer: %w", err)
	}
	if err := copyOwner(l.Data, l.Backing); err != nil {
		return err
	}
	return moveEntries(l.Data, l.Backing)
}

// copyOwner gives to the owner and mode of from.
func copyOwner(from, to string) error {
	var st syscall.Stat_t
	if err := syscall.Stat(from, &st); err != nil {
		return fmt.Errorf("disk layer: %w", err)
	}
	if err := os.Chown(to, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("disk layer: %w", err)
	}
	return os.Chmod(to, os.FileMode(st.Mode&0o7777))
}

// moveEntries moves every entry of from into to.
func moveEntries(from, to string) error {
	ents, err := os.ReadDir(from)
	if err != nil {
		return fmt.Errorf("disk layer: %w", err)
	}
	for _, e := range ents {
		if err := os.Rename(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return fmt.Errorf("disk layer: %w", err)
		}
	}
	return nil
}

// Release takes the layer off data: it unmounts it (its server then
// exits), moves the files of the backing directory back into data and
// removes the layer's state directory, as if the layer had never been
// there. Nothing is dropped: un-fsynced writes stay (a clean shutdown, not
// a crash). A data directory without a layer is left alone (one stat).
func Release(ctx context.Context, data string) error {
	l := LayoutOf(data)
	_, serr := os.Stat(l.State)
	if os.IsNotExist(serr) && !Mounted(l.Data) {
		return nil
	}
	if Mounted(l.Data) {
		if err := unmount(l.Data, false); err != nil {
			return fmt.Errorf("disk layer: %w", err)
		}
	}
	for Mounted(l.Data) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("disk layer: %s still mounted: %w", l.Data, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if _, err := os.Stat(l.Backing); err == nil {
		if err := os.MkdirAll(l.Data, 0o755); err != nil {
			return fmt.Errorf("disk layer: %w", err)
		}
		if ents, _ := os.ReadDir(l.Data); len(ents) > 0 {
			return fmt.Errorf("disk layer: %s holds files after unmounting; its data stays in %s", l.Data, l.Backing)
		}
		if err := moveEntries(l.Backing, l.Data); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(l.State); err != nil {
		return fmt.Errorf("disk layer: %w", err)
	}
	return nil
}

// logTail is the end of a server's log, for errors.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "  (no server log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return "  last lines of " + path + ":\n    " + strings.Join(lines, "\n    ")
}

// Flush has the kernel write back the dirty pages it caches for the files
// of the layer on data (syncfs(2) of the mount): writes made through a
// shared writable mmap (Cassandra's commit log, Galera's gcache) reach the
// layer only then, as writes not yet fsynced. A power loss flushes before
// the crash, so that those pages are dropped with the rest instead of
// reaching the disk after it. It waits at most until ctx ends (a stalled
// layer never answers; the syncfs is then left to finish on its own).
func Flush(ctx context.Context, data string) error {
	done := make(chan error, 1)
	go func() {
		f, err := os.Open(data)
		if err != nil {
			done <- fmt.Errorf("disk layer: %w", err)
			return
		}
		defer f.Close()
		if err := unix.Syncfs(int(f.Fd())); err != nil {
			done <- fmt.Errorf("disk layer: syncfs %s: %w", data, err)
			return
		}
		done <- nil
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("disk layer: syncfs %s: %w", data, ctx.Err())
	}
}
