// Package seglog is an append-only log in segment files with group sync:
// records are appended to an in-memory buffer, and one writer goroutine
// writes the buffer to the current segment and fsyncs it, either when a
// caller waits for its record to be durable (group commit: everything
// appended meanwhile shares the fsync) or periodically. Segments roll at a
// size limit; sealed segments can be removed by key (truncation).
//
// txkv uses it for the coordinator's recovery log (every commit waits for
// its fsync) and for the region servers' write-ahead logs (synced
// periodically in async persistence, before every acknowledgement in sync
// persistence).
//
// A record is framed as a 4-byte length, a 4-byte CRC-32C of the payload
// and the payload. Reading stops at the first torn or corrupt record of a
// segment (the tail a crash cut off).
package seglog

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

const segSuffix = ".log"

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Options configure a Log.
type Options struct {
	// Dir holds the segment files; it is created if missing.
	Dir string
	// SegmentBytes is the size at which a segment is sealed and a new one
	// begun (default 64 MiB).
	SegmentBytes int64
	// SyncInterval, if positive, syncs pending records at least this often;
	// otherwise only when a caller waits (WaitSynced, Barrier, Sync).
	SyncInterval time.Duration
	// NoSync skips fsync (tests only): data is written but not forced.
	NoSync bool
	// Fault injects I/O errors (tests only): it is called before each
	// write of buffered records (written false) and after it, before the
	// fsync (written true); an error fails that step as an I/O error
	// would, and the log stays failed.
	Fault func(written bool) error
}

// Validate checks o.
func (o Options) Validate() error {
	if o.Dir == "" {
		return errors.New("seglog: Dir is required")
	}
	if o.SegmentBytes < 0 || o.SyncInterval < 0 {
		return errors.New("seglog: sizes and intervals must not be negative")
	}
	return nil
}

// Segment describes one segment file.
type Segment struct {
	Path    string
	Index   uint64
	MinKey  uint64 // smallest key appended (0 if empty)
	MaxKey  uint64 // largest key appended
	Records int
	LastSeq uint64 // sequence number of its last record (0 if none)
	Sealed  bool
	Bytes   int64 // bytes synced to it
}

// Log is an open log. Its methods are safe for concurrent use.
type Log struct {
	opts Options

	mu       sync.Mutex
	buf      []byte
	bufKeys  []uint64 // keys of the records in buf, for segment bounds
	appended uint64   // sequence number of the last appended record
	synced   uint64   // sequence number of the last durable record
	syncedCh chan struct{}
	err      error
	segs     []*Segment // in order; the last one is open
	f        *os.File
	closed   bool

	kick chan struct{}
	done chan struct{}
}

// Open opens a log in opts.Dir. Existing segments are kept (sealed) and
// readable; appends go to a new segment after them.
func Open(opts Options) (*Log, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.SegmentBytes == 0 {
		opts.SegmentBytes = 64 << 20
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("seglog: %w", err)
	}
	l := &Log{opts: opts, syncedCh: make(chan struct{}), kick: make(chan struct{}, 1), done: make(chan struct{})}
	old, err := listSegments(opts.Dir)
	if err != nil {
		return nil, err
	}
	next := uint64(1)
	for _, s := range old {
		s.Sealed = true
		// bounds of old segments come from reading them
		_ = readSegment(s.Path, func(rec []byte) error {
			if len(rec) >= 8 {
				k := binary.BigEndian.Uint64(rec)
				if s.Records == 0 || k < s.MinKey {
					s.MinKey = k
				}
				if k > s.MaxKey {
					s.MaxKey = k
				}
			}
			s.Records++
			return nil
		})
		if st, err := os.Stat(s.Path); err == nil {
			s.Bytes = st.Size()
		}
		l.segs = append(l.segs, s)
		next = s.Index + 1
	}
	if err := l.newSegment(next); err != nil {
		return nil, err
	}
	go l.writer()
	return l, nil
}

func segName(i uint64) string { return fmt.Sprintf("%010d%s", i, segSuffix) }

func listSegments(dir string) ([]*Segment, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("seglog: %w", err)
	}
	var out []*Segment
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, segSuffix) {
			continue
		}
		i, err := strconv.ParseUint(strings.TrimSuffix(name, segSuffix), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, &Segment{Path: filepath.Join(dir, name), Index: i})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Index < out[b].Index })
	return out, nil
}

