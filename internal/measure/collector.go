package measure

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/faultbench/faultbench/internal/outcome"
)

// Collector owns the recorders of a phase, closes windows and writes the
// measurement files. Use: NewCollector, hand Recorder(i) to worker i, run
// Run in a goroutine, stop the workers, cancel Run's context, wait for Run to
// return, then Close.
type Collector struct {
	cfg    Config
	window time.Duration
	grace  time.Duration
	recs   []*Recorder

	flushMu  sync.Mutex // everything below up to rowsMu; held while closing windows
	next     int64      // first window not yet closed
	closed   bool
	pool     []*slot // empty slots to hand to recorders
	used     []bool  // op has had a sample in some window
	agg      []aggregate
	all      aggregate
	tot      []OpTotals // post-warm-up, per op
	totAll   OpTotals
	clients  []clientTotals
	runStart time.Duration       // start of the first post-warm-up window; -1 before it
	runEnd   time.Duration       // end of the last post-warm-up window
	end      time.Duration       // end of the measured period since Start (EndAt); -1 = none
	onWindow []func([]WindowRow) // in the order OnWindow added them
	onPart   func(WindowPart)
	out      *outputs
	err      error // first write error

	// wins has one small entry per closed window (not its rows: those
	// are in windows.csv and read back by Windows), so that a long run's
	// memory stays flat; finish adds the dropped operations to it.
	wins []winEntry

	liveMu sync.Mutex
	live   Live
}

// aggregate is one operation's (or ALL's) data of the window being closed.
type aggregate struct {
	counts          [outcome.NumClasses]int64
	behind          int64
	firstOK, lastOK time.Duration // valid when counts[outcome.OK] > 0
	lat, svc        *hdrhistogram.Histogram
	wake            *hdrhistogram.Histogram // ALL only: the wake-up lag
	failMax         int64                   // longest failed operation, µs (opSlot.failMax)
}

// addOKSpan widens a's first/last success times by those of o, which holds
// ok > 0 successes. Call before adding o's counts.
func (a *aggregate) addOKSpan(o *opSlot) {
	if a.counts[outcome.OK] == 0 || o.firstOK < a.firstOK {
		a.firstOK = o.firstOK
	}
	if a.counts[outcome.OK] == 0 || o.lastOK > a.lastOK {
		a.lastOK = o.lastOK
	}
}

func (a *aggregate) ensure() {
	if a.lat == nil {
		a.lat, a.svc = newHist(), newHist()
	}
}

func (a *aggregate) reset() {
	a.counts = [outcome.NumClasses]int64{}
	a.behind = 0
	a.failMax = 0
	if a.lat != nil && a.lat.TotalCount() > 0 {
		a.lat.Reset()
		a.svc.Reset()
	}
	if a.wake != nil {
		a.wake.Reset()
	}
}

// clientTotals are one client group's post-warm-up totals (clients.csv).
type clientTotals struct {
	workers    int
	ok, errors int64
	lat        *hdrhistogram.Histogram   // intended-start latency, all ops
	ops        []*hdrhistogram.Histogram // intended-start latency per op (nil until used)
}

// NewCollector validates cfg, creates the run directory's measurement files
// with their headers and returns a collector with cfg.Workers recorders.
func NewCollector(cfg Config) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Window = cfg.window()
	cfg.Ops = append([]string(nil), cfg.Ops...)
	c := &Collector{
		cfg:      cfg,
		window:   cfg.Window,
		grace:    min(cfg.Window/5, maxGrace),
		used:     make([]bool, len(cfg.Ops)),
		agg:      make([]aggregate, len(cfg.Ops)),
		tot:      make([]OpTotals, len(cfg.Ops)),
		totAll:   OpTotals{Name: AllOps},
		clients:  make([]clientTotals, cfg.clients()),
		runStart: -1,
		end:      -1,
	}
	for i, name := range cfg.Ops {
		c.tot[i].Name = name
	}
	c.recs = make([]*Recorder, cfg.Workers)
	for i := range c.recs {
		c.recs[i] = &Recorder{start: cfg.Start, window: cfg.Window, nops: len(cfg.Ops), warmup: cfg.Warmup}
		c.clients[ClientOf(i, cfg.Workers, cfg.clients())].workers++
	}
	out, err := createOutputs(cfg)
	if err != nil {
		return nil, err
	}
	c.out = out
	return c, nil
}

