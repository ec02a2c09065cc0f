// Package check computes the verdicts of a run after it ended: whether the
// database kept every write it acknowledged.
//
// The lost-write check tags every write with a unique value (writer id and
// sequence number, in an extra field named TagField) and remembers, per
// key, the acknowledged write that was invoked last. After the run, with
// every fault healed, it reads every written key back. A key is a lost
// write when its final tag belongs to an acknowledged write that completed
// before another acknowledged write to the same key was even invoked (the
// final value is older than the last acknowledged one); it is a lost insert
// when the key is missing although a write to it was acknowledged. A write
// whose outcome is unknown (timeout, error) may or may not have been
// applied, so a final value from such a write is never counted as lost.
package check

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/workload"
)

// TagField is the field every tracked write carries its tag in.
const TagField = "fbtag"

const (
	tagLen   = 15 // wwww:ssssssssss (hex)
	inFlight = 0
	unknown  = math.MaxInt64
	shards   = 64
)

// Reader reads a record back, as a driver's Read does (a missing key is an
// error wrapping outcome.ErrNotFound). Any driver.Driver is one; the check
// needs nothing else of it.
type Reader interface {
	Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error)
}

// Tracker implements runner.Tracker. It is safe for concurrent use by
// workers with distinct ids.
type Tracker struct {
	start   time.Time
	workers []*writer
	seed    maphash.Seed
	shard   [shards]keyShard
	txns    *txnState // transactions (txn.go)
}

type writer struct {
	buf  [tagLen]byte
	acks []int64 // by sequence: 0 = in flight, unknown = outcome unknown, else ack time (ns since start)
	_    [40]byte
}

type keyShard struct {
	mu   sync.Mutex
	keys map[string]*keyState
	_    [40]byte
}

type keyState struct {
	lastInvoke int64 // invoke time of the acknowledged write invoked last
	lastTag    tag
	acked      int64
	unknown    int64
	insert     bool // an insert to this key was acknowledged
}

type tag struct {
	worker int
	seq    int64
}

func (t tag) String() string { return fmt.Sprintf("w%d#%d", t.worker, t.seq) }

// NewTracker returns a tracker for workers writer ids 0..workers-1.
func NewTracker(workers int) *Tracker {
	t := &Tracker{start: time.Now(), workers: make([]*writer, workers), seed: maphash.MakeSeed(), txns: newTxnState(workers)}
	for i := range t.workers {
		t.workers[i] = &writer{acks: make([]int64, 0, 1024)}
	}
	for i := range t.shard {
		t.shard[i].keys = map[string]*keyState{}
	}
	return t
}

func (t *Tracker) now() int64 { return int64(time.Since(t.start)) + 1 }

// BeforeWrite tags op's values with a new unique tag and returns the
// write's invoke time as the token.
func (t *Tracker) BeforeWrite(worker int, op *workload.Op) uint64 {
	w := t.workers[worker]
	seq := int64(len(w.acks))
	w.acks = append(w.acks, inFlight)
	encodeTag(&w.buf, worker, seq)
	if op.Values == nil {
		op.Values = map[string][]byte{}
	}
	op.Values[TagField] = w.buf[:]
	return uint64(t.now())
}

// AfterWrite records the outcome of the write tagged by the last BeforeWrite of worker.
func (t *Tracker) AfterWrite(worker int, op *workload.Op, token uint64, err error) {
	w := t.workers[worker]
	seq := int64(len(w.acks) - 1)
	s := &t.shard[maphash.String(t.seed, op.Key)%shards]
	s.mu.Lock()
	ks := s.keys[op.Key]
	if ks == nil {
		ks = &keyState{lastInvoke: -1}
		s.keys[op.Key] = ks
	}
	if err == nil {
		w.acks[seq] = t.now()
		ks.acked++
		if int64(token) > ks.lastInvoke {
			ks.lastInvoke = int64(token)
			ks.lastTag = tag{worker, seq}
		}
		if op.Kind == workload.Insert {
			ks.insert = true
		}
	} else {
		w.acks[seq] = unknown
		ks.unknown++
	}
	s.mu.Unlock()
}

func encodeTag(b *[tagLen]byte, worker int, seq int64) {
	const hexd = "0123456789abcdef"
	for i := 3; i >= 0; i-- {
		b[i] = hexd[worker&0xf]
		worker >>= 4
	}
	b[4] = ':'
	for i := tagLen - 1; i >= 5; i-- {
		b[i] = hexd[seq&0xf]
		seq >>= 4
	}
}

func decodeTag(v []byte) (tag, bool) {
	if len(v) != tagLen || v[4] != ':' {
		return tag{}, false
	}
	w, err1 := strconv.ParseUint(string(v[:4]), 16, 32)
	s, err2 := strconv.ParseUint(string(v[5:]), 16, 63)
	if err1 != nil || err2 != nil {
		return tag{}, false
	}
	return tag{int(w), int64(s)}, true
}

// Example is one lost write, for the report.
type Example struct {
	Key      string `json:"key"`
	Kind     string `json:"kind"`               // lost-write, lost-insert, unreadable, foreign-value
	Found    string `json:"found"`              // the tag read back (or "missing")
	Expected string `json:"expected"`           // the last acknowledged write's tag
	Detail   string `json:"detail,omitempty"`   // e.g. the read error
	StaleMs  int64  `json:"stale_ms,omitempty"` // how long before the last acknowledged write's invocation the found write was acknowledged
}