// newSegment opens segment i for appending; mu held or not yet shared.
func (l *Log) newSegment(i uint64) error {
	p := filepath.Join(l.opts.Dir, segName(i))
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("seglog: new segment: %w", err)
	}
	if !l.opts.NoSync {
		if d, err := os.Open(l.opts.Dir); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	l.f = f
	l.segs = append(l.segs, &Segment{Path: p, Index: i})
	return nil
}

// Append adds a record with key (e.g. a commit timestamp; the first 8
// bytes of rec big-endian are used when reading segments back) and returns
// its sequence number. It does not wait for durability.
func (l *Log) Append(rec []byte, key uint64) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, errors.New("seglog: closed")
	}
	if l.err != nil {
		return 0, l.err
	}
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(rec)))
	binary.BigEndian.PutUint32(hdr[4:], crc32.Checksum(rec, crcTable))
	l.buf = append(l.buf, hdr[:]...)
	l.buf = append(l.buf, rec...)
	l.bufKeys = append(l.bufKeys, key)
	l.appended++
	return l.appended, nil
}

// Appended returns the sequence number of the last appended record.
func (l *Log) Appended() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.appended
}

// Synced returns the sequence number of the last durable record.
func (l *Log) Synced() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.synced
}

// WaitSynced asks for a sync and waits until record seq is durable.
func (l *Log) WaitSynced(ctx context.Context, seq uint64) error {
	for {
		l.mu.Lock()
		if l.err != nil {
			err := l.err
			l.mu.Unlock()
			return err
		}
		if l.synced >= seq {
			l.mu.Unlock()
			return nil
		}
		if l.closed {
			l.mu.Unlock()
			return errors.New("seglog: closed")
		}
		ch := l.syncedCh
		l.mu.Unlock()
		select {
		case l.kick <- struct{}{}:
		default:
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the log sync: %w", ctx.Err())
		}
	}
}

// Barrier waits until every record appended before the call is durable.
func (l *Log) Barrier(ctx context.Context) error { return l.WaitSynced(ctx, l.Appended()) }

func (l *Log) writer() {
	defer close(l.done)
	var tick <-chan time.Time
	if l.opts.SyncInterval > 0 {
		t := time.NewTicker(l.opts.SyncInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-l.kick:
		case <-tick:
		}
		l.mu.Lock()
		if len(l.buf) == 0 {
			closed := l.closed
			l.mu.Unlock()
			if closed {
				return
			}
			continue
		}
		buf, keys, target := l.buf, l.bufKeys, l.appended
		l.buf, l.bufKeys = nil, nil
		f := l.f
		seg := l.segs[len(l.segs)-1]
		closed := l.closed
		l.mu.Unlock()

		var err error
		if l.opts.Fault != nil {
			err = l.opts.Fault(false)
		}
		if err == nil {
			_, err = f.Write(buf)
		}
		if err == nil && l.opts.Fault != nil {
			err = l.opts.Fault(true)
		}
		if err == nil && !l.opts.NoSync {
			err = f.Sync()
		}

		l.mu.Lock()
		if err != nil {
			l.err = fmt.Errorf("seglog: writing %s: %w", seg.Path, err)
		} else {
			for _, k := range keys {
				if seg.Records == 0 || k < seg.MinKey {
					seg.MinKey = k
				}
				if k > seg.MaxKey {
					seg.MaxKey = k
				}
				seg.Records++
			}
			seg.LastSeq = target
			seg.Bytes += int64(len(buf))
			l.synced = target
			if seg.Bytes >= l.opts.SegmentBytes && !closed {
				seg.Sealed = true
				if cerr := l.f.Close(); cerr != nil {
					l.err = fmt.Errorf("seglog: closing %s: %w", seg.Path, cerr)
				} else if nerr := l.newSegment(seg.Index + 1); nerr != nil {
					l.err = nerr
				}
			}
		}
		close(l.syncedCh)
		l.syncedCh = make(chan struct{})
		more := len(l.buf) > 0
		l.mu.Unlock()
		if closed && !more {
			return
		}
		if more && l.opts.SyncInterval <= 0 {
			// waiters of records appended during the write kicked already,
			// but the kick may have been absorbed; keep going
			select {
			case l.kick <- struct{}{}:
			default:
			}
		}
	}
}

