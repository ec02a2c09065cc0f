package check

import (
	"fmt"
	"hash/maphash"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/faultbench/faultbench/internal/workload"
)

// The lost-commit check extends the lost-write check to transactions (the
// workload op TXN): Tracker implements runner.TxnTracker. Every write of a
// transaction is tagged like a single write; when the transaction ends:
//
//   - committed: all its writes count as acknowledged (at the commit), so
//     the per-key check reports any of them that is missing or older than
//     expected — all of a committed transaction's writes must be present;
//   - aborted (certainly not committed): none of its writes may be visible;
//     a final value carrying one of their tags is an aborted-value;
//   - unknown outcome: all or none — if any of its writes is the final
//     value of its key, every other key it wrote must hold its write or a
//     write that may have come after it, and not an older one (a torn
//     transaction otherwise).

// abortedAck marks a write of an aborted transaction in writer.acks.
const abortedAck = math.MaxInt64 - 1

type txnWrite struct {
	key    string
	tag    tag
	invoke int64
	insert bool
}

type txnRecord struct {
	start  int64 // invoke time of its first write
	writes []txnWrite
}

type txnState struct {
	cur  []txnRecord // per worker: the transaction in progress
	used atomic.Bool

	mu        sync.Mutex
	unknown   []txnRecord
	committed int64
	aborted   int64
	unknownN  int64
	found     map[string]string // key -> what Verify found (a tag's String, "missing", ...)
}

func newTxnState(workers int) *txnState {
	return &txnState{cur: make([]txnRecord, workers), found: map[string]string{}}
}

// BeginTxn implements runner.TxnTracker.
func (t *Tracker) BeginTxn(worker int) {
	t.txns.used.Store(true)
	t.txns.cur[worker] = txnRecord{}
}

// TxnWrite implements runner.TxnTracker: it tags op's values with a new
// unique tag (the driver copies the values when the write is buffered).
func (t *Tracker) TxnWrite(worker int, op *workload.Op) {
	w := t.workers[worker]
	seq := int64(len(w.acks))
	w.acks = append(w.acks, inFlight)
	encodeTag(&w.buf, worker, seq)
	if op.Values == nil {
		op.Values = map[string][]byte{}
	}
	op.Values[TagField] = w.buf[:]
	now := t.now()
	cur := &t.txns.cur[worker]
	if len(cur.writes) == 0 {
		cur.start = now
	}
	cur.writes = append(cur.writes, txnWrite{key: op.Key, tag: tag{worker, seq}, invoke: now, insert: op.Kind == workload.Insert})
}

// EndTxn implements runner.TxnTracker.
func (t *Tracker) EndTxn(worker int, err error, aborted bool) {
	w := t.workers[worker]
	cur := t.txns.cur[worker]
	t.txns.cur[worker] = txnRecord{}
	now := t.now()
	for _, x := range cur.writes {
		switch {
		case err == nil:
			w.acks[x.tag.seq] = now
		case aborted:
			w.acks[x.tag.seq] = abortedAck
		default:
			w.acks[x.tag.seq] = unknown
		}
		s := &t.shard[keyShardOf(t, x.key)]
		s.mu.Lock()
		ks := s.keys[x.key]
		if ks == nil {
			ks = &keyState{lastInvoke: -1}
			s.keys[x.key] = ks
		}
		if err == nil {
			ks.ack(x.tag, x.invoke, now, false)
			if x.insert {
				ks.insert = true
			}
		} else if !aborted {
			ks.unknown++
			ks.remember(histEntry{tag: x.tag, invoke: x.invoke, ack: unknown})
		}
		s.mu.Unlock()
	}
	t.txns.mu.Lock()
	defer t.txns.mu.Unlock()
	switch {
	case err == nil:
		t.txns.committed++
	case aborted:
		t.txns.aborted++
	default:
		t.txns.unknownN++
		if len(cur.writes) > 0 {
			t.txns.unknown = append(t.txns.unknown, cur)
		}
	}
}

func keyShardOf(t *Tracker, key string) uint64 {
	return maphash.String(t.seed, key) % shards
}

