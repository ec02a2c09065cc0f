package measure

import (
	"fmt"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/faultbench/faultbench/internal/outcome"
)

// Recorder is one worker's measurement sink. Only its worker calls Record;
// the Collector's flusher takes the recorder's filled window once per
// window. Its mutex is never contended by other workers.
type Recorder struct {
	mu     sync.Mutex
	start  time.Time
	window time.Duration
	nops   int

	next    int64   // first window not yet closed; set by the flusher
	cur     *slot   // slot used last (fast path)
	open    []*slot // slots of windows >= next holding samples
	free    []*slot // empty slots handed over by the flusher
	late    int64
	clamped int64
	cut     [outcome.NumClasses]int64 // operations in flight at the end, by class (Cut)
	drops   []dropRun                 // open-loop operations never started (Drop)
	warmup  time.Duration             // Config.Warmup: parts of earlier windows are not counted
	parts   []OpTotals                // post-warm-up parts by op number (RecordPart); nil until the first

	_ [64]byte // keep recorders on separate cache lines
}

// dropRun is n dropped operations due at from, from+every, ... (since the
// recorder's start).
type dropRun struct {
	from, every time.Duration
	n           int64
}

// slot holds one recorder's samples of one window.
type slot struct {
	window int64
	ops    []opSlot
}

type opSlot struct {
	counts [outcome.NumClasses]int64 // by class, OK included
	behind int64
	// firstOK and lastOK are the completion times (since the recorder's
	// start) of the slot's first and last successful operation; valid
	// when counts[outcome.OK] > 0.
	firstOK, lastOK time.Duration
	lat, svc        *hdrhistogram.PackedHistogram // allocated at the first OK sample, then reused
	// wake holds the wake-up lag (Started - Intended, µs) of the samples
	// whose worker waited for their intended start (Sample.Woke), any outcome;
	// allocated at the first such sample, then reused.
	wake *hdrhistogram.PackedHistogram
	// failMax is the longest intended-start latency of the slot's failed
	// operations (failure classes: not found is an answer), µs: what a
	// timed-out operation waited, censored at its timeout.
	failMax int64
}

func newSlot(nops int) *slot { return &slot{ops: make([]opSlot, nops)} }

// reset empties s, keeping its histograms for reuse.
func (s *slot) reset() {
	for i := range s.ops {
		o := &s.ops[i]
		o.counts = [outcome.NumClasses]int64{}
		o.behind = 0
		o.failMax = 0
		if o.lat != nil {
			o.lat.Reset()
			o.svc.Reset()
		}
		if o.wake != nil {
			o.wake.Reset()
		}
	}
}

// Record folds one completed operation into the window of its Ended time.
// Latency is Ended-Intended, service time Ended-Started, both in µs; values
// outside 0..HighestUs are clamped and counted. A sample whose window is
// already closed goes into the earliest open window and is counted as late.
// Only the recorder's own worker may call Record; it does not allocate once
// the recorder has seen a few windows. s.Op must index Config.Ops.
func (r *Recorder) Record(s Sample) {
	if uint(s.Op) >= uint(r.nops) {
		panic(fmt.Sprintf("measure: Sample.Op %d out of range 0..%d", s.Op, r.nops-1))
	}
	intended, started := s.Intended, s.Started
	if intended.IsZero() {
		intended = started
	}
	if started.IsZero() {
		started = intended
	}
	var wake int64
	if s.Woke {
		wake, _ = micros(started.Sub(intended))
	}
	lat, latClamped := micros(s.Ended.Sub(intended))
	svc, svcClamped := micros(s.Ended.Sub(started))
	var w int64
	ended := s.Ended.Sub(r.start)
	if ended > 0 {
		w = int64(ended / r.window)
	}
	class := s.Class
	if class >= outcome.NumClasses {
		class = outcome.Other
	}

	r.mu.Lock()
	if w < r.next {
		w = r.next
		r.late++
	}
	sl := r.cur
	if sl == nil || sl.window != w {
		sl = r.slotFor(w)
	}
	o := &sl.ops[s.Op]
	if class == outcome.OK {
		if o.counts[outcome.OK] == 0 || ended < o.firstOK {
			o.firstOK = ended
		}
		if o.counts[outcome.OK] == 0 || ended > o.lastOK {
			o.lastOK = ended
		}
	}
	o.counts[class]++
	if class != outcome.OK && class != outcome.NotFound && lat > o.failMax {
		o.failMax = lat
	}
	if s.Behind {
		o.behind++
	}
	if s.Woke {
		if o.wake == nil {
			o.wake = newPacked()
		}
		_ = o.wake.RecordValue(wake)
	}
	if class == outcome.OK {
		if o.lat == nil {
			o.lat, o.svc = newPacked(), newPacked()
		}
		// Cannot fail: values are clamped into the histograms' range.
		_ = o.lat.RecordValue(lat)
		_ = o.svc.RecordValue(svc)
		if latClamped || svcClamped {
			r.clamped++
		}
	}
	r.mu.Unlock()
}