// Sync makes everything appended so far durable.
func (l *Log) Sync(ctx context.Context) error { return l.Barrier(ctx) }

// Roll seals the current segment (after syncing it) and starts a new one,
// so that everything before can be removed once no longer needed. It
// returns the sealed segment's description.
func (l *Log) Roll(ctx context.Context) (Segment, error) {
	for {
		if err := l.Barrier(ctx); err != nil {
			return Segment{}, err
		}
		l.mu.Lock()
		if l.err != nil || (len(l.buf) == 0 && l.synced == l.appended) {
			break
		}
		// appends came in meanwhile (and may be being written): sync again
		l.mu.Unlock()
	}
	defer l.mu.Unlock()
	if l.err != nil {
		return Segment{}, l.err
	}
	seg := l.segs[len(l.segs)-1]
	seg.Sealed = true
	if err := l.f.Close(); err != nil {
		l.err = err
		return Segment{}, err
	}
	if err := l.newSegment(seg.Index + 1); err != nil {
		l.err = err
		return Segment{}, err
	}
	return *seg, nil
}

// Segments describes the segments, oldest first.
func (l *Log) Segments() []Segment {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Segment, len(l.segs))
	for i, s := range l.segs {
		out[i] = *s
	}
	return out
}

// RemoveSealed deletes the sealed segments for which drop returns true.
// It returns how many it removed.
func (l *Log) RemoveSealed(drop func(Segment) bool) (int, error) {
	l.mu.Lock()
	var victims []string
	keep := l.segs[:0:0]
	for _, s := range l.segs {
		if s.Sealed && drop(*s) {
			victims = append(victims, s.Path)
			continue
		}
		keep = append(keep, s)
	}
	l.segs = keep
	l.mu.Unlock()
	var first error
	for _, p := range victims {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = fmt.Errorf("seglog: %w", err)
		}
	}
	return len(victims), first
}

// Scan calls fn for every durable record of the segments for which want
// returns true (all when want is nil), oldest first. Records appended but
// not yet durable are not seen. fn must not keep rec.
func (l *Log) Scan(want func(Segment) bool, fn func(rec []byte) error) error {
	l.mu.Lock()
	segs := make([]Segment, len(l.segs))
	for i, s := range l.segs {
		segs[i] = *s
	}
	l.mu.Unlock()
	for _, s := range segs {
		if want != nil && !want(s) {
			continue
		}
		if err := readSegmentLimit(s.Path, s.Bytes, fn); err != nil {
			return err
		}
	}
	return nil
}

// Close syncs what is pending and closes the log.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.f.Close()
	if l.err != nil {
		return l.err
	}
	return err
}

// Abandon closes the log without writing what is still buffered, as a
// crash would (tests simulate crashes with it).
func (l *Log) Abandon() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.buf, l.bufKeys = nil, nil
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
	<-l.done
	l.mu.Lock()
	l.f.Close()
	l.mu.Unlock()
}

// ReadDir calls fn for every readable record of every segment in dir, in
// order. A torn or corrupt tail of a segment ends that segment.
func ReadDir(dir string, fn func(rec []byte) error) error {
	segs, err := listSegments(dir)
	if err != nil {
		return err
	}
	for _, s := range segs {
		if err := readSegment(s.Path, fn); err != nil {
			return err
		}
	}
	return nil
}

func readSegment(path string, fn func(rec []byte) error) error {
	return readSegmentLimit(path, -1, fn)
}

// readSegmentLimit reads records from path, at most limit bytes (-1: all).
func readSegmentLimit(path string, limit int64, fn func(rec []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // removed meanwhile
		}
		return fmt.Errorf("seglog: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if limit >= 0 {
		r = io.LimitReader(f, limit)
	}
	br := bufio.NewReaderSize(r, 1<<16)
	var hdr [8]byte
	var rec []byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return nil // end, or a torn header
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		if n > 1<<30 {
			return nil
		}
		if cap(rec) < int(n) {
			rec = make([]byte, n)
		}
		rec = rec[:n]
		if _, err := io.ReadFull(br, rec); err != nil {
			return nil
		}
		if crc32.Checksum(rec, crcTable) != binary.BigEndian.Uint32(hdr[4:]) {
			return nil
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
}
