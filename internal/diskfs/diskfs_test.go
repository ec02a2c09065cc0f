package diskfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// needFuse skips a test on a machine where the layer cannot be mounted.
func needFuse(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting the layer in tests needs root (allow_other)")
	}
}

// mountT mounts a fresh layer under a temp dir and unmounts it when the
// test ends, failing it if a mount is left behind.
func mountT(t *testing.T) (*Mount, Layout) {
	t.Helper()
	needFuse(t)
	dir := t.TempDir()
	l := LayoutOf(filepath.Join(dir, "data"))
	m, err := mountLayer(l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
		if left := MountsUnder(dir); len(left) > 0 {
			t.Errorf("mounts left behind: %v", left)
		}
	})
	return m, l
}

// fsh is the file-system steps of the tests, each failing the test on error.
type fsh struct {
	t    *testing.T
	data string
}

func (h fsh) p(name string) string { return filepath.Join(h.data, name) }

func (h fsh) write(name, s string, sync bool) {
	h.t.Helper()
	f, err := os.OpenFile(h.p(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		h.t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h fsh) syncDir(name string) {
	h.t.Helper()
	d, err := os.Open(h.p(name))
	if err != nil {
		h.t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		h.t.Fatal(err)
	}
}

func (h fsh) do(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// read returns name's content, "<none>" when it does not exist.
func (h fsh) read(name string) string {
	h.t.Helper()
	b, err := os.ReadFile(h.p(name))
	if errors.Is(err, os.ErrNotExist) {
		return "<none>"
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return string(b)
}

// durable writes name with s and makes it and its entry durable.
func (h fsh) durable(name, s string) {
	h.t.Helper()
	h.write(name, s, true)
	h.syncDir(".")
}

func TestPowerLoss(t *testing.T) {
	tests := []struct {
		name  string
		steps func(h fsh)
		want  map[string]string // content after the crash by name
	}{
		{"unsynced append is lost", func(h fsh) {
			h.durable("a", "hello")
			h.write("a", " world", false)
		}, map[string]string{"a": "hello"}},
		{"synced append survives", func(h fsh) {
			h.durable("a", "hello")
			h.write("a", " world", true)
		}, map[string]string{"a": "hello world"}},
		{"new file without fsync is gone", func(h fsh) {
			h.write("a", "hello", false)
		}, map[string]string{"a": "<none>"}},
		{"new file with its own fsync survives", func(h fsh) {
			h.write("a", "hello", true)
		}, map[string]string{"a": "hello"}},
		{"overwrite in place without fsync is lost", func(h fsh) {
			h.durable("a", "hello world")
			f, err := os.OpenFile(h.p("a"), os.O_WRONLY, 0)
			h.do(err)
			_, err = f.WriteAt([]byte("HELLO"), 0)
			h.do(err)
			_, err = f.WriteAt([]byte("W"), 6)
			h.do(err)
			h.do(f.Close())
		}, map[string]string{"a": "hello world"}},
		{"truncate without fsync is undone", func(h fsh) {
			h.durable("a", "hello world")
			h.do(os.Truncate(h.p("a"), 2))
			h.write("a", "y", false)
		}, map[string]string{"a": "hello world"}},
		{"O_TRUNC rewrite without fsync is undone", func(h fsh) {
			h.durable("a", "old content")
			h.do(os.WriteFile(h.p("a"), []byte("new"), 0o644))
		}, map[string]string{"a": "old content"}},
		{"rename without directory fsync is undone", func(h fsh) {
			h.durable("a", "hello")
			h.do(os.Rename(h.p("a"), h.p("b")))
		}, map[string]string{"a": "hello", "b": "<none>"}},
		{"rename with directory fsync survives", func(h fsh) {
			h.durable("a", "hello")
			h.do(os.Rename(h.p("a"), h.p("b")))
			h.syncDir(".")
		}, map[string]string{"a": "<none>", "b": "hello"}},
		{"rename over a file without directory fsync is undone", func(h fsh) {
			h.durable("cur", "version 1")
			h.write("tmp", "version 2", true)
			h.syncDir(".")
			h.do(os.Rename(h.p("tmp"), h.p("cur")))
		}, map[string]string{"cur": "version 1", "tmp": "version 2"}},
		{"unlink without directory fsync is undone", func(h fsh) {
			h.durable("a", "hello")
			h.do(os.Remove(h.p("a")))
		}, map[string]string{"a": "hello"}},
		{"unlink with directory fsync survives", func(h fsh) {
			h.durable("a", "hello")
			h.do(os.Remove(h.p("a")))
			h.syncDir(".")
		}, map[string]string{"a": "<none>"}},
		{"mkdir without fsync is gone with its files", func(h fsh) {
			h.do(os.Mkdir(h.p("d"), 0o755))
			h.write("d/x", "hello", true)
		}, map[string]string{"d/x": "<none>", "d": "<none>"}},
		{"mkdir with fsyncs survives", func(h fsh) {
			h.do(os.Mkdir(h.p("d"), 0o755))
			h.syncDir(".")
			h.write("d/x", "hello", true)
			h.syncDir("d")
		}, map[string]string{"d/x": "hello"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, l := mountT(t)
			h := fsh{t: t, data: l.Data}
			tc.steps(h)
			r := m.Crash()
			for name, want := range tc.want {
				got := h.read(name)
				if name == "d" && want == "<none>" {
					if _, err := os.Stat(h.p("d")); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("directory d after the crash: %v, want gone", err)
					}
					continue
				}
				if got != want {
					t.Errorf("%s after the crash = %q, want %q (crash: %s)", name, got, want, r)
				}
			}
			if st := m.Status(); st.DirtyFiles != 0 || st.MetaPending != 0 {
				t.Errorf("after the crash %d dirty files and %d name changes are pending", st.DirtyFiles, st.MetaPending)
			}
		})
	}
}

// TestPowerLossNegativeControl: with the dropping switched off (the
// test-only keep), the loss test's verdict flips: the un-fsynced append
// survives the crash.
func TestPowerLossNegativeControl(t *testing.T) {
	lost := func(keep bool) bool {
		m, l := mountT(t)
		m.l.t.keep = keep
		h := fsh{t: t, data: l.Data}
		h.durable("a", "hello")
		h.write("a", " world", false)
		h.write("b", "new", false)
		m.Crash()
		return h.read("a") == "hello" && h.read("b") == "<none>"
	}
	if !lost(false) {
		t.Fatal("the crash kept un-fsynced writes")
	}
	if lost(true) {
		t.Fatal("with dropping switched off the writes were still lost: the loss test cannot fail")
	}
}

func TestFaultsThroughTheLayer(t *testing.T) {
	m, l := mountT(t)
	h := fsh{t: t, data: l.Data}
	h.durable("a", "hello")
	writeErr := func() error {
		f, err := os.OpenFile(h.p("a"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString("x")
		return err
	}
	t.Run("disk-error on writes", func(t *testing.T) {
		m.SetFaults(Faults{Error: &ErrorFault{Ops: []Op{OpWrite}, Percent: 100}})
		if err := writeErr(); !errors.Is(err, syscall.EIO) {
			t.Errorf("write under disk-error: %v, want EIO", err)
		}
		if got := h.read("a"); got != "hello" {
			t.Errorf("read under a write error fault: %q", got)
		}
		m.SetFaults(Faults{})
		if err := writeErr(); err != nil {
			t.Errorf("write after heal: %v", err)
		}
	})
	t.Run("disk-error on fsync only", func(t *testing.T) {
		m.SetFaults(Faults{Error: &ErrorFault{Ops: []Op{OpFsync}, Percent: 100}})
		defer m.SetFaults(Faults{})
		f, err := os.OpenFile(h.p("a"), os.O_WRONLY|os.O_APPEND, 0)
		h.do(err)
		defer f.Close()
		if _, err := f.WriteString("y"); err != nil {
			t.Errorf("write under an fsync fault: %v", err)
		}
		if err := f.Sync(); !errors.Is(err, syscall.EIO) {
			t.Errorf("fsync under disk-error: %v, want EIO", err)
		}
	})
	t.Run("disk-full", func(t *testing.T) {
		m.SetFaults(Faults{Full: true})
		if err := writeErr(); !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("write on a full disk: %v, want ENOSPC", err)
		}
		if err := os.WriteFile(h.p("new"), nil, 0o644); !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("create on a full disk: %v, want ENOSPC", err)
		}
		var st syscall.Statfs_t
		h.do(syscall.Statfs(l.Data, &st))
		if st.Bavail != 0 {
			t.Errorf("statfs on a full disk: %d blocks available", st.Bavail)
		}
		m.SetFaults(Faults{})
		if err := writeErr(); err != nil {
			t.Errorf("write after heal: %v", err)
		}
	})
	t.Run("disk-delay", func(t *testing.T) {
		const d = 150 * time.Millisecond
		m.SetFaults(Faults{Delay: &Delay{Fsync: d}})
		f, err := os.OpenFile(h.p("a"), os.O_WRONLY, 0)
		h.do(err)
		defer f.Close()
		start := time.Now()
		h.do(f.Sync())
		if took := time.Since(start); took < d {
			t.Errorf("fsync under a %v delay took %v", d, took)
		}
		m.SetFaults(Faults{})
	})
	t.Run("disk-stall", func(t *testing.T) {
		m.SetFaults(Faults{Stall: true})
		done := make(chan error, 1)
		go func() { done <- writeErr() }()
		select {
		case err := <-done:
			t.Fatalf("write returned during a stall: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		m.SetFaults(Faults{})
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("stalled write after heal: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the stalled write did not go on after heal")
		}
	})
}

// TestServeAndRelease runs the server as `faultbench diskfs serve` does,
// drives it through its control socket, and takes the layer off with
// Release: the data is back in the plain directory and no mount is left.
func TestServeAndRelease(t *testing.T) {
	needFuse(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "n1", "data")
	h := fsh{t: t, data: data}
	h.do(os.MkdirAll(data, 0o755))
	h.write("before", "written before the layer", false)
	h.do(adopt(LayoutOf(data)))
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	var serveErr error
	go func() { serveErr = Serve(ctx, data, ServeOptions{}); close(served) }()
	t.Cleanup(func() {
		cancel()
		<-served
		_ = Release(context.Background(), data)
		if left := MountsUnder(dir); len(left) > 0 {
			t.Errorf("mounts left behind: %v", left)
		}
	})
	deadline := time.Now().Add(ReadyTimeout)
	for {
		if _, err := Ping(ctx, data); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server did not answer")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := h.read("before"); got != "written before the layer" {
		t.Fatalf("a file written before the layer reads %q through it", got)
	}
	ctl := LayoutOf(data).Ctl
	if _, err := Call(ctx, ctl, Request{Op: CtlSet, Faults: Faults{Error: &ErrorFault{Ops: []Op{OpRead}, Percent: 0}}}); err == nil {
		t.Error("a set with percent 0 was accepted")
	}
	resp, err := Call(ctx, ctl, Request{Op: CtlSet, Faults: Faults{Full: true}})
	h.do(err)
	if !resp.Status.Faults.Full {
		t.Errorf("status after set full: %+v", resp.Status.Faults)
	}
	resp, err = Call(ctx, ctl, Request{Op: CtlClear, Names: []string{FaultFull}})
	h.do(err)
	if !resp.Status.Faults.None() {
		t.Errorf("status after clear: %+v", resp.Status.Faults)
	}
	h.write("later", "lost", false)
	resp, err = Call(ctx, ctl, Request{Op: CtlCrash})
	h.do(err)
	if resp.Crash == nil || resp.Crash.MetaUndone != 1 {
		t.Errorf("crash report %+v, want one create undone", resp.Crash)
	}
	h.write("synced", "made durable by sync", false)
	_, err = Call(ctx, ctl, Request{Op: CtlSync})
	h.do(err)
	if resp, err = Call(ctx, ctl, Request{Op: CtlCrash}); err != nil || resp.Crash.MetaUndone != 0 || resp.Crash.Files != 0 {
		t.Errorf("crash after sync dropped %+v (%v), want nothing", resp.Crash, err)
	}
	h.write("kept", "kept by a clean release", false)
	h.do(Release(ctx, data))
	select {
	case <-served:
		h.do(serveErr)
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not end after Release")
	}
	if Mounted(data) {
		t.Fatal("still mounted after Release")
	}
	for name, want := range map[string]string{"before": "written before the layer", "later": "<none>", "synced": "made durable by sync", "kept": "kept by a clean release"} {
		if got := h.read(name); got != want {
			t.Errorf("%s after Release: %q, want %q", name, got, want)
		}
	}
	if _, err := os.Stat(LayoutOf(data).State); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the layer's state directory is left: %v", err)
	}
}