// Result is the verdict of the lost-write check.
type Result struct {
	KeysChecked   int       `json:"keys_checked"`
	AckedWrites   int64     `json:"acked_writes"`
	UnknownWrites int64     `json:"unknown_outcome_writes"`
	LostWrites    int       `json:"lost_acked_writes"`
	LostInserts   int       `json:"lost_inserts"`
	Unreadable    int       `json:"unreadable_keys"`
	Foreign       int       `json:"foreign_values"` // a tag no tracked write produced
	Examples      []Example `json:"examples,omitempty"`
	DurationMs    float64   `json:"duration_ms"`
	// Txn is the lost-commit check of transactions (txn.go); nil when the
	// run had none.
	Txn *TxnResult `json:"transactions,omitempty"`
}

// OK reports whether nothing was lost and every key could be read.
func (r Result) OK() bool {
	return r.LostWrites == 0 && r.LostInserts == 0 && r.Unreadable == 0 && r.Foreign == 0 && r.Txn.OK()
}

// String is a one-line verdict.
func (r Result) String() string {
	return fmt.Sprintf("%d keys checked, %d acknowledged writes (%d with unknown outcome): %d lost acknowledged writes, %d lost inserts, %d unreadable",
		r.KeysChecked, r.AckedWrites, r.UnknownWrites, r.LostWrites, r.LostInserts, r.Unreadable) + r.Txn.String()
}

// Verify reads every written key back through d and compares. Reads that
// fail are retried until ctx ends; keys still unreadable then are counted
// as such. It uses up to parallel concurrent readers.
func (t *Tracker) Verify(ctx context.Context, d Reader, table string, parallel int) Result {
	began := time.Now()
	if parallel < 1 {
		parallel = 8
	}
	type item struct {
		key string
		ks  keyState
	}
	var items []item
	var res Result
	for i := range t.shard {
		s := &t.shard[i]
		s.mu.Lock()
		for k, ks := range s.keys {
			items = append(items, item{k, *ks})
			res.AckedWrites += ks.acked
			res.UnknownWrites += ks.unknown
		}
		s.mu.Unlock()
	}
	sort.Slice(items, func(i, j int) bool { return items[i].key < items[j].key })
	res.KeysChecked = len(items)
	var mu sync.Mutex
	add := func(e Example) {
		mu.Lock()
		defer mu.Unlock()
		switch e.Kind {
		case "lost-write":
			res.LostWrites++
		case "lost-insert":
			res.LostInserts++
		case "unreadable":
			res.Unreadable++
		case "foreign-value":
			res.Foreign++
		}
		if len(res.Examples) < 20 {
			res.Examples = append(res.Examples, e)
		}
	}
	work := make(chan item)
	var wg sync.WaitGroup
	for i := 0; i < parallel; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				e, bad := t.verifyKey(ctx, d, table, it.key, it.ks)
				if bad {
					add(e)
				}
				t.txns.noteFound(it.key, e.Found)
			}
		}()
	}
	for _, it := range items {
		work <- it
	}
	close(work)
	wg.Wait()
	sort.Slice(res.Examples, func(i, j int) bool { return res.Examples[i].Key < res.Examples[j].Key })
	res.Txn = t.verifyTxns()
	res.DurationMs = float64(time.Since(began)) / float64(time.Millisecond)
	return res
}

func (t *Tracker) verifyKey(ctx context.Context, d Reader, table, key string, ks keyState) (Example, bool) {
	var rec map[string][]byte
	var err error
	for attempt := 0; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		rec, err = d.Read(rctx, table, key, nil)
		cancel()
		if err == nil || errors.Is(err, outcome.ErrNotFound) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(min(attempt+1, 10)) * 100 * time.Millisecond):
		}
	}
	ex := Example{Key: key}
	if ks.acked > 0 {
		ex.Expected = ks.lastTag.String()
	}
	switch {
	case errors.Is(err, outcome.ErrNotFound):
		if ks.acked == 0 {
			return ex, false // only unknown-outcome writes: absence is allowed
		}
		ex.Found, ex.Kind = "missing", "lost-write"
		if ks.insert {
			ex.Kind = "lost-insert"
		}
		return ex, true
	case err != nil:
		ex.Kind, ex.Found, ex.Detail = "unreadable", "?", err.Error()
		return ex, true
	}
	raw, has := rec[TagField]
	if !has {
		if ks.acked == 0 {
			return ex, false
		}
		ex.Kind, ex.Found = "lost-write", "untagged (the value from before the run)"
		return ex, true
	}
	tg, ok := decodeTag(raw)
	if !ok || tg.worker >= len(t.workers) || tg.seq >= int64(len(t.workers[tg.worker].acks)) {
		ex.Kind, ex.Found = "foreign-value", strconv.Quote(string(raw))
		return ex, true
	}
	ex.Found = tg.String()
	ack := t.workers[tg.worker].acks[tg.seq]
	if ks.acked == 0 || ack == unknown || ack == inFlight {
		return ex, false
	}
	if ack < ks.lastInvoke {
		ex.Kind = "lost-write"
		ex.StaleMs = (ks.lastInvoke - ack) / int64(time.Millisecond)
		return ex, true
	}
	return ex, false
}
