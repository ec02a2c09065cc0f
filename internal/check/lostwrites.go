// Package check computes the verdicts of a run: whether the database kept
// every write it acknowledged, and whether its reads returned what had
// been acknowledged.
//
// The lost-write check tags every write with a unique value (writer id and
// sequence number, in an extra field named TagField) and remembers, per
// key, the acknowledged write or delete that was invoked last. After the
// run, with every fault healed, it reads every written key back — with the
// driver's strong read (StrongReader: linearizable, or from the primary)
// when it has one. A key is a lost write when its final tag belongs to an
// acknowledged write that completed before another acknowledged write to
// the same key was even invoked (the final value is older than the last
// acknowledged one); it is a lost insert when the key is missing although
// a write to it was acknowledged, and a lost delete when an acknowledged
// delete was invoked last and the key still holds a value acknowledged
// before it. A write whose outcome is unknown (timeout, error) may or may
// not have been applied, so a final value from such a write is never
// counted as lost. Keys of the load phase that the run never wrote are
// read too (a sample when there are many) and must still hold their
// loaded, untagged value.
//
// The stale-read check (reads.go) judges every read of the workload while
// the run lasts against the acknowledged history of its key.
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

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/lwtag"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/workload"
)

// TagField is the field every tracked write carries its tag in; drivers
// that must know it import the leaf package lwtag instead of check.
const TagField = lwtag.Field

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

// StrongReader is the optional ability of a Reader that Verify reads back
// with when it has it: a read that returns the latest acknowledged value
// whatever the run's read options (etcd: a linearizable read even with
// etcd.serializable; Redis: the key's primary; txkv: a fresh snapshot).
// Without it a lagging replica serving the check's reads could make a
// kept write look lost (Result.VerifyReads says which was used).
type StrongReader interface {
	ReadStrong(ctx context.Context, table, key string, fields []string) (map[string][]byte, error)
}

// Tracker implements runner.Tracker. It is safe for concurrent use by
// workers with distinct ids.
type Tracker struct {
	start   time.Time
	workers []*writer
	seed    maphash.Seed
	shard   [shards]keyShard
	txns    *txnState // transactions (txn.go)
	loaded  *loadedKeys
	reads   readState // the stale-read check (reads.go)
}

// loadedKeys are the load phase's keys (CheckLoaded).
type loadedKeys struct {
	n    int64
	max  int
	name func(keynum int64) string
	skip string // why they are not checked
}

type writer struct {
	buf  [tagLen]byte
	acks []int64 // by sequence: 0 = in flight, unknown = outcome unknown, else ack time (ns since start)
	_    [40]byte
}

type keyShard struct {
	mu       sync.Mutex
	keys     map[string]*keyState
	judged   int64 // reads judged by the stale-read check (reads.go)
	unjudged int64
	_        [24]byte
}

type keyState struct {
	lastInvoke int64 // invoke time of the acknowledged write or delete invoked last
	lastTag    tag
	lastAck    int64 // its acknowledgement time
	lastDelete bool  // it is a delete
	acked      int64
	unknown    int64
	insert     bool  // an insert to this key was acknowledged
	deletes    int64 // deletes of the key, any outcome
	// maxDelAck is the latest acknowledgement of a delete; delUnknown
	// says a delete's outcome is unknown (it may apply at any time).
	maxDelAck  int64
	delUnknown bool
	hist       []histEntry // the latest acknowledged or unknown writes and deletes (reads.go)
}

// histEntry is one write or delete in a key's history.
type histEntry struct {
	tag    tag
	invoke int64
	ack    int64 // unknown for an unknown outcome
	del    bool
}

// histLen bounds a key's history: a read returning a value older than the
// history cannot be judged (counted as unjudged, never as stale).
const histLen = 16

// remember appends e to the key's history.
func (ks *keyState) remember(e histEntry) {
	if len(ks.hist) == histLen {
		copy(ks.hist, ks.hist[1:])
		ks.hist = ks.hist[:histLen-1]
	}
	ks.hist = append(ks.hist, e)
}

