package check

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/workload"
)

// The stale-read check: the Tracker implements runner.ReadTracker, so it
// sees every read of the workload (and the read of a read-modify-write)
// with its invocation time and the record it returned. A final-state check
// cannot see a write that was lost and later overwritten (W1 acknowledged,
// W2 acknowledged but lost, W3 acknowledged: the key ends at W3); a read
// between W2's acknowledgement and W3 that returns W1 can. A read is
//
//   - stale when it returns a value older than a write (or delete)
//     acknowledged before the read was invoked: the value's write had been
//     acknowledged before that later write was even invoked, or the value
//     is the loaded one (untagged) or absent although a write had been
//     acknowledged;
//   - corrupt when it returns a value no write produced (a tag that does
//     not decode);
//   - not judgeable when it failed, returned a subset of the fields
//     without the tag, returned a write not (or no longer) in the key's
//     history (in flight, or older than the last histLen writes), or found
//     the key absent where a delete may explain it.
//
// A value from a write whose outcome is unknown is never stale: it may have
// been applied at any time.

// maxAnomalyTimes bounds how many stale or corrupt read times are kept for
// the per-phase counts.
const maxAnomalyTimes = 1 << 20

// readState is the stale-read check's state; its mutex is taken only when
// a read is anomalous (counters are per shard).
type readState struct {
	mu        sync.Mutex
	stale     int64
	corrupt   int64
	staleAt   []int64
	corruptAt []int64
	examples  []ReadAnomaly
}

// ReadAnomaly is one stale or corrupt read, for the report.
type ReadAnomaly struct {
	Key      string  `json:"key"`
	Kind     string  `json:"kind"`     // stale-read, corrupt-read
	Found    string  `json:"found"`    // the tag read (or "missing", "loaded value")
	Expected string  `json:"expected"` // a write acknowledged before the read was invoked
	AtMs     float64 `json:"at_ms"`    // the read's invocation, ms since the tracker started
}

// ReadsResult is the verdict of the stale-read check.
type ReadsResult struct {
	Judged   int64         `json:"judged_count"`
	Stale    int64         `json:"stale_count"`
	Corrupt  int64         `json:"corrupt_count"`
	Unjudged int64         `json:"not_judgeable_count"`
	Examples []ReadAnomaly `json:"examples,omitempty"`

	staleAt, corruptAt []int64
}

// BeforeRead implements runner.ReadTracker: the token is the read's
// invocation time.
func (t *Tracker) BeforeRead(int, *workload.Op) uint64 { return uint64(t.now()) }

// AfterRead implements runner.ReadTracker: it judges the record the read
// returned (rec, err) against the key's acknowledged history.
func (t *Tracker) AfterRead(_ int, op *workload.Op, token uint64, rec map[string][]byte, err error) {
	tr := int64(token)
	absent := errors.Is(err, outcome.ErrNotFound)
	if err != nil && !absent {
		t.countRead(op.Key, false)
		return
	}
	raw, tagged := rec[TagField]
	if !absent && !tagged && op.Fields != nil {
		t.countRead(op.Key, false) // a field subset without the tag
		return
	}
	var found tag
	if tagged {
		var ok bool
		if found, ok = decodeTag(raw); !ok || found.worker >= len(t.workers) {
			t.anomaly(ReadAnomaly{Key: op.Key, Kind: "corrupt-read", Found: strconv.Quote(string(raw)), AtMs: ms(tr)}, tr)
			return
		}
	}
	s := &t.shard[keyShardOf(t, op.Key)]
	s.mu.Lock()
	ks := s.keys[op.Key]
	var newer *histEntry
	judged := true
	switch {
	case ks == nil:
		// never written (yet): only a tag is wrong, and it may be in flight
		judged = !tagged
	case absent:
		if ks.deletes > 0 {
			judged = false
			break
		}
		newer = ks.ackedBefore(tr, -1)
	case !tagged:
		newer = ks.ackedBefore(tr, 0) // the loaded value: older than anything
	default:
		e := ks.find(found)
		switch {
		case e == nil:
			judged = false // in flight, or older than the history
		case e.ack == unknown:
			// may have been applied at any time
		default:
			newer = ks.ackedBefore(tr, e.ack)
		}
	}
	var a ReadAnomaly
	if newer != nil {
		a = ReadAnomaly{Key: op.Key, Kind: "stale-read", Found: "loaded value", Expected: newer.tag.String(), AtMs: ms(tr)}
		switch {
		case absent:
			a.Found = "missing"
		case tagged:
			a.Found = found.String()
		}
		if newer.del {
			a.Expected = "deleted by " + newer.tag.String()
		}
	}
	if judged {
		s.judged++
	} else {
		s.unjudged++
	}
	s.mu.Unlock()
	if newer != nil {
		t.anomaly(a, tr)
	}
}

// ackedBefore returns the latest write or delete of the history
// acknowledged before tr and invoked after after (so certainly ordered
// after a write acknowledged at after), or nil.
func (ks *keyState) ackedBefore(tr, after int64) *histEntry {
	var best *histEntry
	for i := range ks.hist {
		e := &ks.hist[i]
		if e.ack != unknown && e.ack < tr && e.invoke > after && (best == nil || e.invoke > best.invoke) {
			if after < 0 && e.del {
				continue // absent after a delete is right
			}
			best = e
		}
	}
	return best
}

// find returns the history entry of tg, or nil.
func (ks *keyState) find(tg tag) *histEntry {
	for i := range ks.hist {
		if ks.hist[i].tag == tg {
			return &ks.hist[i]
		}
	}
	return nil
}

func (t *Tracker) countRead(key string, judged bool) {
	s := &t.shard[keyShardOf(t, key)]
	s.mu.Lock()
	if judged {
		s.judged++
	} else {
		s.unjudged++
	}
	s.mu.Unlock()
}

func (t *Tracker) anomaly(a ReadAnomaly, at int64) {
	r := &t.reads
	r.mu.Lock()
	defer r.mu.Unlock()
	if a.Kind == "corrupt-read" {
		r.corrupt++
		if len(r.corruptAt) < maxAnomalyTimes {
			r.corruptAt = append(r.corruptAt, at)
		}
	} else {
		r.stale++
		if len(r.staleAt) < maxAnomalyTimes {
			r.staleAt = append(r.staleAt, at)
		}
	}
	if len(r.examples) < 20 {
		r.examples = append(r.examples, a)
	}
}

// readsResult sums the stale-read check; nil when no read was tracked.
func (t *Tracker) readsResult() *ReadsResult {
	res := &ReadsResult{}
	for i := range t.shard {
		s := &t.shard[i]
		s.mu.Lock()
		res.Judged += s.judged
		res.Unjudged += s.unjudged
		s.mu.Unlock()
	}
	r := &t.reads
	r.mu.Lock()
	defer r.mu.Unlock()
	res.Judged += r.corrupt // corrupt reads are judged outside the shards
	if res.Judged+res.Unjudged == 0 {
		return nil
	}
	res.Stale, res.Corrupt = r.stale, r.corrupt
	res.Examples = append([]ReadAnomaly(nil), r.examples...)
	res.staleAt = append([]int64(nil), r.staleAt...)
	res.corruptAt = append([]int64(nil), r.corruptAt...)
	return res
}

// String is a one-line verdict.
func (r *ReadsResult) String() string {
	if r == nil {
		return "reads not tracked"
	}
	return fmt.Sprintf("%d reads judged: %d stale, %d corrupt (%d not judgeable)", r.Judged, r.Stale, r.Corrupt, r.Unjudged)
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }
