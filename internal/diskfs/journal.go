package diskfs

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
)

// extent is old content of a file: the bytes at off as they were at the
// file's last fsync.
type extent struct {
	off  int64
	data []byte
}

// dirtyFile is one file with writes since its last fsync: what Crash
// needs to put it back. f is nil while the file is clean.
type dirtyFile struct {
	mu       sync.Mutex
	f        *os.File // the inode, read-write, while dirty
	origSize int64    // the size at the last fsync
	saved    []extent // old bytes below origSize that were overwritten or cut off
	covered  [][2]int64
	bytes    int64 // sum of the saved extents
}

// gaps returns the parts of [a, b) that covered does not hold.
func (d *dirtyFile) gaps(a, b int64) [][2]int64 {
	var out [][2]int64
	for _, c := range d.covered { // sorted, disjoint
		if c[1] <= a {
			continue
		}
		if c[0] >= b {
			break
		}
		if c[0] > a {
			out = append(out, [2]int64{a, c[0]})
		}
		a = max(a, c[1])
		if a >= b {
			return out
		}
	}
	if a < b {
		out = append(out, [2]int64{a, b})
	}
	return out
}

// cover adds [a, b) to covered, merging neighbours.
func (d *dirtyFile) cover(a, b int64) {
	cs := append(d.covered, [2]int64{a, b})
	slices.SortFunc(cs, func(x, y [2]int64) int { return cmp.Compare(x[0], y[0]) })
	out := cs[:0]
	for _, c := range cs {
		if n := len(out); n > 0 && c[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], c[1])
			continue
		}
		out = append(out, c)
	}
	d.covered = out
}

// save keeps the old bytes of [off, off+n) below origSize not kept yet.
// The caller holds d.mu and has made d dirty.
func (d *dirtyFile) save(off, n int64) error {
	end := min(off+n, d.origSize)
	if off < 0 || off >= end {
		return nil
	}
	for _, g := range d.gaps(off, end) {
		buf := make([]byte, g[1]-g[0])
		m, err := d.f.ReadAt(buf, g[0])
		if err != nil && m < len(buf) && !errors.Is(err, io.EOF) {
			return fmt.Errorf("keeping the old bytes %d..%d: %w", g[0], g[1], err)
		}
		// bytes past the file's current end were cut off earlier and are
		// kept already; a short read only happens for them
		d.saved = append(d.saved, extent{off: g[0], data: buf[:m]})
		d.bytes += int64(m)
		d.cover(g[0], g[1])
	}
	return nil
}

// reset forgets the undo of d: its content is durable.
func (d *dirtyFile) reset() {
	if d.f != nil {
		_ = d.f.Close()
	}
	d.f, d.saved, d.covered, d.bytes = nil, nil, nil, 0
}

// metaOp is one change of names not yet durable.
type metaOp struct {
	kind    string   // create, mkdir, mknod, symlink, link, unlink, rmdir, rename
	path    string   // relative to the backing root; rename: the old name
	path2   string   // rename: the new name
	dirs    []uint64 // the directories it changed (an fsync of one makes it durable)
	ino     uint64   // the entry made (create ...): its own fsync makes it durable
	trash   string   // unlink, rename over a file: the hard link keeping the old file
	mode    uint32   // rmdir, rename over an empty directory: the directory's mode
	overDir bool     // rename replaced an empty directory
}

// CrashReport says what a crash dropped.
type CrashReport struct {
	Files       int    `json:"files"`       // files put back to their last fsync
	Bytes       int64  `json:"bytes"`       // old bytes written back
	MetaUndone  int    `json:"meta_undone"` // creates, renames, links and unlinks undone
	MetaFailed  int    `json:"meta_failed"` // undos that failed (the entry had moved on durably)
	KeptByTest  bool   `json:"kept,omitempty"`
	FirstFailed string `json:"first_failed,omitempty"`
}

func (r CrashReport) String() string {
	s := fmt.Sprintf("%d files put back to their last fsync (%d bytes), %d name changes undone", r.Files, r.Bytes, r.MetaUndone)
	if r.MetaFailed > 0 {
		s += fmt.Sprintf(", %d could not be undone (first: %s)", r.MetaFailed, r.FirstFailed)
	}
	return s
}

// tracker is the lazyfs account of one backing directory: what is not
// durable yet, and how to undo it.
type tracker struct {
	root, trash string

	mu       sync.Mutex
	files    map[uint64]*dirtyFile
	meta     []*metaOp
	trashSeq int
	// keep makes crash drop nothing (a test's negative control).
	keep bool
}

