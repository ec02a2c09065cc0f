// Package store is the storage of one txkv region: a multi-version
// in-memory store (every cell is a (row, field, version) with the commit
// timestamp of the transaction that wrote it as version, as in HBase, so
// applying a write-set twice changes nothing), reads at a snapshot
// timestamp, and the memstore — the cells written since the last flush —
// which is flushed to immutable sorted region files in the shared storage
// directory. The whole region stays in memory (the paper's setup sizes the
// data to fit the region servers' block caches); region files are its
// durable form, loaded when a server opens the region.
package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// cell is one version of one field of a row; a row delete is a cell with
// an empty field name and del set. A write that deletes a row and writes
// fields of it (delete, then write, in one transaction) puts the delete
// and the fields at the same version: the fields are visible, the row's
// older fields are not.
type cell struct {
	field string
	ts    uint64
	del   bool
	val   []byte
}

// row holds its cells sorted by field, then by version, newest first.
type row struct{ cells []cell }

// entry is a cell with its row key, as kept in the memstore and files.
type entry struct {
	key string
	cell
}

// Region is one region's data. Safe for concurrent use.
type Region struct {
	info wire.Region

	mu       sync.RWMutex
	rows     map[string]*row // key: table + "\x00" + key
	sorted   []string        // row keys in order, rebuilt lazily for scans
	dirty    bool
	mem      []entry
	memBytes int64
	intern   map[string]string
	files    int
	applied  uint64 // cells applied, for status
}

// New returns an empty region.
func New(info wire.Region) *Region {
	return &Region{info: info, rows: map[string]*row{}, intern: map[string]string{}}
}

// Info returns the region's key range.
func (r *Region) Info() wire.Region { return r.info }

// RowKey is the store key of (table, key).
func RowKey(table, key string) string { return table + "\x00" + key }

func (r *Region) internField(s string) string {
	if v, ok := r.intern[s]; ok {
		return v
	}
	if len(r.intern) < 4096 {
		r.intern[s] = s
	}
	return s
}

// put inserts c into the row (replacing the same field and version).
// mu held for writing.
func (r *Region) put(key string, c cell) {
	rw := r.rows[key]
	if rw == nil {
		rw = &row{}
		r.rows[key] = rw
		r.dirty = true
	}
	cs := rw.cells
	i := sort.Search(len(cs), func(i int) bool {
		if cs[i].field != c.field {
			return cs[i].field > c.field
		}
		return cs[i].ts <= c.ts
	})
	if i < len(cs) && cs[i].field == c.field && cs[i].ts == c.ts {
		cs[i] = c
		return
	}
	cs = append(cs, cell{})
	copy(cs[i+1:], cs[i:])
	cs[i] = c
	rw.cells = cs
}

// Apply applies one write of a write-set committed at ts. Applying the
// same write again is a no-op.
func (r *Region) Apply(ts uint64, w *wire.Write) {
	key := RowKey(w.Table, w.Key)
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.Delete {
		c := cell{ts: ts, del: true}
		r.put(key, c)
		r.mem = append(r.mem, entry{key, c})
		r.memBytes += int64(len(key)) + 32
	}
	for _, f := range w.Fields {
		c := cell{field: r.internField(f.Name), ts: ts, val: f.Value}
		r.put(key, c)
		r.mem = append(r.mem, entry{key, c})
		r.memBytes += int64(len(key)+len(f.Name)+len(f.Value)) + 48
	}
	r.applied++
}