// ack records an acknowledged write or delete invoked at invoke.
func (ks *keyState) ack(tg tag, invoke, at int64, del bool) {
	ks.acked++
	if invoke > ks.lastInvoke {
		ks.lastInvoke, ks.lastTag, ks.lastAck, ks.lastDelete = invoke, tg, at, del
	}
	if del {
		ks.maxDelAck = max(ks.maxDelAck, at)
	}
	ks.remember(histEntry{tag: tg, invoke: invoke, ack: at, del: del})
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

// CheckLoaded makes Verify also read the load phase's keys (keynums 0 ..
// wl.RecordCount()-1) that the run never wrote: each must still hold its
// loaded, untagged value. With more than max such keys, an evenly spaced
// sample of about max is read (Result.LoadKeys says how many). Call it
// before Verify, only when the load phase wrote those keys. A workload
// with deletes is not checked this way (an untracked phase such as the
// calibration may have deleted load keys); Result.LoadKeys says so.
func (t *Tracker) CheckLoaded(wl *workload.Workload, max int) {
	if max < 1 {
		max = 1
	}
	t.loaded = &loadedKeys{n: wl.RecordCount(), max: max, name: wl.KeyName}
	if wl.Proportion(workload.Delete) > 0 {
		t.loaded.skip = "not checked: the workload deletes, and deletes outside the measured run (calibration) are not tracked"
	}
}

// BeforeWrite tags op's values with a new unique tag (a delete has no
// values to tag; it gets a sequence number all the same) and returns the
// operation's invoke time as the token.
func (t *Tracker) BeforeWrite(worker int, op *workload.Op) uint64 {
	w := t.workers[worker]
	seq := int64(len(w.acks))
	w.acks = append(w.acks, inFlight)
	if op.Kind == workload.Delete {
		return uint64(t.now())
	}
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
	del := op.Kind == workload.Delete
	if del {
		ks.deletes++
	}
	if err == nil {
		now := t.now()
		w.acks[seq] = now
		ks.ack(tag{worker, seq}, int64(token), now, del)
		if op.Kind == workload.Insert {
			ks.insert = true
		}
	} else {
		w.acks[seq] = unknown
		ks.unknown++
		ks.delUnknown = ks.delUnknown || del
		ks.remember(histEntry{tag: tag{worker, seq}, invoke: int64(token), ack: unknown, del: del})
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
	Kind     string `json:"kind"`               // lost-write, lost-insert, lost-delete, lost-load-record, unreadable, foreign-value
	Found    string `json:"found"`              // the tag read back (or "missing")
	Expected string `json:"expected"`           // the last acknowledged write's tag
	Detail   string `json:"detail,omitempty"`   // e.g. the read error
	StaleMs  int64  `json:"stale_ms,omitempty"` // how long before the last acknowledged write's invocation the found write was acknowledged
}

// Result is the verdict of the lost-write check, and of the stale-read
// check when the run's reads were tracked.
type Result struct {
	KeysChecked   int       `json:"keys_checked"`
	AckedWrites   int64     `json:"acked_writes"` // acknowledged writes and deletes
	UnknownWrites int64     `json:"unknown_outcome_writes"`
	LostWrites    int       `json:"lost_acked_writes"`
	LostInserts   int       `json:"lost_inserts"`
	LostDeletes   int       `json:"lost_deletes"` // an acknowledged delete whose key still holds an older value
	Unreadable    int       `json:"unreadable_keys"`
	Foreign       int       `json:"foreign_values"` // a tag no tracked write produced
	Examples      []Example `json:"examples,omitempty"`
	DurationMs    float64   `json:"duration_ms"`
	// VerifyReads says how the keys were read back: "strong" (the driver's
	// linearizable or primary read, StrongReader) or "default" (the run's
	// reads as configured: a lagging replica may make a kept write look
	// lost).
	VerifyReads string `json:"verify_reads,omitempty"`
	// LoadKeys is the check of the load phase's keys the run never wrote
	// (nil without CheckLoaded).
	LoadKeys *LoadKeysResult `json:"load_keys,omitempty"`
	// Reads is the stale-read check of the run's reads (nil when no read
	// was tracked).
	Reads *ReadsResult `json:"reads,omitempty"`
	// Phases counts lost writes (at the acknowledgement of the write that
	// was lost) and stale and corrupt reads (at their invocation) per phase
	// of the availability report (ByPhase).
	Phases []PhaseCheck `json:"per_phase,omitempty"`
	// Txn is the lost-commit check of transactions (txn.go); nil when the
	// run had none.
	Txn *TxnResult `json:"transactions,omitempty"`

	start  time.Time // the tracker's t=0
	lostAt []int64   // per lost key: acknowledgement of the lost write (ns since start)
}

// LoadKeysResult is the check of load-phase keys never written in the run.
type LoadKeysResult struct {
	Total   int64  `json:"total"`   // load keys the run never wrote
	Checked int    `json:"checked"` // of those, read back (all, or an evenly spaced sample)
	Missing int    `json:"missing"` // read back absent: a lost loaded record
	Note    string `json:"note,omitempty"`
}

// PhaseCheck is one phase's share of the check's findings.
type PhaseCheck struct {
	Name         string  `json:"name"`
	Kind         string  `json:"kind"`
	FromMs       float64 `json:"from_ms"`
	ToMs         float64 `json:"to_ms"`
	LostWrites   int     `json:"lost_count"`
	StaleReads   int64   `json:"stale_reads_count"`
	CorruptReads int64   `json:"corrupt_reads_count"`
}

// OK reports whether nothing was lost, every key could be read and no read
// returned a value that was never written. Stale reads have their own
// verdict (ReadsOK): a store configured for serializable or replica reads
// returns them by design.
func (r Result) OK() bool {
	missing := 0
	if r.LoadKeys != nil {
		missing = r.LoadKeys.Missing
	}
	var corrupt int64
	if r.Reads != nil {
		corrupt = r.Reads.Corrupt
	}
	return r.LostWrites == 0 && r.LostInserts == 0 && r.LostDeletes == 0 && missing == 0 && corrupt == 0 &&
		r.Unreadable == 0 && r.Foreign == 0 && r.Txn.OK()
}

// ReadsOK reports whether no tracked read was stale or corrupt.
func (r Result) ReadsOK() bool { return r.Reads == nil || (r.Reads.Stale == 0 && r.Reads.Corrupt == 0) }

// String is a one-line verdict.
func (r Result) String() string {
	s := fmt.Sprintf("%d keys checked, %d acknowledged writes (%d with unknown outcome): %d lost acknowledged writes, %d lost inserts, %d lost deletes, %d unreadable",
		r.KeysChecked, r.AckedWrites, r.UnknownWrites, r.LostWrites, r.LostInserts, r.LostDeletes, r.Unreadable)
	if r.VerifyReads == "default" {
		s += " (read back with the run's reads: the driver has no strong read)"
	}
	if l := r.LoadKeys; l != nil && l.Note != "" {
		s += "; load keys " + l.Note
	} else if l != nil {
		s += fmt.Sprintf("; load keys not written in the run: %d of %d read, %d missing", l.Checked, l.Total, l.Missing)
	}
	if rd := r.Reads; rd != nil {
		s += fmt.Sprintf("; reads: %d judged, %d stale, %d corrupt, %d not judgeable", rd.Judged, rd.Stale, rd.Corrupt, rd.Unjudged)
	}
	return s + r.Txn.String()
}

// ByPhase fills r.Phases: for each phase of the availability report (times
// since runStart, the run's t=0), the lost writes whose lost write was
// acknowledged in it and the stale and corrupt reads invoked in it. Call it
// on the Result Verify returned, after the analysis.
func (r *Result) ByPhase(runStart time.Time, phases []analyze.PhaseStats) {
	if r.start.IsZero() {
		return
	}
	off := r.start.Sub(runStart) // the tracker's t=0 on the run's clock
	in := func(ns int64, ph analyze.PhaseStats) bool {
		at := float64(time.Duration(ns)+off) / float64(time.Millisecond)
		return at >= ph.FromMs && at < ph.ToMs
	}
	r.Phases = nil
	for _, ph := range phases {
		pc := PhaseCheck{Name: ph.Name, Kind: ph.Kind, FromMs: ph.FromMs, ToMs: ph.ToMs}
		for _, at := range r.lostAt {
			if in(at, ph) {
				pc.LostWrites++
			}
		}
		if r.Reads != nil {
			for _, at := range r.Reads.staleAt {
				if in(at, ph) {
					pc.StaleReads++
				}
			}
			for _, at := range r.Reads.corruptAt {
				if in(at, ph) {
					pc.CorruptReads++
				}
			}
		}
		r.Phases = append(r.Phases, pc)
	}
}

// Verify reads every written key back through d and compares. Reads that
// fail are retried until ctx ends; keys still unreadable then are counted
// as such. It uses up to parallel concurrent readers.
func (t *Tracker) Verify(ctx context.Context, d Reader, table string, parallel int) Result {
	began := time.Now()
	if parallel < 1 {
		parallel = 8
	}
	read := d.Read
	verifyReads := "default"
	if sr, ok := d.(StrongReader); ok {
		read, verifyReads = sr.ReadStrong, "strong"
	}
	type item struct {
		key  string
		ks   keyState
		load bool // a load-phase key the run never wrote
	}
	var items []item
	var res Result
	for i := range t.shard {
		s := &t.shard[i]
		s.mu.Lock()
		for k, ks := range s.keys {
			items = append(items, item{key: k, ks: *ks})
			res.AckedWrites += ks.acked
			res.UnknownWrites += ks.unknown
		}
		s.mu.Unlock()
	}
	sort.Slice(items, func(i, j int) bool { return items[i].key < items[j].key })
	res.KeysChecked = len(items)
	res.VerifyReads, res.start = verifyReads, t.start
	if t.loaded != nil {
		res.LoadKeys = &LoadKeysResult{}
	}
	var mu sync.Mutex
	add := func(e Example, lostAck int64) {
		mu.Lock()
		defer mu.Unlock()
		switch e.Kind {
		case "lost-write":
			res.LostWrites++
		case "lost-insert":
			res.LostInserts++
		case "lost-delete":
			res.LostDeletes++
		case "lost-load-record":
			res.LoadKeys.Missing++
		case "unreadable":
			res.Unreadable++
		case "foreign-value":
			res.Foreign++
		}
		if lostAck > 0 {
			res.lostAt = append(res.lostAt, lostAck)
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
				if it.load {
					if e, bad := t.verifyLoaded(ctx, read, table, it.key); bad {
						add(e, 0)
					}
					continue
				}
				e, bad := t.verifyKey(ctx, read, table, it.key, it.ks)
				if bad {
					lostAck := int64(0)
					if e.Kind == "lost-write" || e.Kind == "lost-insert" || e.Kind == "lost-delete" {
						lostAck = it.ks.lastAck
					}
					add(e, lostAck)
				}
				t.txns.noteFound(it.key, e.Found)
			}
		}()
	}
	for _, it := range items {
		work <- it
	}
	if res.LoadKeys != nil && t.loaded.skip != "" {
		res.LoadKeys.Note = t.loaded.skip
	} else if res.LoadKeys != nil {
		for _, k := range t.unwrittenLoadKeys(res.LoadKeys) {
			work <- item{key: k, load: true}
		}
	}
	close(work)
	wg.Wait()
	res.Reads = t.readsResult()
	sort.Slice(res.Examples, func(i, j int) bool { return res.Examples[i].Key < res.Examples[j].Key })
	res.Txn = t.verifyTxns()
	res.DurationMs = float64(time.Since(began)) / float64(time.Millisecond)
	return res
}

// readFunc is a Reader's Read or a StrongReader's ReadStrong.
type readFunc func(ctx context.Context, table, key string, fields []string) (map[string][]byte, error)

// readBack reads key, retrying failed reads until ctx ends.
func readBack(ctx context.Context, read readFunc, table, key string) (map[string][]byte, error) {
	for attempt := 0; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		rec, err := read(rctx, table, key, nil)
		cancel()
		if err == nil || errors.Is(err, outcome.ErrNotFound) || ctx.Err() != nil {
			return rec, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(min(attempt+1, 10)) * 100 * time.Millisecond):
		}
	}
}

// unwrittenLoadKeys lists the load keys the run never wrote (an evenly
// spaced sample when there are more than the maximum) and fills res's
// counts of them.
func (t *Tracker) unwrittenLoadKeys(res *LoadKeysResult) []string {
	l := t.loaded
	written := func(k string) bool {
		s := &t.shard[maphash.String(t.seed, k)%shards]
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.keys[k] != nil
	}
	var n int64
	for i := int64(0); i < l.n; i++ {
		if !written(l.name(i)) {
			n++
		}
	}
	res.Total = n
	stride := int64(1)
	if n > int64(l.max) {
		stride = (n + int64(l.max) - 1) / int64(l.max)
	}
	var out []string
	var j int64
	for i := int64(0); i < l.n; i++ {
		k := l.name(i)
		if written(k) {
			continue
		}
		if j%stride == 0 {
			out = append(out, k)
		}
		j++
	}
	res.Checked = len(out)
	return out
}

// verifyLoaded reads a load key the run never wrote: it must be there,
// untagged.
func (t *Tracker) verifyLoaded(ctx context.Context, read readFunc, table, key string) (Example, bool) {
	rec, err := readBack(ctx, read, table, key)
	ex := Example{Key: key, Expected: "the loaded value"}
	switch {
	case errors.Is(err, outcome.ErrNotFound):
		ex.Kind, ex.Found = "lost-load-record", "missing"
		return ex, true
	case err != nil:
		ex.Kind, ex.Found, ex.Detail = "unreadable", "?", err.Error()
		return ex, true
	}
	if raw, has := rec[TagField]; has {
		ex.Kind, ex.Found, ex.Detail = "foreign-value", strconv.Quote(string(raw)), "a tagged value on a key the run never wrote"
		return ex, true
	}
	return ex, false
}

func (t *Tracker) verifyKey(ctx context.Context, read readFunc, table, key string, ks keyState) (Example, bool) {
	rec, err := readBack(ctx, read, table, key)
	ex := Example{Key: key}
	if ks.acked > 0 {
		ex.Expected = ks.lastTag.String()
		if ks.lastDelete {
			ex.Expected = "deleted by " + ks.lastTag.String()
		}
	}
	switch {
	case errors.Is(err, outcome.ErrNotFound):
		// absent is right when the operation acknowledged last is a delete,
		// or when a delete may have been applied after it
		if ks.acked == 0 || ks.lastDelete || ks.delUnknown || ks.maxDelAck > ks.lastInvoke {
			return ex, false
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
		if ks.lastDelete {
			ex.Kind = "lost-delete"
		}
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
		if ks.lastDelete {
			ex.Kind = "lost-delete"
		}
		ex.StaleMs = (ks.lastInvoke - ack) / int64(time.Millisecond)
		return ex, true
	}
	return ex, false
}