// Recorder returns worker's recorder (0 <= worker < Config.Workers; it
// panics otherwise). Each worker must use its own recorder.
func (c *Collector) Recorder(worker int) *Recorder {
	if worker < 0 || worker >= len(c.recs) {
		panic(fmt.Sprintf("measure: Recorder(%d) out of range 0..%d", worker, len(c.recs)-1))
	}
	return c.recs[worker]
}

// OnWindow adds f to the functions called, in the order they were added,
// from the goroutine closing windows, with the rows of each closed window
// (op rows then ALL): the live metrics export and the autoscaling rules
// each add theirs. Add them before Run. f must not modify the rows or call
// Close; it may call Live and Windows, and must return quickly.
func (c *Collector) OnWindow(f func(rows []WindowRow)) {
	c.flushMu.Lock()
	c.onWindow = append(c.onWindow, f)
	c.flushMu.Unlock()
}

// EndAt sets the end of the measured period (the run's deadline): no
// window extends past t, the last window is cut short at t, and Close
// closes the windows at t at the latest, however late it is called.
// Operations still in flight at t are the caller's to count (Recorder.Cut);
// samples recorded for windows after t are not counted. Call it before
// the end; the runner does when its duration is bounded.
func (c *Collector) EndAt(t time.Time) {
	c.flushMu.Lock()
	c.end = max(0, t.Sub(c.cfg.Start))
	c.flushMu.Unlock()
}

// Run closes each window when its end plus a small grace period (a fifth of
// the window, at most 100 ms) has passed, until ctx is done or the collector
// is closed. Call it in its own goroutine.
func (c *Collector) Run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		c.flushMu.Lock()
		next, closed, end := c.next, c.closed, c.end
		c.flushMu.Unlock()
		if closed {
			return
		}
		if end >= 0 && time.Duration(next+1)*c.window > end {
			// every window that ends by the end of the measured period is
			// closed; the last (partial) one is Close's
			<-ctx.Done()
			return
		}
		due := c.cfg.Start.Add(time.Duration(next+1)*c.window + c.grace)
		timer.Reset(time.Until(due))
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		c.flushUntil(time.Now().Add(-c.grace))
	}
}

// flushUntil closes every window that ends at or before t. Run drives it
// with the clock; tests drive it with synthetic times.
func (c *Collector) flushUntil(t time.Time) {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	if c.closed {
		return
	}
	c.flushUntilLocked(t)
}

func (c *Collector) flushUntilLocked(t time.Time) {
	rel := t.Sub(c.cfg.Start)
	if c.end >= 0 {
		rel = min(rel, c.end)
	}
	for rel >= 0 && time.Duration(c.next+1)*c.window <= rel {
		c.closeWindow(c.next, time.Duration(c.next+1)*c.window)
	}
}

// closeWindow closes window k (which must be c.next) with the given end,
// takes every recorder's slot of it, writes its rows and updates totals.
// Called with flushMu held.
func (c *Collector) closeWindow(k int64, end time.Duration) {
	start := time.Duration(k) * c.window
	run := start >= c.cfg.Warmup
	for i, r := range c.recs {
		var spare *slot
		if n := len(c.pool); n > 0 {
			spare = c.pool[n-1]
		}
		taken, usedSpare := r.take(k, spare)
		if usedSpare {
			c.pool[len(c.pool)-1] = nil
			c.pool = c.pool[:len(c.pool)-1]
		}
		if taken == nil {
			continue
		}
		c.absorb(i, taken, run)
		taken.reset()
		c.pool = append(c.pool, taken)
	}
	c.next = k + 1

	phase := PhaseWarmup
	if run {
		phase = PhaseRun
		if c.runStart < 0 {
			c.runStart = start
		}
		c.runEnd = end
	}
	base := WindowRow{Index: int(k), Start: start, End: end, Phase: phase, Partial: end-start < c.window}
	rows := make([]WindowRow, 0, len(c.agg)+1)
	for op := range c.agg {
		if c.used[op] {
			rows = append(rows, c.agg[op].row(base, c.cfg.Ops[op]))
		}
	}
	rows = append(rows, c.all.row(base, AllOps))

	if c.err == nil {
		if err := c.out.writeWindow(c, rows, c.cfg.Start, start, end); err != nil {
			c.err = err
		}
	}
	c.wins = append(c.wins, winEntry{start: start, end: end, run: run})

	allRow := rows[len(rows)-1]
	c.liveMu.Lock()
	c.live.Windows = int(k) + 1
	c.live.OK += allRow.OK
	c.live.Errors += allRow.ErrorCount()
	c.live.Behind += allRow.Behind
	c.live.LastOpsPerSec = allRow.Throughput()
	c.live.LastP99Us = allRow.P99Us
	c.liveMu.Unlock()

	if c.onPart != nil {
		c.onPart(c.part(k, end-start < c.window))
	}
	for op := range c.agg {
		c.agg[op].reset()
	}
	c.all.reset()
	for _, f := range c.onWindow {
		f(rows)
	}
}

// winEntry is what the collector keeps of a closed window: its bounds,
// whether it is after the warm-up, and the open-loop operations due in it
// that were dropped.
type winEntry struct {
	start, end time.Duration
	run        bool
	dropped    int64
}

// absorb adds worker i's slot into the window aggregates and, after
// warm-up, into the totals and the worker's totals.
func (c *Collector) absorb(i int, sl *slot, run bool) {
	cl := &c.clients[ClientOf(i, c.cfg.Workers, len(c.clients))]
	for op := range sl.ops {
		o := &sl.ops[op]
		var n int64
		for _, v := range o.counts {
			n += v
		}
		if n == 0 {
			continue
		}
		if !c.used[op] {
			c.used[op] = true
		}
		a := &c.agg[op]
		a.ensure()
		if c.cfg.Ops[op] == RetryOp {
			c.absorbSide(a, o, op, run)
			continue
		}
		c.all.ensure()
		if o.counts[outcome.OK] > 0 {
			a.addOKSpan(o)
			c.all.addOKSpan(o)
		}
		for cls, v := range o.counts {
			a.counts[cls] += v
			c.all.counts[cls] += v
		}
		a.behind += o.behind
		c.all.behind += o.behind
		a.failMax = max(a.failMax, o.failMax)
		c.all.failMax = max(c.all.failMax, o.failMax)
		if o.wake != nil && o.wake.TotalCount() > 0 {
			if c.all.wake == nil {
				c.all.wake = newHist()
			}
			o.wake.MergeInto(c.all.wake)
			if run {
				if c.totAll.Wake == nil {
					c.totAll.Wake = newHist()
				}
				o.wake.MergeInto(c.totAll.Wake)
			}
		}
		hasLat := o.lat != nil && o.lat.TotalCount() > 0
		if hasLat {
			o.lat.MergeInto(a.lat)
			o.svc.MergeInto(a.svc)
			o.lat.MergeInto(c.all.lat)
			o.svc.MergeInto(c.all.svc)
		}
		if !run {
			continue
		}
		t := &c.tot[op]
		addCounts(t, o.counts, o.behind)
		addCounts(&c.totAll, o.counts, o.behind)
		cl.ok += o.counts[outcome.OK]
		cl.errors += n - o.counts[outcome.OK]
		if hasLat {
			if t.Intended == nil {
				t.Intended, t.Service = newHist(), newHist()
			}
			if c.totAll.Intended == nil {
				c.totAll.Intended, c.totAll.Service = newHist(), newHist()
			}
			if cl.lat == nil {
				cl.lat = newHist()
				cl.ops = make([]*hdrhistogram.Histogram, len(c.cfg.Ops))
			}
			if cl.ops[op] == nil {
				cl.ops[op] = newHist()
			}
			o.lat.MergeInto(t.Intended)
			o.svc.MergeInto(t.Service)
			o.lat.MergeInto(c.totAll.Intended)
			o.svc.MergeInto(c.totAll.Service)
			o.lat.MergeInto(cl.lat)
			o.lat.MergeInto(cl.ops[op])
		}
	}
}