// visible returns the row's fields visible at ts (nil, false if none).
func visible(rw *row, fields []string, ts uint64) ([]wire.Field, bool) {
	if rw == nil {
		return nil, false
	}
	cs := rw.cells
	var rowDel uint64
	i := 0
	for ; i < len(cs) && cs[i].field == ""; i++ {
		if rowDel == 0 && cs[i].ts <= ts {
			rowDel = cs[i].ts
		}
	}
	var out []wire.Field
	found := false
	for i < len(cs) {
		f := cs[i].field
		j := i
		for j < len(cs) && cs[j].field == f {
			j++
		}
		for k := i; k < j; k++ {
			if cs[k].ts <= ts {
				// a field written at the row delete's version was written
				// by the same transaction, after the delete
				if cs[k].ts >= rowDel && !cs[k].del {
					found = true
					if fields == nil || contains(fields, f) {
						out = append(out, wire.Field{Name: f, Value: cs[k].val})
					}
				}
				break
			}
		}
		i = j
	}
	return out, found
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Read returns the fields (all if fields is nil) of (table, key) as of
// snapshot ts, and whether the row exists at ts.
func (r *Region) Read(table, key string, fields []string, ts uint64) ([]wire.Field, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return visible(r.rows[RowKey(table, key)], fields, ts)
}

// Scan returns up to count rows of table with key >= start, in key order,
// as of snapshot ts.
func (r *Region) Scan(table, start string, count int, fields []string, ts uint64) []wire.Row {
	r.mu.Lock()
	if r.dirty {
		r.sorted = r.sorted[:0]
		for k := range r.rows {
			r.sorted = append(r.sorted, k)
		}
		sort.Strings(r.sorted)
		r.dirty = false
	}
	r.mu.Unlock()
	r.mu.RLock()
	defer r.mu.RUnlock()
	prefix := table + "\x00"
	from := prefix + start
	i := sort.SearchStrings(r.sorted, from)
	var out []wire.Row
	for ; i < len(r.sorted) && len(out) < count; i++ {
		k := r.sorted[i]
		if !strings.HasPrefix(k, prefix) {
			break
		}
		if fs, ok := visible(r.rows[k], fields, ts); ok {
			out = append(out, wire.Row{Key: k[len(prefix):], Fields: fs})
		}
	}
	return out
}

// Rows returns the number of row keys held (including deleted rows).
func (r *Region) Rows() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.rows)
}

// Files returns the number of region files loaded or written.
func (r *Region) Files() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.files
}

// MemBytes returns the memstore's approximate size.
func (r *Region) MemBytes() int64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.memBytes
}

// Prune drops versions no snapshot at or above gc can see: for every
// field, versions older than its newest version at or below gc (and field
// versions older than a row delete at or below gc). Rows with nothing left
// visible at gc stay as they are.
func (r *Region) Prune(gc uint64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	dropped := 0
	for _, rw := range r.rows {
		cs := rw.cells
		out := cs[:0]
		var rowDel uint64
		i := 0
		kept := false
		for ; i < len(cs) && cs[i].field == ""; i++ {
			if cs[i].ts > gc {
				out = append(out, cs[i])
			} else if !kept {
				out = append(out, cs[i])
				rowDel, kept = cs[i].ts, true
			} else {
				dropped++
			}
		}
		for i < len(cs) {
			f := cs[i].field
			seenOld := false
			for ; i < len(cs) && cs[i].field == f; i++ {
				switch {
				case cs[i].ts > gc:
					out = append(out, cs[i])
				case !seenOld && cs[i].ts >= rowDel:
					out = append(out, cs[i])
					seenOld = true
				default:
					seenOld = true
					dropped++
				}
			}
		}
		for j := len(out); j < len(cs); j++ {
			cs[j] = cell{}
		}
		rw.cells = out
	}
	return dropped
}

// ---- region files ----

const (
	fileMagic   = "TXKVRF01"
	fileTrailer = "TXKVEND1"
	fileSuffix  = ".rf"
)

// Dir is the directory of region id's files under storage.
func Dir(storage string, id wire.RegionID) string {
	return filepath.Join(storage, "regions", strconv.FormatUint(uint64(id), 10))
}

// Mem is a memstore taken out of a region by SwapMem, to be written.
type Mem struct {
	entries []entry
	bytes   int64
}

// Len returns the number of cells in m.
func (m *Mem) Len() int { return len(m.entries) }

// SwapMem takes the memstore out of the region and starts an empty one.
// Writes applied after the swap go to the new memstore.
func (r *Region) SwapMem() *Mem {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &Mem{entries: r.mem, bytes: r.memBytes}
	r.mem, r.memBytes = nil, 0
	return m
}

// ErrFenced is returned when a write to the shared storage was refused
// by its fence (the writer no longer holds its lease).
var ErrFenced = errors.New("fenced: the writer's lease has ended")

