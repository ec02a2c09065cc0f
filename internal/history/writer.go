package history

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// FlushInterval is the longest time a completed operation waits in a
// Writer's buffer: a Write flushes when the last flush is older.
const FlushInterval = 200 * time.Millisecond

// Writer appends operations to a history. It is safe for concurrent use:
// each Write encodes outside the lock and appends one whole line under it.
// The buffer is flushed when full, on every Write that comes FlushInterval
// or more after the last flush, and on Flush and Close, so a process killed
// halfway leaves a prefix of whole lines (and at most one torn line, which
// the Reader skips).
type Writer struct {
	mu        sync.Mutex
	bw        *bufio.Writer
	closer    io.Closer
	start     time.Time
	lastFlush time.Duration
	count     int64
	err       error
	pool      sync.Pool // *[]byte line buffers
}

// NewWriter starts a history on w (writing its header line). Close does
// not close w.
func NewWriter(w io.Writer) (*Writer, error) {
	hw := &Writer{bw: bufio.NewWriterSize(w, 64<<10), start: time.Now()}
	hw.pool.New = func() any { b := make([]byte, 0, 256); return &b }
	if _, err := hw.bw.Write(appendHeader(nil)); err != nil {
		return nil, fmt.Errorf("writing history header: %w", err)
	}
	if err := hw.bw.Flush(); err != nil {
		return nil, fmt.Errorf("writing history header: %w", err)
	}
	return hw, nil
}

// Create creates (or truncates) the history file at path.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating history: %w", err)
	}
	w, err := NewWriter(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	w.closer = f
	return w, nil
}

// Write appends op. After the first error every Write returns it.
func (w *Writer) Write(op *Op) error {
	bp := w.pool.Get().(*[]byte)
	line := AppendLine((*bp)[:0], op)
	w.mu.Lock()
	if w.err == nil {
		if _, err := w.bw.Write(line); err != nil {
			w.err = fmt.Errorf("writing history: %w", err)
		} else {
			w.count++
			if now := time.Since(w.start); now-w.lastFlush >= FlushInterval {
				w.lastFlush = now
				if err := w.bw.Flush(); err != nil {
					w.err = fmt.Errorf("writing history: %w", err)
				}
			}
		}
	}
	err := w.err
	w.mu.Unlock()
	if cap(line) <= 64<<10 {
		*bp = line
		w.pool.Put(bp)
	}
	return err
}

// Count is the number of operations written.
func (w *Writer) Count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count
}

// Flush writes the buffered lines out.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		if err := w.bw.Flush(); err != nil {
			w.err = fmt.Errorf("writing history: %w", err)
		}
	}
	return w.err
}

// Close flushes and closes the file Create opened.
func (w *Writer) Close() error {
	err := w.Flush()
	if w.closer != nil {
		if cerr := w.closer.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing history: %w", cerr)
		}
		w.closer = nil
	}
	return err
}
