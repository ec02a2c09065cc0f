package distrib

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/faultbench/faultbench/internal/history"
)

// historySink is a worker's history.jsonl: what the history writer writes
// goes to the coordinator as MsgHistory messages of whole lines, so the
// coordinator holds every operation the worker completed up to its last
// flush (every history.FlushInterval) even if the worker dies.
type historySink struct {
	mu      sync.Mutex
	send    func(b []byte) error
	pending []byte
	err     error
}

// Write implements io.Writer: it sends the whole lines of what it has so
// far and keeps the rest.
func (s *historySink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	s.pending = append(s.pending, p...)
	i := bytes.LastIndexByte(s.pending, '\n')
	if i < 0 {
		return len(p), nil
	}
	chunk := bytes.Clone(s.pending[:i+1])
	s.pending = append(s.pending[:0], s.pending[i+1:]...)
	if err := s.send(chunk); err != nil {
		s.err = fmt.Errorf("sending the history: %w", err)
		return 0, s.err
	}
	return len(p), nil
}

// historyParts are the workers' histories as they arrive at the
// coordinator, one file each in RUN_DIR/history-parts/ until they are
// merged into RUN_DIR/history.jsonl.
type historyParts struct {
	dir   string // the run directory
	files map[int]*os.File
	err   error
}

// PartsDir is where the workers' histories wait to be merged, in the run
// directory.
const PartsDir = "history-parts"

func newHistoryParts(dir string) *historyParts {
	return &historyParts{dir: dir, files: map[int]*os.File{}}
}

func (h *historyParts) path(client int) string {
	return filepath.Join(h.dir, PartsDir, "client"+strconv.Itoa(client)+".jsonl")
}

// add appends worker client's lines to its part. Only the first error is
// returned (merge returns it again).
func (h *historyParts) add(client int, b []byte) error {
	if h.err != nil {
		return nil
	}
	f := h.files[client]
	if f == nil {
		if err := os.MkdirAll(filepath.Join(h.dir, PartsDir), 0o755); err != nil {
			h.err = err
			return err
		}
		var err error
		if f, err = os.Create(h.path(client)); err != nil {
			h.err = err
			return err
		}
		h.files[client] = f
	}
	if _, err := f.Write(b); err != nil {
		h.err = fmt.Errorf("client %d's history: %w", client, err)
	}
	return h.err
}

// merge closes the parts and merges them, in client order, into the run
// directory's history.jsonl (history.Merge: each client's process ids
// shifted past the previous clients', its times as they are — a worker's
// t = 0 is the coordinator's, its clock offset already applied). The
// parts are removed once merged. It returns the number of operations and
// a note per torn part; nothing is written when no worker sent a history.
func (h *historyParts) merge(ctx context.Context, clients int) (int, []string, error) {
	var sources []history.Source
	for i := range clients {
		f := h.files[i]
		if f == nil {
			continue
		}
		if err := f.Close(); err != nil && h.err == nil {
			h.err = err
		}
		sources = append(sources, history.Source{Path: h.path(i)})
	}
	if h.err != nil {
		return 0, nil, fmt.Errorf("the workers' histories: %w", h.err)
	}
	if len(sources) == 0 {
		return 0, nil, nil
	}
	out, err := os.Create(filepath.Join(h.dir, history.FileName))
	if err != nil {
		return 0, nil, fmt.Errorf("merging the workers' histories: %w", err)
	}
	res, err := history.Merge(ctx, out, sources)
	if cerr := out.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return 0, nil, fmt.Errorf("merging the workers' histories (kept in %s): %w", filepath.Join(h.dir, PartsDir), err)
	}
	var notes []string
	for _, t := range res.Torn {
		notes = append(notes, fmt.Sprintf("history of %s: its last line was torn (the worker died while writing it) and is left out", filepath.Base(t)))
	}
	if err := os.RemoveAll(filepath.Join(h.dir, PartsDir)); err != nil {
		return res.Ops, notes, err
	}
	return res.Ops, notes, nil
}