// WriteMem writes a swapped memstore to a new region file in dir (owner
// goes into the file name). fence, if not nil, is asked right before the
// file is made visible (renamed into dir): an error from it abandons the
// file. On failure the cells go back into the memstore. An empty m writes
// nothing.
func (r *Region) WriteMem(dir, owner string, m *Mem, fence func() error) (string, error) {
	if m.Len() == 0 {
		return "", nil
	}
	path, err := writeFile(dir, owner, m.entries, fence)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.mem = append(m.entries, r.mem...)
		r.memBytes += m.bytes
		return "", err
	}
	r.files++
	return path, nil
}

// Flush writes the memstore to a new region file in dir and empties it
// (SwapMem and WriteMem).
func (r *Region) Flush(dir, owner string, fence func() error) (string, error) {
	return r.WriteMem(dir, owner, r.SwapMem(), fence)
}

func writeFile(dir, owner string, es []entry, fence func() error) (string, error) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].key != es[j].key {
			return es[i].key < es[j].key
		}
		if es[i].field != es[j].field {
			return es[i].field < es[j].field
		}
		return es[i].ts > es[j].ts
	})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("region file: %w", err)
	}
	name := fmt.Sprintf("%020d-%s%s", time.Now().UnixNano(), owner, fileSuffix)
	final := filepath.Join(dir, name)
	tmp := final + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return "", fmt.Errorf("region file: %w", err)
	}
	crc := crc32.NewIEEE()
	bw := bufio.NewWriterSize(f, 1<<16)
	w := func(b []byte) { bw.Write(b); crc.Write(b) }
	w([]byte(fileMagic))
	var e wire.Encoder
	for _, x := range es {
		e.B = e.B[:0]
		e.String(x.key)
		e.String(x.field)
		e.U64(x.ts)
		if x.del {
			e.B = append(e.B, 1)
		} else {
			e.B = append(e.B, 0)
		}
		e.Bytes(x.val)
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(e.B)))
		w(n[:])
		w(e.B)
	}
	var tail [12]byte
	binary.BigEndian.PutUint64(tail[:8], uint64(len(es)))
	w(tail[:8])
	binary.BigEndian.PutUint32(tail[8:], crc.Sum32())
	bw.Write(tail[8:])
	bw.Write([]byte(fileTrailer))
	err = bw.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && fence != nil {
		err = fence()
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err == nil {
		syncDir(dir)
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("region file %s: %w", final, err)
	}
	return final, nil
}

// ErrBadFile marks an unreadable region file.
var ErrBadFile = errors.New("bad region file")

// Loaded is what LoadDir read.
type Loaded struct {
	Files int
	Bytes int64
}

// regionFiles lists the region files in dir (nil for a missing dir).
func regionFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	for _, de := range ents {
		if strings.HasSuffix(de.Name(), fileSuffix) {
			out = append(out, filepath.Join(dir, de.Name()))
		}
	}
	return out, nil
}

// LoadDir loads every region file in dir into the region (not into its
// memstore: they are durable already). A missing dir is an empty region.
// With compaction (Compact) what it reads is bounded by the region's data
// above the low-water mark plus the files written since the last
// compaction, not by the length of the run.
func (r *Region) LoadDir(dir string) (Loaded, error) {
	var ld Loaded
	files, err := regionFiles(dir)
	if err != nil {
		return ld, fmt.Errorf("region %d: %w", r.info.ID, err)
	}
	for _, path := range files {
		n, err := r.loadFile(path)
		if err != nil {
			return ld, err
		}
		ld.Files++
		ld.Bytes += n
	}
	return ld, nil
}

// Compacted is what Compact did.
type Compacted struct {
	Files    int   // region files merged (and removed)
	InBytes  int64 // their size
	OutBytes int64 // the size of the file that replaced them
	Cells    int   // cells written
	Path     string
}