// noteFound records what Verify read for key (only when transactions ran).
func (s *txnState) noteFound(key, found string) {
	if !s.used.Load() {
		return
	}
	s.mu.Lock()
	s.found[key] = found
	s.mu.Unlock()
}

// TxnExample is one violation of the lost-commit check.
type TxnExample struct {
	Kind   string `json:"kind"` // torn-txn, aborted-value
	Key    string `json:"key"`
	Found  string `json:"found"`
	Detail string `json:"detail,omitempty"`
}

// TxnResult is the verdict of the lost-commit check of transactions.
type TxnResult struct {
	Committed         int64        `json:"committed_txns"`
	Aborted           int64        `json:"aborted_txns"`
	Unknown           int64        `json:"unknown_outcome_txns"`
	UnknownApplied    int          `json:"unknown_applied_txns"`     // all of its writes found
	UnknownNotApplied int          `json:"unknown_not_applied_txns"` // none of its writes found
	Torn              int          `json:"torn_txns"`                // some but not all (and no later write explains it)
	AbortedVisible    int          `json:"aborted_values"`           // a write of an aborted transaction is visible
	Examples          []TxnExample `json:"examples,omitempty"`
}

// OK reports whether no transaction was torn and no aborted write is
// visible (a nil result is OK).
func (r *TxnResult) OK() bool { return r == nil || (r.Torn == 0 && r.AbortedVisible == 0) }

// String is a verdict fragment appended to Result.String.
func (r *TxnResult) String() string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf("; transactions: %d committed, %d aborted, %d unknown outcome (%d applied, %d not), %d torn, %d aborted values visible",
		r.Committed, r.Aborted, r.Unknown, r.UnknownApplied, r.UnknownNotApplied, r.Torn, r.AbortedVisible)
}

// verifyTxns runs the transaction part of the check on what Verify found.
func (t *Tracker) verifyTxns() *TxnResult {
	s := t.txns
	if !s.used.Load() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &TxnResult{Committed: s.committed, Aborted: s.aborted, Unknown: s.unknownN}
	ex := func(e TxnExample) {
		if len(r.Examples) < 20 {
			r.Examples = append(r.Examples, e)
		}
	}
	// the write a found value came from, with its acknowledgement state
	ackOf := func(found string) (tag, int64, bool) {
		var tg tag
		if _, err := fmt.Sscanf(found, "w%d#%d", &tg.worker, &tg.seq); err != nil ||
			tg.worker < 0 || tg.worker >= len(t.workers) || tg.seq < 0 || tg.seq >= int64(len(t.workers[tg.worker].acks)) {
			return tg, 0, false
		}
		return tg, t.workers[tg.worker].acks[tg.seq], true
	}
	keys := make([]string, 0, len(s.found))
	for k := range s.found {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, ack, ok := ackOf(s.found[k]); ok && ack == abortedAck {
			r.AbortedVisible++
			ex(TxnExample{Kind: "aborted-value", Key: k, Found: s.found[k], Detail: "written by a transaction that aborted"})
		}
	}
	for _, u := range s.unknown {
		last := map[string]txnWrite{} // a key written twice: its last write counts
		for _, x := range u.writes {
			last[x.key] = x
		}
		var present, absent []txnWrite
		for _, x := range last {
			if s.found[x.key] == x.tag.String() {
				present = append(present, x)
			} else {
				absent = append(absent, x)
			}
		}
		switch {
		case len(absent) == 0:
			r.UnknownApplied++
			continue
		case len(present) == 0:
			r.UnknownNotApplied++
			continue
		}
		torn := false
		for _, x := range absent {
			f := s.found[x.key]
			_, ack, ok := ackOf(f)
			// the found value must come from a write that may follow this
			// transaction: not a missing row, and not one acknowledged
			// before this transaction's first write
			if !ok || (ack != unknown && ack != inFlight && ack != abortedAck && ack < u.start) {
				torn = true
				ex(TxnExample{Kind: "torn-txn", Key: x.key, Found: f,
					Detail: fmt.Sprintf("transaction of unknown outcome: %d of its writes found (e.g. %s at %s), this one (%s) not", len(present), present[0].tag, present[0].key, x.tag)})
				break
			}
		}
		if torn {
			r.Torn++
		} else {
			r.UnknownApplied++
		}
	}
	return r
}
