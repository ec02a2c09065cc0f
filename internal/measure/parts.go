package measure

import (
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/faultbench/faultbench/internal/outcome"
)

// OpPart is one operation's data of one closed window of one collector:
// what a remote worker streams to the coordinator of a distributed run
// (docs/distributed.md). Histograms are HdrHistogram encodings
// (hdrhistogram.PackedHistogram.Encode, compressed V2) of the package's
// geometry, so that merging them is exact.
type OpPart struct {
	Op string `json:"op"`
	// Counts are the operations by outcome class, OK included (index by
	// outcome.Class).
	Counts [outcome.NumClasses]int64 `json:"counts"`
	Behind int64                     `json:"behind,omitempty"`
	// FirstOKNs and LastOKNs are the completion times of the window's
	// first and last successful operations, ns since Config.Start.
	FirstOKNs int64 `json:"first_ok_ns,omitempty"`
	LastOKNs  int64 `json:"last_ok_ns,omitempty"`
	// FailMaxUs is the longest intended-start latency of the failed
	// operations, µs (windows.csv fail_max_us).
	FailMaxUs int64 `json:"fail_max_us,omitempty"`
	// Lat and Svc are the intended-start latency and service time of the
	// successful operations, µs, encoded; empty when there were none.
	Lat []byte `json:"lat,omitempty"`
	Svc []byte `json:"svc,omitempty"`
}

// WindowPart is one collector's data of one closed window.
type WindowPart struct {
	Window int64 `json:"window"`
	// Partial is set for a last window cut short by the end of the phase.
	Partial bool     `json:"partial,omitempty"`
	Ops     []OpPart `json:"ops"`
	// Wake is the window's wake-up lag histogram (all operations), encoded;
	// empty when no worker waited.
	Wake []byte `json:"wake,omitempty"`
}

// Count returns the part's operations over every class and op.
func (p WindowPart) Count() int64 {
	var n int64
	for _, o := range p.Ops {
		for _, v := range o.Counts {
			n += v
		}
	}
	return n
}

// OnPart sets f to be called, from the goroutine closing windows, with each
// closed window's data as a WindowPart (a remote worker streams them). Set
// it before Run.
func (c *Collector) OnPart(f func(WindowPart)) {
	c.flushMu.Lock()
	c.onPart = f
	c.flushMu.Unlock()
}

// part encodes the aggregates of the window being closed. Called with
// flushMu held, before the aggregates are reset.
func (c *Collector) part(k int64, partial bool) WindowPart {
	p := WindowPart{Window: k, Partial: partial}
	enc := func(h *hdrhistogram.Histogram) []byte {
		if h == nil || h.TotalCount() == 0 {
			return nil
		}
		pk := newPacked()
		pk.MergeFrom(h)
		b, err := pk.Encode()
		if err != nil {
			return nil // cannot happen for the package's geometry
		}
		return b
	}
	for op := range c.agg {
		if !c.used[op] {
			continue
		}
		a := &c.agg[op]
		var n int64
		for _, v := range a.counts {
			n += v
		}
		if n == 0 {
			continue
		}
		o := OpPart{Op: c.cfg.Ops[op], Counts: a.counts, Behind: a.behind, FailMaxUs: a.failMax}
		if a.counts[outcome.OK] > 0 {
			o.FirstOKNs, o.LastOKNs = int64(a.firstOK), int64(a.lastOK)
			o.Lat, o.Svc = enc(a.lat), enc(a.svc)
		}
		p.Ops = append(p.Ops, o)
	}
	p.Wake = enc(c.all.wake)
	return p
}

// AddPart adds a remote collector's window data to worker's recorder, as if
// that worker had recorded every operation of it: the coordinator of a
// distributed run keeps one recorder per remote worker (one clients.csv row
// each) and merges their windows exactly. The window must not be closed yet.
func (c *Collector) AddPart(worker int, p WindowPart) error {
	if worker < 0 || worker >= len(c.recs) {
		return fmt.Errorf("measure: AddPart worker %d out of range 0..%d", worker, len(c.recs)-1)
	}
	idx := make(map[string]int, len(c.cfg.Ops))
	for i, name := range c.cfg.Ops {
		idx[name] = i
	}
	dec := func(b []byte) (*hdrhistogram.PackedHistogram, error) {
		if len(b) == 0 {
			return nil, nil
		}
		h, err := hdrhistogram.DecodePacked(b)
		if err != nil {
			return nil, fmt.Errorf("measure: window %d of worker %d: %w", p.Window, worker, err)
		}
		if h.LowestTrackableValue() != LowestUs || h.HighestTrackableValue() != HighestUs || h.SignificantFigures() != SigFigs {
			return nil, fmt.Errorf("measure: window %d of worker %d: histogram geometry %d..%d/%d, want %d..%d/%d",
				p.Window, worker, h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures(), LowestUs, HighestUs, SigFigs)
		}
		return h, nil
	}
	// decode and check everything before anything is added: a bad part
	// leaves the recorder as it was
	type decoded struct {
		op       int
		lat, svc *hdrhistogram.PackedHistogram
	}
	ds := make([]decoded, len(p.Ops))
	for j, op := range p.Ops {
		i, ok := idx[op.Op]
		if !ok {
			return fmt.Errorf("measure: window %d of worker %d: unknown operation %q", p.Window, worker, op.Op)
		}
		ds[j].op = i
		var err error
		if ds[j].lat, err = dec(op.Lat); err != nil {
			return err
		}
		if ds[j].svc, err = dec(op.Svc); err != nil {
			return err
		}
	}
	wake, err := dec(p.Wake)
	if err != nil {
		return err
	}
	r := c.recs[worker]
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.Window < r.next {
		return fmt.Errorf("measure: window %d of worker %d arrived after the window was closed", p.Window, worker)
	}
	sl := r.slotFor(p.Window)
	for j, op := range p.Ops {
		o := &sl.ops[ds[j].op]
		if op.Counts[outcome.OK] > 0 {
			first, last := time.Duration(op.FirstOKNs), time.Duration(op.LastOKNs)
			if o.counts[outcome.OK] == 0 || first < o.firstOK {
				o.firstOK = first
			}
			if o.counts[outcome.OK] == 0 || last > o.lastOK {
				o.lastOK = last
			}
		}
		for cls, v := range op.Counts {
			o.counts[cls] += v
		}
		o.behind += op.Behind
		o.failMax = max(o.failMax, op.FailMaxUs)
		if ds[j].lat != nil || ds[j].svc != nil {
			if o.lat == nil {
				o.lat, o.svc = newPacked(), newPacked()
			}
			if ds[j].lat != nil {
				o.lat.Merge(ds[j].lat)
			}
			if ds[j].svc != nil {
				o.svc.Merge(ds[j].svc)
			}
		}
		// the wake-up lag only feeds the ALL row: the first op of the part
		// carries it
		if wake != nil {
			if o.wake == nil {
				o.wake = newPacked()
			}
			o.wake.Merge(wake)
			wake = nil
		}
	}
	return nil
}

// CloseThrough closes every full window up to and including window k that
// ends by the end of the measured period (EndAt): the coordinator of a
// distributed run closes a window once every live worker has sent it. The
// last, partial window is Close's.
func (c *Collector) CloseThrough(k int64) {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	if c.closed {
		return
	}
	for c.next <= k {
		end := time.Duration(c.next+1) * c.window
		if c.end >= 0 && end > c.end {
			return
		}
		c.closeWindow(c.next, end)
	}
}