// Compact merges the region files in dir into one, dropping the versions
// no snapshot at or above the low-water mark lw can see (the rule of
// Prune), so that region files do not grow with the run's length and a
// region opens in a time bounded by its live data. It is crash-safe: the
// merged file is written to a temporary name, fsynced, renamed into dir
// and the directory fsynced before any merged file is removed; a crash
// leaves the new file beside some or all of the old ones, and loading
// both gives the same data at every snapshot at or above lw (cells are
// idempotent: the same field and version is one cell). fence is asked
// before the rename and before each removal (a server that lost its lease
// writes and removes nothing); an error from it stops the compaction
// there. Files written to dir during the compaction are not touched.
// Fewer than two files: nothing to do.
func Compact(info wire.Region, dir, owner string, lw uint64, fence func() error) (Compacted, error) {
	var c Compacted
	files, err := regionFiles(dir)
	if err != nil || len(files) < 2 {
		return c, err
	}
	merged := New(info)
	for _, path := range files {
		n, err := merged.loadFile(path)
		if err != nil {
			return c, err
		}
		c.InBytes += n
	}
	merged.Prune(lw)
	es := merged.entries()
	c.Cells = len(es)
	if c.Path, err = writeFile(dir, owner, es, fence); err != nil {
		return c, fmt.Errorf("compacting region %d: %w", info.ID, err)
	}
	if st, err := os.Stat(c.Path); err == nil {
		c.OutBytes = st.Size()
	}
	for _, path := range files {
		if fence != nil {
			if err := fence(); err != nil {
				return c, fmt.Errorf("compacting region %d: %w", info.ID, err)
			}
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return c, fmt.Errorf("compacting region %d: %w", info.ID, err)
		}
		c.Files++
	}
	syncDir(dir)
	return c, nil
}

// Compacted records a compaction of this region's files: the region now
// counts the merged file in place of the files it replaced.
func (r *Region) Compacted(c Compacted) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files = max(r.files-c.Files, 0) + 1
}

// entries returns every cell of the region with its row key.
func (r *Region) entries() []entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []entry
	for k, rw := range r.rows {
		for _, c := range rw.cells {
			out = append(out, entry{k, c})
		}
	}
	return out
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

func (r *Region) loadFile(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("region file: %w", err)
	}
	return int64(len(b)), r.loadBytes(path, b)
}

func (r *Region) loadBytes(path string, b []byte) error {
	bad := func(why string) error { return fmt.Errorf("%w %s: %s", ErrBadFile, path, why) }
	if len(b) < len(fileMagic)+12+len(fileTrailer) || string(b[:len(fileMagic)]) != fileMagic ||
		string(b[len(b)-len(fileTrailer):]) != fileTrailer {
		return bad("missing header or trailer")
	}
	body := b[:len(b)-len(fileTrailer)-4]
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(b[len(b)-len(fileTrailer)-4:]) {
		return bad("checksum mismatch")
	}
	count := binary.BigEndian.Uint64(body[len(body)-8:])
	data := body[len(fileMagic) : len(body)-8]
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := uint64(0); i < count; i++ {
		if len(data) < 4 {
			return bad("truncated")
		}
		n := binary.BigEndian.Uint32(data)
		if uint64(len(data)-4) < uint64(n) {
			return bad("truncated entry")
		}
		d := wire.Decoder{B: data[4 : 4+n]}
		data = data[4+n:]
		key := d.String()
		field := d.String()
		ts := d.U64()
		del := d.Byte() == 1
		val := d.Bytes()
		if d.Err != nil {
			return bad(d.Err.Error())
		}
		r.put(key, cell{field: r.internField(field), ts: ts, del: del, val: val})
	}
	r.files++
	return nil
}

// Equal reports whether two regions hold the same cells (tests).
func Equal(a, b *Region) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	b.mu.RLock()
	defer b.mu.RUnlock()
	if len(a.rows) != len(b.rows) {
		return false
	}
	for k, ra := range a.rows {
		rb := b.rows[k]
		if rb == nil || len(ra.cells) != len(rb.cells) {
			return false
		}
		for i := range ra.cells {
			x, y := ra.cells[i], rb.cells[i]
			if x.field != y.field || x.ts != y.ts || x.del != y.del || !bytes.Equal(x.val, y.val) {
				return false
			}
		}
	}
	return true
}
