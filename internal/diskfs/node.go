package diskfs

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// layer is the state one mount shares: the tracker, the injector, and the
// gate that a crash closes while it puts the backing directory back.
type layer struct {
	root *fs.LoopbackRoot
	t    *tracker
	in   injector
	gate sync.RWMutex
}

// enter waits for a running crash to end and applies the faults for op;
// on 0 the caller runs the operation and calls leave.
func (l *layer) enter(ctx context.Context, op Op) syscall.Errno {
	var cancel <-chan struct{}
	if fc, ok := ctx.(*fuse.Context); ok {
		cancel = fc.Cancel
	}
	if e := l.in.before(cancel, op); e != 0 {
		return e
	}
	l.gate.RLock()
	return 0
}

func (l *layer) leave() { l.gate.RUnlock() }

// node is one file or directory of the mount: a loopback node whose
// changes go through the layer.
type node struct {
	*fs.LoopbackNode
	l *layer
}

var (
	_ fs.NodeWrapChilder    = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeFsyncer        = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeAllocater      = (*node)(nil)
	_ fs.NodeCopyFileRanger = (*node)(nil)
	_ fs.NodeTmpfiler       = (*node)(nil)
	_ fs.NodeStatfser       = (*node)(nil)
)

// WrapChild makes every node of the tree a layer node.
func (n *node) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if ln, ok := ops.(*fs.LoopbackNode); ok {
		return &node{LoopbackNode: ln, l: n.l}
	}
	return ops
}

// rel is the node's path relative to the mount's root.
func (n *node) rel() string { return n.Path(nil) }

// child is the relative path of n's entry name.
func (n *node) child(name string) string { return filepath.Join(n.rel(), name) }

// Statfs reports no free space while the disk is full.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	if e := n.LoopbackNode.Statfs(ctx, out); e != 0 {
		return e
	}
	if f, _ := n.l.in.get(); f.Full {
		out.Bfree, out.Bavail = 0, 0
	}
	return 0
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if e := n.l.enter(ctx, opCreate); e != 0 {
		return nil, nil, 0, e
	}
	defer n.l.leave()
	rel := n.child(name)
	if flags&syscall.O_TRUNC != 0 {
		if e := n.l.truncatePath(rel, 0); e != 0 && e != syscall.ENOENT {
			return nil, nil, 0, e
		}
	}
	var (
		in  *fs.Inode
		fh  fs.FileHandle
		ff  uint32
		err syscall.Errno
	)
	terr := n.l.t.created("create", rel, func() error {
		in, fh, ff, err = n.LoopbackNode.Create(ctx, name, flags&^syscall.O_TRUNC, mode, out)
		if err != 0 {
			return err
		}
		return nil
	})
	if terr != nil {
		return nil, nil, 0, fs.ToErrno(terr)
	}
	return in, n.l.wrapFile(fh), ff, 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.made(ctx, "mkdir", name, func() (*fs.Inode, syscall.Errno) { return n.LoopbackNode.Mkdir(ctx, name, mode, out) })
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.made(ctx, "mknod", name, func() (*fs.Inode, syscall.Errno) { return n.LoopbackNode.Mknod(ctx, name, mode, rdev, out) })
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.made(ctx, "symlink", name, func() (*fs.Inode, syscall.Errno) { return n.LoopbackNode.Symlink(ctx, target, name, out) })
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.made(ctx, "link", name, func() (*fs.Inode, syscall.Errno) { return n.LoopbackNode.Link(ctx, target, name, out) })
}