// RecordPart counts a part of another operation, s.Op being what the
// part is: the read and the update of a READ-MODIFY-WRITE, which YCSB's
// DBWrapper measures as READ and UPDATE operations too. A part goes into
// Totals.Parts only (after warm-up, by the window of its Ended time): not
// into windows.csv, the ALL totals or clients.csv, which count each
// operation of the workload once. Only the recorder's own worker may call
// it; it allocates the part's histograms at its first sample.
func (r *Recorder) RecordPart(s Sample) {
	if uint(s.Op) >= uint(r.nops) {
		panic(fmt.Sprintf("measure: Sample.Op %d out of range 0..%d", s.Op, r.nops-1))
	}
	intended, started := s.Intended, s.Started
	if intended.IsZero() {
		intended = started
	}
	if started.IsZero() {
		started = intended
	}
	var w int64
	if ended := s.Ended.Sub(r.start); ended > 0 {
		w = int64(ended / r.window)
	}
	if time.Duration(w)*r.window < r.warmup {
		return
	}
	class := s.Class
	if class >= outcome.NumClasses {
		class = outcome.Other
	}
	lat, _ := micros(s.Ended.Sub(intended))
	svc, _ := micros(s.Ended.Sub(started))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.parts == nil {
		r.parts = make([]OpTotals, r.nops)
	}
	t := &r.parts[s.Op]
	if class == outcome.OK {
		t.OK++
		if t.Intended == nil {
			t.Intended, t.Service = newHist(), newHist()
		}
		// Cannot fail: values are clamped into the histograms' range.
		_ = t.Intended.RecordValue(lat)
		_ = t.Service.RecordValue(svc)
	} else {
		t.Errors[class]++
	}
	if s.Behind {
		t.Behind++
	}
}

// Cut counts an operation that was still in flight when the measured period
// ended (Collector.EndAt) with the outcome it got (a timeout when the end
// cancelled it). It is not recorded in any window: the measured period
// ends at the deadline. Not on the hot path.
func (r *Recorder) Cut(class outcome.Class) {
	if class >= outcome.NumClasses {
		class = outcome.Other
	}
	r.mu.Lock()
	r.cut[class]++
	r.mu.Unlock()
}

// Drop records n open-loop operations that were due at first, first+every,
// ... but never started because the run ended while the worker was behind
// its schedule. The collector attributes each to the window of its due time
// (WindowRow.Dropped of the ALL row, dropped.csv).
func (r *Recorder) Drop(first time.Time, every time.Duration, n int64) {
	if n <= 0 {
		return
	}
	if every <= 0 {
		every = 1
	}
	r.mu.Lock()
	r.drops = append(r.drops, dropRun{from: first.Sub(r.start), every: every, n: n})
	r.mu.Unlock()
}

// slotFor returns the open slot of window w, opening one if needed.
// Called with r.mu held.
func (r *Recorder) slotFor(w int64) *slot {
	for _, sl := range r.open {
		if sl.window == w {
			r.cur = sl
			return sl
		}
	}
	var sl *slot
	if n := len(r.free); n > 0 {
		sl = r.free[n-1]
		r.free[n-1] = nil
		r.free = r.free[:n-1]
	} else {
		sl = newSlot(r.nops)
	}
	sl.window = w
	r.open = append(r.open, sl)
	r.cur = sl
	return sl
}

// take closes window k for this recorder: later samples for windows <= k
// count as late. It removes and returns the slot of window k (nil if the
// worker recorded nothing in it) and, if it took one, gives the recorder
// spare (may be nil) for a later window. Reports whether spare was used.
func (r *Recorder) take(k int64, spare *slot) (taken *slot, usedSpare bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next <= k {
		r.next = k + 1
	}
	for i, sl := range r.open {
		if sl.window == k {
			taken = sl
			last := len(r.open) - 1
			r.open[i] = r.open[last]
			r.open[last] = nil
			r.open = r.open[:last]
			break
		}
	}
	if taken == nil {
		return nil, false
	}
	if r.cur == taken {
		r.cur = nil
	}
	if spare != nil {
		r.free = append(r.free, spare)
		return taken, true
	}
	return taken, false
}

// lastOpen returns the highest window holding samples, or -1.
func (r *Recorder) lastOpen() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := int64(-1)
	for _, sl := range r.open {
		if sl.window > last {
			last = sl.window
		}
	}
	return last
}

// counters returns the late and clamped counts.
func (r *Recorder) counters() (late, clamped int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.late, r.clamped
}

// addParts adds the recorder's parts into parts (one entry per op).
func (r *Recorder) addParts(parts []OpTotals) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.parts {
		p, t := &r.parts[i], &parts[i]
		t.OK += p.OK
		for c, v := range p.Errors {
			t.Errors[c] += v
		}
		t.Behind += p.Behind
		if p.Intended != nil {
			fillHists(t)
			t.Intended.Merge(p.Intended)
			t.Service.Merge(p.Service)
		}
	}
}

// ends returns the cut counts and the dropped runs.
func (r *Recorder) ends() ([outcome.NumClasses]int64, []dropRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cut, append([]dropRun(nil), r.drops...)
}

// slots returns how many slots the recorder holds (open and free); for tests.
func (r *Recorder) slots() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.open) + len(r.free)
}

// micros converts d to whole microseconds (rounded) clamped to 0..HighestUs,
// and reports whether it clamped.
func micros(d time.Duration) (int64, bool) {
	if d < 0 {
		return 0, true
	}
	us := int64((d + time.Microsecond/2) / time.Microsecond)
	if us > HighestUs {
		return HighestUs, true
	}
	return us, false
}