func newTracker(root, trash string) *tracker {
	return &tracker{root: root, trash: trash, files: map[uint64]*dirtyFile{}}
}

// inoOf returns the inode number of fd.
func inoOf(fd int) (uint64, int64, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return 0, 0, err
	}
	return st.Ino, st.Size, nil
}

// dirty returns the dirty record of the file open as fd, locked, made
// dirty (reopened read-write, its size noted) if it was clean.
func (t *tracker) dirty(fd int) (*dirtyFile, error) {
	ino, size, err := inoOf(fd)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	d := t.files[ino]
	if d == nil {
		d = &dirtyFile{}
		t.files[ino] = d
	}
	t.mu.Unlock()
	d.mu.Lock()
	if d.f == nil {
		f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), os.O_RDWR, 0)
		if err != nil {
			d.mu.Unlock()
			return nil, err
		}
		d.f, d.origSize = f, size
	}
	return d, nil
}

// beforeWrite keeps what writing n bytes at off to fd overwrites; the
// caller writes, then unlocks the returned record.
func (t *tracker) beforeWrite(fd int, off, n int64) (*dirtyFile, error) {
	d, err := t.dirty(fd)
	if err != nil {
		return nil, err
	}
	if err := d.save(off, n); err != nil {
		d.mu.Unlock()
		return nil, err
	}
	return d, nil
}

// beforeTruncate keeps what cutting fd to size cuts off; the caller
// truncates, then unlocks the returned record.
func (t *tracker) beforeTruncate(fd int, size int64) (*dirtyFile, error) {
	d, err := t.dirty(fd)
	if err != nil {
		return nil, err
	}
	_, cur, err := inoOf(fd)
	if err == nil && size < cur {
		err = d.save(size, cur-size)
	}
	if err != nil {
		d.mu.Unlock()
		return nil, err
	}
	return d, nil
}

// fsync makes fd durable: through sync (the real fsync, run while the
// file's record is locked), its data; a file's own creation; a
// directory's entries.
func (t *tracker) fsync(fd int, sync func() error) error {
	ino, _, err := inoOf(fd)
	if err != nil {
		return err
	}
	t.mu.Lock()
	d := t.files[ino]
	t.mu.Unlock()
	if d != nil {
		d.mu.Lock()
		defer d.mu.Unlock()
	}
	if err := sync(); err != nil {
		return err
	}
	if d != nil {
		d.reset()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := t.meta[:0]
	for _, m := range t.meta {
		if m.ino == ino || slices.Contains(m.dirs, ino) {
			t.forget(m)
			continue
		}
		kept = append(kept, m)
	}
	clear(t.meta[len(kept):])
	t.meta = kept
	return nil
}

// forget drops a durable change's keepsakes.
func (t *tracker) forget(m *metaOp) {
	if m.trash != "" {
		_ = os.Remove(m.trash)
	}
}

// abs is the backing path of rel.
func (t *tracker) abs(rel string) string { return filepath.Join(t.root, rel) }

// dirIno is the inode number of the backing directory rel.
func (t *tracker) dirIno(rel string) uint64 {
	var st syscall.Stat_t
	if err := syscall.Lstat(t.abs(rel), &st); err != nil {
		return 0
	}
	return st.Ino
}

// entryIno is the inode number of the backing entry rel (0 if missing).
func (t *tracker) entryIno(rel string) uint64 { return t.dirIno(rel) }

// newTrash returns a fresh path in the trash directory.
func (t *tracker) newTrash() string {
	t.trashSeq++
	return filepath.Join(t.trash, strconv.Itoa(t.trashSeq))
}

// created runs do, which makes the entry rel (kind: create, mkdir ...),
// and records it. Entries that existed before are not recorded.
func (t *tracker) created(kind, rel string, do func() error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	existed := t.entryIno(rel) != 0
	if err := do(); err != nil {
		return err
	}
	if !existed {
		t.meta = append(t.meta, &metaOp{kind: kind, path: rel, dirs: []uint64{t.dirIno(filepath.Dir(rel))}, ino: t.entryIno(rel)})
	}
	return nil
}

// unlinked keeps the entry rel (a hard link in the trash, or its mode for
// a directory), runs do, which removes it, and records it.
func (t *tracker) unlinked(rel string, dir bool, do func() error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := &metaOp{kind: "unlink", path: rel, dirs: []uint64{t.dirIno(filepath.Dir(rel))}}
	if dir {
		m.kind = "rmdir"
		var st syscall.Stat_t
		if err := syscall.Lstat(t.abs(rel), &st); err == nil {
			m.mode = st.Mode & 0o7777
		}
	} else {
		m.trash = t.newTrash()
		if err := os.Link(t.abs(rel), m.trash); err != nil {
			m.trash = ""
		}
	}
	if err := do(); err != nil {
		if m.trash != "" {
			_ = os.Remove(m.trash)
		}
		return err
	}
	t.meta = append(t.meta, m)
	return nil
}

// renamed keeps what renaming from to to replaces, runs do, which renames,
// and records it.
func (t *tracker) renamed(from, to string, do func() error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := &metaOp{kind: "rename", path: from, path2: to,
		dirs: []uint64{t.dirIno(filepath.Dir(from)), t.dirIno(filepath.Dir(to))}}
	var st syscall.Stat_t
	if err := syscall.Lstat(t.abs(to), &st); err == nil {
		if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			m.overDir, m.mode = true, st.Mode&0o7777
		} else {
			m.trash = t.newTrash()
			if err := os.Link(t.abs(to), m.trash); err != nil {
				m.trash = ""
			}
		}
	}
	if err := do(); err != nil {
		if m.trash != "" {
			_ = os.Remove(m.trash)
		}
		return err
	}
	t.meta = append(t.meta, m)
	return nil
}

