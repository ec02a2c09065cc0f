// Package txkvtest is the lost-commit check of txkv's crash tests (the
// in-process cluster tests of internal/txkv and the real-process tests of
// internal/launcher/txkv): a History of every acknowledged commit and a
// verification that reads each acknowledged write-set back at its commit
// timestamp. txkv keeps versions (the commit timestamp is the version of
// every cell), so a write-set that a crash lost is missing at its own
// timestamp even when later commits overwrote its keys; reading only each
// key's last value would miss it.
package txkvtest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/client"
)

// Commit is one acknowledged transaction: its commit timestamp and the
// value it wrote to the checked field of each row (by key).
type Commit struct {
	TS     uint64
	Writes map[string]string
}

// History records the outcomes of a load's transactions. Safe for
// concurrent use.
type History struct {
	table, field string

	mu      sync.Mutex
	acked   []Commit
	unknown int
	aborted int
}

// NewHistory returns an empty history of writes to field of table's rows.
func NewHistory(table, field string) *History {
	return &History{table: table, field: field}
}

// Acked records a commit acknowledged at ts with the values it wrote
// (key -> value; the map is copied).
func (h *History) Acked(ts uint64, writes map[string]string) {
	c := Commit{TS: ts, Writes: make(map[string]string, len(writes))}
	for k, v := range writes {
		c.Writes[k] = v
	}
	h.mu.Lock()
	h.acked = append(h.acked, c)
	h.mu.Unlock()
}

// Aborted counts a transaction that lost a conflict.
func (h *History) Aborted() {
	h.mu.Lock()
	h.aborted++
	h.mu.Unlock()
}

// Unknown counts a transaction whose outcome is not known (it is not
// checked: without a commit timestamp there is no version to read).
func (h *History) Unknown() {
	h.mu.Lock()
	h.unknown++
	h.mu.Unlock()
}

// Acks returns how many commits were acknowledged so far.
func (h *History) Acks() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.acked)
}

// MinTS returns the oldest acknowledged commit's timestamp (0 if none).
func (h *History) MinTS() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var m uint64
	for i, c := range h.acked {
		if i == 0 || c.TS < m {
			m = c.TS
		}
	}
	return m
}

// Lost is one write of an acknowledged commit that is not there at its
// commit timestamp.
type Lost struct {
	TS    uint64
	Key   string
	Want  string
	Got   string
	Found bool
}

// Result is what Verify found.
type Result struct {
	Commits int    // acknowledged commits checked
	Writes  int    // their writes, each read at its commit timestamp
	Unknown int    // transactions with an unknown outcome (not checked)
	Aborted int    // transactions that lost a conflict
	MaxTS   uint64 // the newest acknowledged commit
	// Snapshot is the snapshot the coordinator handed out when the check
	// started reading; Stalled: it stayed below MaxTS (acknowledged
	// commits never became visible) until the wait ran out.
	Snapshot uint64
	Stalled  bool
	// Lost lists the missing writes; LostCommits counts the commits with
	// at least one.
	Lost        []Lost
	LostCommits int
}

// OK reports whether every acknowledged commit was found in full and the
// newest became visible.
func (r Result) OK() bool { return len(r.Lost) == 0 && !r.Stalled }

// String summarises r with up to five lost writes.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lost-commit check: %d acknowledged commits (%d writes) read at their commit timestamps, %d aborted, %d with an unknown outcome; %d commits lost (%d writes)",
		r.Commits, r.Writes, r.Aborted, r.Unknown, r.LostCommits, len(r.Lost))
	if r.Stalled {
		fmt.Fprintf(&b, "; visibility stalled at %d below the newest acknowledged commit %d", r.Snapshot, r.MaxTS)
	}
	for i, l := range r.Lost {
		if i == 5 {
			fmt.Fprintf(&b, "; ...")
			break
		}
		if l.Found {
			fmt.Fprintf(&b, "; ts %d %s: found %q, want %q", l.TS, l.Key, l.Got, l.Want)
		} else {
			fmt.Fprintf(&b, "; ts %d %s: missing, want %q", l.TS, l.Key, l.Want)
		}
	}
	return b.String()
}

// Verify checks the history against the cluster cl talks to: it waits, at
// most wait, until the coordinator hands out a snapshot at or above the
// newest acknowledged commit (every acknowledged write-set flushed or
// replayed), then reads every write of every acknowledged commit at that
// commit's timestamp, with parallel readers. An error means the check
// could not run (a read failed until ctx ended), not that data was lost.
// Call it once the load has stopped.
func (h *History) Verify(ctx context.Context, cl *client.Client, wait time.Duration, parallel int) (Result, error) {
	h.mu.Lock()
	commits := append([]Commit(nil), h.acked...)
	r := Result{Commits: len(commits), Unknown: h.unknown, Aborted: h.aborted}
	h.mu.Unlock()
	sort.Slice(commits, func(i, j int) bool { return commits[i].TS < commits[j].TS })
	for i, c := range commits {
		r.MaxTS = max(r.MaxTS, c.TS)
		r.Writes += len(c.Writes)
		if i > 0 && commits[i-1].TS == c.TS {
			return r, fmt.Errorf("two acknowledged commits at timestamp %d", c.TS)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	for {
		tx, err := cl.Begin(wctx)
		if err == nil {
			r.Snapshot = tx.StartTS()
			tx.Abort()
			if r.Snapshot >= r.MaxTS {
				break
			}
		}
		if sleep(wctx, 20*time.Millisecond) != nil {
			r.Stalled = true
			break
		}
	}
	cancel()
	if ctx.Err() != nil {
		return r, fmt.Errorf("lost-commit check: %w", ctx.Err())
	}

	type job struct {
		c   *Commit
		key string
	}
	jobs := make(chan job)
	var mu sync.Mutex
	lost := map[uint64]bool{}
	var firstErr error
	var wg sync.WaitGroup
	for range max(parallel, 1) {
		wg.Go(func() {
			for j := range jobs {
				m, found, err := cl.ReadAt(ctx, h.table, j.key, []string{h.field}, j.c.TS)
				mu.Lock()
				switch {
				case err != nil:
					if firstErr == nil {
						firstErr = fmt.Errorf("lost-commit check: reading %s at %d: %w", j.key, j.c.TS, err)
					}
				case !found || string(m[h.field]) != j.c.Writes[j.key]:
					r.Lost = append(r.Lost, Lost{TS: j.c.TS, Key: j.key, Want: j.c.Writes[j.key], Got: string(m[h.field]), Found: found})
					lost[j.c.TS] = true
				}
				mu.Unlock()
			}
		})
	}
	for i := range commits {
		for k := range commits[i].Writes {
			select {
			case jobs <- job{&commits[i], k}:
			case <-ctx.Done():
			}
		}
	}
	close(jobs)
	wg.Wait()
	sort.Slice(r.Lost, func(i, j int) bool {
		if r.Lost[i].TS != r.Lost[j].TS {
			return r.Lost[i].TS < r.Lost[j].TS
		}
		return r.Lost[i].Key < r.Lost[j].Key
	})
	r.LostCommits = len(lost)
	if firstErr == nil && ctx.Err() != nil {
		firstErr = fmt.Errorf("lost-commit check: %w", ctx.Err())
	}
	return r, firstErr
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