// made runs do, which makes entry name of kind, through the tracker.
func (n *node) made(ctx context.Context, kind, name string, do func() (*fs.Inode, syscall.Errno)) (*fs.Inode, syscall.Errno) {
	if e := n.l.enter(ctx, opCreate); e != 0 {
		return nil, e
	}
	defer n.l.leave()
	var in *fs.Inode
	err := n.l.t.created(kind, n.child(name), func() error {
		var e syscall.Errno
		in, e = do()
		if e != 0 {
			return e
		}
		return nil
	})
	return in, fs.ToErrno(err)
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if e := n.l.enter(ctx, opMeta); e != 0 {
		return e
	}
	defer n.l.leave()
	return fs.ToErrno(n.l.t.unlinked(n.child(name), false, func() error { return errOrNil(n.LoopbackNode.Unlink(ctx, name)) }))
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if e := n.l.enter(ctx, opMeta); e != 0 {
		return e
	}
	defer n.l.leave()
	return fs.ToErrno(n.l.t.unlinked(n.child(name), true, func() error { return errOrNil(n.LoopbackNode.Rmdir(ctx, name)) }))
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	if flags&^uint32(1) != 0 { // RENAME_NOREPLACE is 1; RENAME_EXCHANGE and RENAME_WHITEOUT cannot be undone here
		return syscall.EINVAL
	}
	if e := n.l.enter(ctx, opMeta); e != 0 {
		return e
	}
	defer n.l.leave()
	return fs.ToErrno(n.l.t.renamed(n.child(name), np.child(newName), func() error {
		return errOrNil(n.LoopbackNode.Rename(ctx, name, np.LoopbackNode, newName, flags))
	}))
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if e := n.l.enter(ctx, opMeta); e != 0 {
		return nil, 0, e
	}
	defer n.l.leave()
	if flags&syscall.O_TRUNC != 0 && flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		if e := n.l.truncatePath(n.rel(), 0); e != 0 {
			return nil, 0, e
		}
	}
	fh, ff, e := n.LoopbackNode.Open(ctx, flags)
	if e != 0 {
		return nil, 0, e
	}
	return n.l.wrapFile(fh), ff, 0
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, ff, e := n.LoopbackNode.OpendirHandle(ctx, flags)
	if e != 0 {
		return nil, 0, e
	}
	return &dirHandle{inner: fh, n: n}, ff, 0
}

// Fsync of a node without a handle of ours (a directory's fsync through
// another handle, or none): the file or directory is opened for it.
func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if h, ok := f.(*file); ok {
		return h.Fsync(ctx, flags)
	}
	return n.l.fsyncPath(ctx, n.rel())
}

// Setattr tracks truncation; everything else goes to the loopback.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	sz, trunc := in.GetSize()
	if !trunc {
		return n.LoopbackNode.Setattr(ctx, unwrap(f), in, out)
	}
	if e := n.l.enter(ctx, opMeta); e != 0 {
		return e
	}
	defer n.l.leave()
	h, ok := f.(*file)
	if !ok {
		if e := n.l.truncatePath(n.rel(), int64(sz)); e != 0 {
			return e
		}
		return n.LoopbackNode.Setattr(ctx, nil, in, out)
	}
	d, err := n.l.t.beforeTruncate(h.fd, int64(sz))
	if err != nil {
		return fs.ToErrno(err)
	}
	defer d.mu.Unlock()
	return n.LoopbackNode.Setattr(ctx, h.LoopbackFile, in, out)
}

// Allocate is the node form of fallocate (the file form is file.Allocate).
func (n *node) Allocate(ctx context.Context, f fs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	h, ok := f.(*file)
	if !ok {
		return syscall.EOPNOTSUPP
	}
	return h.Allocate(ctx, off, size, mode)
}

// CopyFileRange is refused, so that the kernel copies through read and
// write, which the layer sees.
func (n *node) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.EOPNOTSUPP
}

// Tmpfile is refused (O_TMPFILE: an unnamed file the layer could not put
// back); programs fall back to a named temporary file.
func (n *node) Tmpfile(context.Context, uint32, uint32, *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EOPNOTSUPP
}

func errOrNil(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func unwrap(f fs.FileHandle) fs.FileHandle {
	if h, ok := f.(*file); ok {
		return h.LoopbackFile
	}
	return f
}

// truncatePath keeps what truncating the backing file rel to size cuts
// off (the caller truncates).
func (l *layer) truncatePath(rel string, size int64) syscall.Errno {
	fd, err := syscall.Open(filepath.Join(l.root.Path, rel), syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fs.ToErrno(err)
	}
	defer syscall.Close(fd)
	d, err := l.t.beforeTruncate(fd, size)
	if err != nil {
		return fs.ToErrno(err)
	}
	d.mu.Unlock() // the truncate follows right after, under the caller's gate
	return 0
}

// fsyncPath fsyncs the backing file or directory rel.
func (l *layer) fsyncPath(ctx context.Context, rel string) syscall.Errno {
	if e := l.enter(ctx, OpFsync); e != 0 {
		return e
	}
	defer l.leave()
	fd, err := syscall.Open(filepath.Join(l.root.Path, rel), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fs.ToErrno(err)
	}
	defer syscall.Close(fd)
	return fs.ToErrno(l.t.fsync(fd, func() error { return syscall.Fsync(fd) }))
}

// file is an open file of the mount: a loopback file whose reads, writes
// and syncs go through the layer. It offers no passthrough descriptor, so
// the kernel never bypasses it.
type file struct {
	*fs.LoopbackFile
	fd int
	l  *layer
}

func (l *layer) wrapFile(fh fs.FileHandle) fs.FileHandle {
	lf, ok := fh.(*fs.LoopbackFile)
	if !ok {
		return fh
	}
	fd := -1
	// the loopback file keeps its descriptor private but hands it out
	// for passthrough; the layer reads and writes through it (and
	// offers no passthrough itself)
	if pfd, ok := lf.PassthroughFd(); ok {
		fd = pfd
	}
	return &file{LoopbackFile: lf, fd: fd, l: l}
}

// PassthroughFd implements fs.FilePassthroughFder: no passthrough.
func (f *file) PassthroughFd() (int, bool) { return -1, false }

func (f *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if e := f.l.enter(ctx, OpRead); e != 0 {
		return nil, e
	}
	defer f.l.leave()
	n, err := syscall.Pread(f.fd, buf, off)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(buf[:n]), 0
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	return f.Writev(ctx, [][]byte{data}, off)
}

func (f *file) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	if e := f.l.enter(ctx, OpWrite); e != 0 {
		return 0, e
	}
	defer f.l.leave()
	var n int64
	for _, b := range data {
		n += int64(len(b))
	}
	d, err := f.l.t.beforeWrite(f.fd, off, n)
	if err != nil {
		return 0, fs.ToErrno(err)
	}
	defer d.mu.Unlock()
	var done uint32
	for _, b := range data {
		w, err := syscall.Pwrite(f.fd, b, off)
		done += uint32(max(w, 0))
		if err != nil {
			return done, fs.ToErrno(err)
		}
		off += int64(w)
		if w < len(b) {
			break
		}
	}
	return done, 0
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if e := f.l.enter(ctx, OpFsync); e != 0 {
		return e
	}
	defer f.l.leave()
	return fs.ToErrno(f.l.t.fsync(f.fd, func() error { return errOrNil(f.LoopbackFile.Fsync(ctx, flags)) }))
}

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok {
		d, err := f.l.t.beforeTruncate(f.fd, int64(sz))
		if err != nil {
			return fs.ToErrno(err)
		}
		defer d.mu.Unlock()
	}
	return f.LoopbackFile.Setattr(ctx, in, out)
}

// fallocate modes (linux/falloc.h).
const (
	fallocKeepSize      = 0x01
	fallocPunchHole     = 0x02
	fallocCollapseRange = 0x08
	fallocZeroRange     = 0x10
	fallocInsertRange   = 0x20
)

func (f *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if mode&(fallocCollapseRange|fallocInsertRange) != 0 {
		return syscall.EOPNOTSUPP // they move data the layer could not put back
	}
	if e := f.l.enter(ctx, OpWrite); e != 0 {
		return e
	}
	defer f.l.leave()
	d, err := f.l.t.dirty(f.fd)
	if err != nil {
		return fs.ToErrno(err)
	}
	defer d.mu.Unlock()
	if mode&(fallocPunchHole|fallocZeroRange) != 0 {
		if err := d.save(int64(off), int64(size)); err != nil {
			return fs.ToErrno(err)
		}
	}
	return f.LoopbackFile.Allocate(ctx, off, size, mode)
}

// dirHandle is an open directory: its fsync goes through the layer.
type dirHandle struct {
	inner fs.FileHandle
	n     *node
}

var (
	_ fs.FileReaddirenter = (*dirHandle)(nil)
	_ fs.FileFsyncdirer   = (*dirHandle)(nil)
)

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if r, ok := d.inner.(fs.FileReaddirenter); ok {
		return r.Readdirent(ctx)
	}
	return nil, syscall.ENOTSUP
}

func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if s, ok := d.inner.(fs.FileSeekdirer); ok {
		return s.Seekdir(ctx, off)
	}
	return syscall.ENOTSUP
}

func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) {
	if r, ok := d.inner.(fs.FileReleasedirer); ok {
		r.Releasedir(ctx, flags)
	}
}

func (d *dirHandle) Fsyncdir(ctx context.Context, _ uint32) syscall.Errno {
	return d.n.l.fsyncPath(ctx, d.n.rel())
}

// newLayer returns the root node of a layer over backing.
func newLayer(backing, trash string) (*node, *layer, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(trash, 0o700); err != nil {
		return nil, nil, err
	}
	l := &layer{root: &fs.LoopbackRoot{Path: backing, Dev: st.Dev}, t: newTracker(backing, trash)}
	root := &node{LoopbackNode: &fs.LoopbackNode{RootData: l.root}, l: l}
	l.root.RootNode = root
	return root, l, nil
}