// undo undoes one change; ENOENT and EEXIST (a later durable change took
// the name) are failures the report counts.
func (t *tracker) undo(m *metaOp) error {
	switch m.kind {
	case "create", "mknod", "symlink", "link":
		return os.Remove(t.abs(m.path))
	case "mkdir":
		return os.RemoveAll(t.abs(m.path))
	case "unlink":
		if m.trash == "" {
			return errors.New("the unlinked file was not kept")
		}
		return os.Link(m.trash, t.abs(m.path))
	case "rmdir":
		return os.Mkdir(t.abs(m.path), os.FileMode(m.mode))
	case "rename":
		if err := os.Rename(t.abs(m.path2), t.abs(m.path)); err != nil {
			return err
		}
		switch {
		case m.overDir:
			return os.Mkdir(t.abs(m.path2), os.FileMode(m.mode))
		case m.trash != "":
			return os.Link(m.trash, t.abs(m.path2))
		}
		return nil
	}
	return fmt.Errorf("unknown change %q", m.kind)
}

// pending says how much is not durable.
// The caller holds the gate (a crash may not run meanwhile); t.mu is not
// held while a file's lock is taken (fsync takes them the other way).
func (t *tracker) pending() (files int, bytes int64, meta int) {
	t.mu.Lock()
	ds := make([]*dirtyFile, 0, len(t.files))
	for _, d := range t.files {
		ds = append(ds, d)
	}
	meta = len(t.meta)
	t.mu.Unlock()
	for _, d := range ds {
		d.mu.Lock()
		if d.f != nil {
			files++
			bytes += d.bytes
		}
		d.mu.Unlock()
	}
	return files, bytes, meta
}

// durableAll makes everything durable (no operation may run meanwhile).
func (t *tracker) durableAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, d := range t.files {
		d.reset()
	}
	for _, m := range t.meta {
		t.forget(m)
	}
	t.files, t.meta = map[uint64]*dirtyFile{}, nil
}

// crash drops everything not durable: every dirty file back to its bytes
// and size at its last fsync, then every name change undone, newest
// first. No operation may run meanwhile (the caller holds the gate).
func (t *tracker) crash() CrashReport {
	t.mu.Lock()
	defer t.mu.Unlock()
	var r CrashReport
	if t.keep {
		r.KeptByTest = true
		t.mu.Unlock()
		t.durableAll()
		t.mu.Lock()
		return r
	}
	for _, d := range t.files {
		if d.f == nil {
			continue
		}
		r.Files++
		for _, e := range d.saved {
			if _, err := d.f.WriteAt(e.data, e.off); err == nil {
				r.Bytes += int64(len(e.data))
			}
		}
		_ = d.f.Truncate(d.origSize)
		d.reset()
	}
	t.files = map[uint64]*dirtyFile{}
	for i := len(t.meta) - 1; i >= 0; i-- {
		m := t.meta[i]
		if err := t.undo(m); err != nil {
			r.MetaFailed++
			if r.FirstFailed == "" {
				r.FirstFailed = fmt.Sprintf("%s %s: %v", m.kind, m.path, err)
			}
		} else {
			r.MetaUndone++
		}
		t.forget(m)
	}
	t.meta = nil
	return r
}