// absorbSide adds a slot of the retry series to its own aggregate and
// totals only (RetryOp).
func (c *Collector) absorbSide(a *aggregate, o *opSlot, op int, run bool) {
	if o.counts[outcome.OK] > 0 {
		a.addOKSpan(o)
	}
	for cls, v := range o.counts {
		a.counts[cls] += v
	}
	a.behind += o.behind
	a.failMax = max(a.failMax, o.failMax)
	hasLat := o.lat != nil && o.lat.TotalCount() > 0
	if hasLat {
		o.lat.MergeInto(a.lat)
		o.svc.MergeInto(a.svc)
	}
	if !run {
		return
	}
	t := &c.tot[op]
	addCounts(t, o.counts, o.behind)
	if hasLat {
		if t.Intended == nil {
			t.Intended, t.Service = newHist(), newHist()
		}
		o.lat.MergeInto(t.Intended)
		o.svc.MergeInto(t.Service)
	}
}

func addCounts(t *OpTotals, counts [outcome.NumClasses]int64, behind int64) {
	t.OK += counts[outcome.OK]
	for _, cls := range outcome.ErrorClasses() {
		t.Errors[cls] += counts[cls]
	}
	t.Behind += behind
}

// row renders the aggregate as a windows.csv row.
func (a *aggregate) row(base WindowRow, op string) WindowRow {
	r := base
	r.Op = op
	r.OK = a.counts[outcome.OK]
	for _, cls := range outcome.ErrorClasses() {
		r.Errors[cls] = a.counts[cls]
	}
	r.Behind = a.behind
	r.OKTimes = true
	if r.FailureCount() > 0 {
		r.FailMaxUs = float64(a.failMax)
	}
	if r.OK > 0 {
		// µs, as written to windows.csv
		r.FirstOK, r.LastOK = a.firstOK.Round(time.Microsecond), a.lastOK.Round(time.Microsecond)
	}
	if a.lat != nil && a.lat.TotalCount() > 0 {
		ps := [...]float64{50, 90, 95, 99, 99.9}
		v := a.lat.ValueAtPercentilesSlice(ps[:])
		r.MeanUs = round3(a.lat.Mean())
		r.P50Us, r.P90Us, r.P95Us, r.P99Us, r.P999Us = float64(v[0]), float64(v[1]), float64(v[2]), float64(v[3]), float64(v[4])
		r.MaxUs = float64(a.lat.Max())
		r.SvcMeanUs = round3(a.svc.Mean())
		r.SvcP99Us = float64(a.svc.ValueAtQuantile(99))
	}
	if a.wake != nil && a.wake.TotalCount() > 0 {
		r.WakeN = a.wake.TotalCount()
		r.WakeP50Us = float64(a.wake.ValueAtQuantile(50))
		r.WakeP99Us = float64(a.wake.ValueAtQuantile(99))
		r.WakeMaxUs = float64(a.wake.Max())
	}
	return r
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// Close closes every remaining window (the last one, cut short by the end of
// the run, is marked Partial and ends now), writes clients.csv, closes the
// files and returns the post-warm-up totals. Call it after the workers have
// stopped and Run has returned. Totals are returned even with a write error.
func (c *Collector) Close() (*Totals, error) {
	return c.finish(time.Now())
}

// finish is Close with the end of the run given as t.
func (c *Collector) finish(t time.Time) (*Totals, error) {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	if c.closed {
		return nil, errors.New("measure: Close called twice")
	}
	if c.end >= 0 && t.Sub(c.cfg.Start) > c.end {
		t = c.cfg.Start.Add(c.end)
	}
	c.flushUntilLocked(t)
	c.closed = true

	last := int64(-1)
	var late, clamped int64
	var cut [outcome.NumClasses]int64
	var drops []dropRun
	for _, r := range c.recs {
		last = max(last, r.lastOpen())
		l, cl := r.counters()
		late += l
		clamped += cl
		rc, rd := r.ends()
		for i, v := range rc {
			cut[i] += v
		}
		drops = append(drops, rd...)
	}
	rel := t.Sub(c.cfg.Start)
	kt := int64(-1) // window containing t (t on a boundary belongs to the window before)
	if rel > 0 {
		kt = int64((rel - 1) / c.window)
	}
	last = max(last, kt)
	if c.end >= 0 {
		// nothing after the end of the measured period is a window
		last = min(last, kt)
	}
	for k := c.next; k <= last; k++ {
		end := time.Duration(k+1) * c.window
		if k == last && k == kt && rel < end {
			// cut short by the end of the run; whole µs like the file
			end = max(rel.Round(time.Microsecond), time.Duration(k)*c.window+time.Microsecond)
		}
		c.closeWindow(k, end)
	}

	tot := &Totals{Ops: make([]OpTotals, len(c.tot)), All: c.totAll, Late: late, Clamped: clamped, Cut: cut}
	tot.Dropped = c.attributeDrops(drops)
	if c.runStart >= 0 {
		tot.Duration = c.runEnd - c.runStart
	}
	copy(tot.Ops, c.tot)
	for i := range tot.Ops {
		fillHists(&tot.Ops[i])
	}
	tot.Parts = make([]OpTotals, len(c.tot))
	for i := range tot.Parts {
		tot.Parts[i].Name = c.tot[i].Name
	}
	for _, r := range c.recs {
		r.addParts(tot.Parts)
	}
	for i := range tot.Parts {
		fillHists(&tot.Parts[i])
	}
	fillHists(&tot.All)
	tot.Clients = make([]ClientTotals, len(c.clients))
	for k, cl := range c.clients {
		ct := ClientTotals{Client: k, Workers: cl.workers, OK: cl.ok, Errors: cl.errors, All: cl.lat, Ops: make([]*hdrhistogram.Histogram, len(c.cfg.Ops))}
		if ct.All == nil {
			ct.All = newHist()
		}
		for op := range ct.Ops {
			if cl.ops != nil && cl.ops[op] != nil {
				ct.Ops[op] = cl.ops[op]
			} else {
				ct.Ops[op] = newHist()
			}
		}
		tot.Clients[k] = ct
	}

	if c.err == nil {
		c.err = c.out.writeClients(c.clients, tot.Duration)
	}
	if c.err == nil {
		c.err = writeDropped(c.cfg.Dir, c.wins)
	}
	if err := c.out.close(); err != nil && c.err == nil {
		c.err = err
	}
	return tot, c.err
}

// attributeDrops adds each dropped operation to the window of its due
// time (the last window for a due time past it) and returns the number due
// in post-warm-up windows. Called with flushMu held, after every window is
// closed.
func (c *Collector) attributeDrops(drops []dropRun) int64 {
	var run int64
	for _, d := range drops {
		for j := int64(0); j < d.n; j++ {
			at := d.from + time.Duration(j)*d.every
			k := 0
			if at > 0 {
				k = int(at / c.window)
			}
			if k >= len(c.wins) {
				k = len(c.wins) - 1
			}
			if k < 0 {
				continue
			}
			c.wins[k].dropped++
			if c.wins[k].run {
				run++
			}
		}
	}
	return run
}

func fillHists(t *OpTotals) {
	if t.Intended == nil {
		t.Intended, t.Service = newHist(), newHist()
	}
}

// OpCount is the number of operation names the collector records
// (Config.Ops).
func (c *Collector) OpCount() int { return len(c.cfg.Ops) }

// Live returns a snapshot for a status line; cheap and safe at any time.
func (c *Collector) Live() Live {
	c.liveMu.Lock()
	l := c.live
	c.liveMu.Unlock()
	l.Elapsed = time.Since(c.cfg.Start)
	return l
}

// Windows returns every row of windows.csv, in file order, with the
// dropped operations of dropped.csv on the ALL rows: the file read back
// (exactly: values are written in their shortest exact form), so that the
// collector need not keep a long run's rows in memory. Call it after Close.
func (c *Collector) Windows() ([]WindowRow, error) {
	c.flushMu.Lock()
	closed, err := c.closed, c.err
	c.flushMu.Unlock()
	switch {
	case !closed:
		return nil, errors.New("measure: Windows called before Close")
	case err != nil:
		return nil, fmt.Errorf("measure: windows not written: %w", err)
	}
	return ReadWindows(filepath.Join(c.cfg.Dir, WindowsFile))
}
