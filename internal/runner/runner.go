// Package runner drives a workload against a driver with a fixed number of
// worker goroutines, closed-loop (each worker issues its next operation as
// soon as the previous one completed) or open-loop (a total target rate;
// every operation has an intended start time on a fixed per-worker schedule).
//
// Latency is always measured from the intended start time, so a stalled
// database shows up as latency of every operation that should have started
// during the stall — not as a quiet gap (no coordinated omission). Service
// time (from the actual start) is recorded too, and an operation that
// starts later than its schedule allows is counted as "behind schedule".
package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/workload"
)

// Phase is the YCSB phase a run executes.
type Phase string

// The phases.
const (
	Load Phase = "load" // insert records (the workload's load key sequence)
	Run  Phase = "run"  // the operation mix
)

// Config is how hard and how long to drive the workload.
type Config struct {
	Phase   Phase
	Threads int // worker goroutines (YCSB threadcount)
	// Clients is the number of client groups the workers are split into
	// (measure.ClientOf: contiguous blocks), 1..Threads; 0 means one client
	// per worker. Each group is measured on its own (clients.csv,
	// per-client spread); every worker keeps its share of Rate, so each
	// group offers Rate times its share of the workers.
	Clients        int
	Rate           float64       // total operations per second (the -target flag); 0 = closed loop
	OperationCount int64         // total operations over all workers; 0 = unbounded
	Duration       time.Duration // measured time after warm-up (YCSB maxexecutiontime); 0 = unbounded
	Warmup         time.Duration // time before the measured part; operations run and are recorded, marked warm-up
	OpTimeout      time.Duration // per-operation deadline; default 10 s
	Seed           int64         // passed to workload threads
	// Wake is how an open-loop worker waits for an intended start
	// (WakeSpin when empty); see WakeMode.
	Wake WakeMode
	// Retry is the client retry policy of the run phase (retry.go); every
	// attempt has the deadline OpTimeout. The collector must have the ops
	// MeasureOps gives.
	Retry Retry
	// Spike raises the open-loop rate for a while (spike.go).
	Spike Spike
	// Profile changes the open-loop rate over the run (profile.go).
	Profile Profile
	// Busy keeps a timed-out attempt's call going, holding its
	// connection, until the database answers (busy.go); run phase only.
	Busy Busy
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Phase != Load && c.Phase != Run:
		return fmt.Errorf("phase must be load or run, got %q", c.Phase)
	case c.Wake != "" && c.Wake != WakeSpin && c.Wake != WakeSleep:
		return fmt.Errorf("wake must be %s or %s, got %q", WakeSpin, WakeSleep, c.Wake)
	case c.Threads < 1:
		return fmt.Errorf("threads must be at least 1, got %d", c.Threads)
	case c.Threads > 100000:
		return fmt.Errorf("threads must be at most 100000, got %d", c.Threads)
	case c.Clients < 0 || c.Clients > c.Threads:
		return fmt.Errorf("clients must be 1..threads (%d), or 0 for one client per thread, got %d", c.Threads, c.Clients)
	case c.Rate < 0:
		return fmt.Errorf("target must not be negative, got %g", c.Rate)
	case c.OperationCount < 0:
		return fmt.Errorf("operationcount must not be negative, got %d", c.OperationCount)
	case c.Duration < 0 || c.Warmup < 0 || c.OpTimeout < 0:
		return errors.New("durations must not be negative")
	case c.Phase == Run && c.OperationCount == 0 && c.Duration == 0:
		return errors.New("a run needs an end: set operationcount > 0 or maxexecutiontime > 0")
	}
	if err := c.Retry.Validate(); err != nil {
		return err
	}
	if err := c.Spike.Validate(); err != nil {
		return err
	}
	if err := c.Profile.Validate(); err != nil {
		return err
	}
	return c.Busy.Validate()
}

// Tracker, if set, sees every write (insert, update, the write half of a
// read-modify-write, delete) before it is issued and after it completed.
// The lost-write check uses it to tag values and to remember what was
// acknowledged. It is called concurrently from all workers.
type Tracker interface {
	// BeforeWrite may modify op's values (e.g. tag them); it returns a token
	// passed back to AfterWrite.
	BeforeWrite(worker int, op *workload.Op) uint64
	// AfterWrite reports the write's outcome (err nil = acknowledged).
	AfterWrite(worker int, op *workload.Op, token uint64, err error)
}

// ReadTracker is the optional ability of a Tracker to see every read (a
// read, the read half of a read-modify-write) with the record it
// returned: the stale-read check judges each against the acknowledged
// writes. It is called concurrently from all workers.
type ReadTracker interface {
	// BeforeRead returns a token passed back to AfterRead (the check: the
	// read's invocation time).
	BeforeRead(worker int, op *workload.Op) uint64
	// AfterRead reports what the read returned; rec must not be kept.
	AfterRead(worker int, op *workload.Op, token uint64, rec map[string][]byte, err error)
}

// Result describes how a run ended.
type Result struct {
	Start    time.Time // t=0 (the start of warm-up)
	End      time.Time
	Ops      int64  // operations completed (all outcomes), warm-up included
	Reason   string // "operationcount", "duration", "interrupted" or "load complete"
	Behind   int64  // operations that started later than their schedule allowed
	Canceled int64  // operations cut off by the stop and therefore not recorded
	Retries  int64  // retries made (Config.Retry): attempts after an operation's first
	Dropped  int64  // open loop: operations due before the end that never started (the run was behind)
	// Abandoned counts the timed-out attempts whose calls went on holding
	// their connections (Config.Busy); BusyPeak is the most of them in
	// flight at once.
	Abandoned, BusyPeak int64
	// Cut counts, by outcome class, the operations still in flight at the
	// deadline: cancelled by it (timeout class) or completed after it. They
	// are not recorded in any window: the measured period ends at the
	// deadline, and End is the deadline.
	Cut [outcome.NumClasses]int64
	// Samples holds, per operation name and error class, the text of the
	// first error of that kind (what the database said), so a summary can
	// show what "ERROR(OTHER)" (or any other class) was.
	Samples map[string]map[string]string
}

// CutCount is the number of cut operations over every class.
func (r Result) CutCount() int64 {
	var n int64
	for _, v := range r.Cut {
		n += v
	}
	return n
}

// Runner holds what a run needs. Build it with fields set, then call Run once.
type Runner struct {
	Config    Config
	Workload  *workload.Workload
	Driver    driver.Driver
	Collector *measure.Collector
	Tracker   Tracker // optional
	// Start is t=0; zero means now. The collector must use the same t=0.
	Start time.Time
}

// Run drives the workload until the operation count is reached, the
// duration has passed, the load key sequence is exhausted or ctx is
// cancelled (SIGINT). It always returns a Result; the error is non-nil only
// for a configuration problem.
func (r *Runner) Run(ctx context.Context) (Result, error) {
	cfg := r.Config
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if r.Workload == nil || r.Driver == nil || r.Collector == nil {
		return Result{}, errors.New("runner: workload, driver and collector are required")
	}
	if cfg.OpTimeout == 0 {
		cfg.OpTimeout = 10 * time.Second
	}
	start := r.Start
	if start.IsZero() {
		start = time.Now()
	}
	var deadline time.Time
	if cfg.Duration > 0 {
		deadline = start.Add(cfg.Warmup + cfg.Duration)
		// the measured period ends at the deadline, whatever is in flight
		r.Collector.EndAt(deadline)
	}
	var interval time.Duration
	if cfg.Rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(cfg.Threads) / cfg.Rate)
		if interval <= 0 {
			interval = 1
		}
	}
	var (
		wg       sync.WaitGroup
		total    atomic.Int64
		behind   atomic.Int64
		canceled atomic.Int64
		dropped  atomic.Int64
		cutMu    sync.Mutex // guards cut and samples
		cut      [outcome.NumClasses]int64
		samples  = map[string]map[string]string{}
		opNames  = r.Workload.OpNames()
		exhaust  atomic.Bool
		timeUp   atomic.Bool
		retries  atomic.Int64
		bucket   *tokenBucket
		retryOp  = -1
		spike    *spikeSchedule
	)
	if cfg.Phase == Run && cfg.Retry.Enabled() {
		if r.Workload.Program() != nil {
			return Result{}, errNoRetryProgram
		}
		retryOp = len(opNames)
		if n := r.Collector.OpCount(); n <= retryOp {
			return Result{}, fmt.Errorf("runner: a retry policy needs the collector's ops from MeasureOps (%d ops, want %d)", n, retryOp+1)
		}
		if cfg.Retry.Policy == RetryBudget {
			bucket = newTokenBucket(cfg.Retry.Tokens, cfg.Retry.Ratio)
		}
	}
	var busy *busyPool
	if cfg.Phase == Run && cfg.Busy.Enabled {
		switch {
		case r.Workload.Program() != nil:
			return Result{}, errBusyProgram
		case r.Tracker != nil:
			return Result{}, errBusyTracker
		}
		bctx, cancel := context.WithCancel(ctx)
		busy = newBusyPool(bctx, cfg.Threads, cfg.Busy.limit(cfg.Threads))
		defer func() {
			// the timed-out calls still going end with the run
			cancel()
			busy.wg.Wait()
		}()
	}
	if cfg.Spike.Enabled() && interval > 0 {
		from := start.Add(cfg.Warmup + cfg.Spike.At)
		spike = &spikeSchedule{from: from, to: from.Add(cfg.Spike.Duration), factor: cfg.Spike.Factor}
	}
	var profile *profileSchedule
	if cfg.Profile.Enabled() && interval > 0 {
		profile = &profileSchedule{p: cfg.Profile, zero: start.Add(cfg.Warmup)}
	}
	for i := 0; i < cfg.Threads; i++ {
		quota := int64(-1)
		if cfg.OperationCount > 0 {
			quota = cfg.OperationCount / int64(cfg.Threads)
			if int64(i) < cfg.OperationCount%int64(cfg.Threads) {
				quota++
			}
			if quota == 0 {
				continue
			}
		}
		w := &worker{
			id:       i,
			cfg:      &cfg,
			r:        r,
			samples:  make([][outcome.NumClasses]string, len(opNames)),
			rec:      r.Collector.Recorder(i),
			reads:    readTracker(r.Tracker),
			quota:    quota,
			deadline: deadline,
			interval: interval,
			// stagger the workers' schedules evenly over one interval
			next:    start.Add(time.Duration(int64(interval) * int64(i) / int64(cfg.Threads))),
			spike:   spike,
			profile: profile,
			busy:    busy,
		}
		if retryOp >= 0 {
			w.retrier = newRetrier(cfg.Retry, retryOp, bucket, cfg.Seed, i)
		}
		if prog := r.Workload.Program(); prog != nil {
			w.term = prog.NewTerminal(i, cfg.Seed)
		} else {
			w.thread = r.Workload.NewThread(i, cfg.Seed)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(ctx)
			total.Add(w.done)
			behind.Add(w.behind)
			canceled.Add(w.canceled)
			dropped.Add(w.dropped)
			retries.Add(w.retries)
			cutMu.Lock()
			for c, v := range w.cut {
				cut[c] += v
			}
			for op, byClass := range w.samples {
				for cls, text := range byClass {
					if text == "" {
						continue
					}
					name := opNames[op]
					if samples[name] == nil {
						samples[name] = map[string]string{}
					}
					if _, ok := samples[name][outcome.Class(cls).String()]; !ok {
						samples[name][outcome.Class(cls).String()] = text
					}
				}
			}
			cutMu.Unlock()
			if w.exhausted {
				exhaust.Store(true)
			}
			if w.timeUp {
				timeUp.Store(true)
			}
		}()
	}
	wg.Wait()
	res := Result{Start: start, End: time.Now(), Ops: total.Load(), Behind: behind.Load(), Canceled: canceled.Load(), Dropped: dropped.Load(), Cut: cut, Samples: samples, Retries: retries.Load()}
	if busy != nil {
		res.Abandoned, res.BusyPeak = busy.abandoned.Load(), busy.peak.Load()
	}
	if !deadline.IsZero() && res.End.After(deadline) {
		res.End = deadline
	}
	switch {
	case ctx.Err() != nil:
		res.Reason = "interrupted"
	case exhaust.Load():
		res.Reason = "load complete"
	case timeUp.Load():
		res.Reason = "duration"
	default:
		res.Reason = "operationcount"
	}
	return res, nil
}

type worker struct {
	id        int
	cfg       *Config
	r         *Runner
	thread    *workload.Thread
	term      workload.Terminal // program workloads (TPC-C) instead of thread; see program.go
	termOp    int               // the operation index term picked
	rec       *measure.Recorder
	reads     ReadTracker // nil unless the tracker judges reads
	quota     int64       // operations left; -1 = unbounded
	deadline  time.Time
	interval  time.Duration // open loop: time between this worker's intended starts
	next      time.Time     // open loop: next intended start
	op        workload.Op
	done      int64
	behind    int64
	canceled  int64
	dropped   int64
	cut       [outcome.NumClasses]int64
	samples   [][outcome.NumClasses]string // first error text per op index and class
	exhausted bool
	timeUp    bool // stopped by the deadline
	// parts are the read and the update of the READ-MODIFY-WRITE just
	// executed (nparts of them), recorded as parts (measure.RecordPart)
	// when the operation itself is recorded.
	parts  [2]part
	nparts int
	// retrier is the retry policy's state; nil: no retries.
	retrier *retrier
	retries int64
	spike   *spikeSchedule   // nil: no load spike
	profile *profileSchedule // nil: no rate profile
	// busy is the run's Busy state; nil: a timed-out call ends at once.
	busy      *busyPool
	busyTimer *time.Timer
	// opc makes the operations' contexts (one timer and one registration
	// with the run's context per worker)
	opc *opClock
}

// part is one database call of a composite operation.
type part struct {
	op             workload.OpKind
	started, ended time.Time
	err            error
}

func (w *worker) loop(ctx context.Context) {
	wake := newWaker(w.cfg.Wake)
	defer wake.stop()
	defer w.retrier.stop()
	w.opc = newOpClock(ctx)
	defer w.opc.stop()
	behindAfter := w.interval
	if behindAfter < time.Millisecond {
		behindAfter = time.Millisecond
	}
	for w.quota != 0 {
		if ctx.Err() != nil {
			return
		}
		var intended time.Time
		waited := false
		if w.interval > 0 {
			intended = w.next
			w.next = w.next.Add(w.step(intended))
			if !w.deadline.IsZero() && !intended.Before(w.deadline) {
				w.timeUp = true
				return
			}
			var ok bool
			if ok, waited = wake.wait(ctx, intended); !ok {
				return
			}
		}
		if !w.deadline.IsZero() && !time.Now().Before(w.deadline) {
			w.drop(intended)
			w.timeUp = true
			return
		}
		if w.term != nil {
			if !w.nextProgramOp(ctx) {
				return
			}
		} else if w.cfg.Phase == Load {
			if !w.thread.NextLoad(&w.op) {
				w.exhausted = true
				return
			}
		} else {
			w.thread.Next(&w.op)
		}
		started := time.Now()
		if w.interval == 0 {
			intended = started
		}
		w.nparts = 0
		err := w.attempt(ctx, started)
		last := started // the last attempt's start: service time is its
		if w.retrier != nil {
			if err != nil {
				// the operation's latency stays from the first intended
				// start
				last, _, err = w.retry(ctx, err, started)
			} else if w.retrier.bucket != nil {
				w.retrier.bucket.success()
			}
		}
		ended := time.Now()
		if err != nil && ctx.Err() != nil {
			// cut off by the stop: its outcome says nothing about the database
			w.canceled++
			return
		}
		if !w.deadline.IsZero() && ended.After(w.deadline) {
			// in flight at the deadline: cancelled by it or completed after
			// it; counted with its class, in no window
			cls := outcome.ClassOf(err)
			w.cut[cls]++
			w.rec.Cut(cls)
			if w.cfg.Phase == Run {
				w.thread.Done(&w.op, err == nil)
			}
			w.drop(w.next)
			w.timeUp = true
			return
		}
		late := w.interval > 0 && started.Sub(intended) > behindAfter
		if late {
			w.behind++
		}
		opIndex := int(w.op.Kind)
		if w.term != nil {
			opIndex = w.termOp
		}
		cls := outcome.ClassOf(err)
		if err != nil && opIndex < len(w.samples) && w.samples[opIndex][cls] == "" {
			w.samples[opIndex][cls] = err.Error() // the first of its kind only: off the common path
		}
		w.rec.Record(measure.Sample{
			Op: opIndex, Class: cls,
			Intended: intended, Started: last, Ended: ended, Behind: late, Woke: waited,
		})
		for _, p := range w.parts[:w.nparts] {
			// as YCSB: the parts' latency counts from the operation's intended start
			w.rec.RecordPart(measure.Sample{
				Op: int(p.op), Class: outcome.ClassOf(p.err),
				Intended: intended, Started: p.started, Ended: p.ended, Behind: late,
			})
		}
		if w.cfg.Phase == Run && w.term == nil {
			w.thread.Done(&w.op, err == nil)
		}
		w.done++
		if w.quota > 0 {
			w.quota--
		}
	}
}

// drop counts, in open loop, the operations due from first on before the
// deadline that can no longer start: first, first+interval, ...
func (w *worker) drop(first time.Time) {
	if w.interval <= 0 || !first.Before(w.deadline) {
		return
	}
	if w.profile != nil || w.spike != nil {
		w.dropChanging(first)
		return
	}
	left := w.deadline.Sub(first)
	n := int64((left + w.interval - 1) / w.interval)
	w.dropped += n
	w.rec.Drop(first, w.interval, n)
}

// dropChanging is drop when the interval changes over time (a rate profile
// or a spike): it walks the schedule and records the dropped operations in
// runs of about the same interval (within 1 %), so that each window gets
// the drops that were due in it.
func (w *worker) dropChanging(first time.Time) {
	t := first
	for t.Before(w.deadline) {
		from, every := t, w.step(t)
		var n int64
		for t.Before(w.deadline) {
			d := w.step(t)
			if math.Abs(float64(d-every)) > 0.01*float64(every) {
				break
			}
			n++
			t = t.Add(d)
		}
		if n > 1 {
			every = t.Sub(from) / time.Duration(n)
		}
		w.dropped += n
		w.rec.Drop(from, every, n)
	}
}

// execute issues w.op, started at started, with the per-operation
// deadline (at most the run's deadline).
func (w *worker) execute(parent context.Context, started time.Time) error {
	opDeadline := started.Add(w.cfg.OpTimeout)
	if !w.deadline.IsZero() && w.deadline.Before(opDeadline) {
		// the run's deadline cancels what is still in flight
		opDeadline = w.deadline
	}
	return w.issue(parent, opDeadline, started)
}

// issue issues w.op, started at started, with the deadline opDeadline.
func (w *worker) issue(parent context.Context, opDeadline, started time.Time) error {
	k := w.opc
	if k == nil || k.parent != parent {
		// a call of its own (runner.timeout.busy's, on another goroutine)
		k = newOpClock(parent)
		defer k.stop()
	}
	octx := k.start(opDeadline)
	defer octx.release()
	var ctx context.Context = octx
	if w.term != nil {
		return w.executeProgram(ctx)
	}
	op := &w.op
	d := w.r.Driver
	table := w.r.Workload.Table()
	switch op.Kind {
	case workload.Read:
		return w.read(ctx, table)
	case workload.Scan:
		_, err := d.Scan(ctx, table, op.Key, op.ScanLen, op.Fields)
		return err
	case workload.Update:
		return w.write(ctx, func() error { return d.Update(ctx, table, op.Key, op.Values) })
	case workload.Insert:
		return w.write(ctx, func() error { return d.Insert(ctx, table, op.Key, op.Values) })
	case workload.ReadModifyWrite:
		// the read and the update are parts too: YCSB's DBWrapper counts
		// them as READ and UPDATE operations; as YCSB, no update after a
		// failed read
		err := w.read(ctx, table)
		read := time.Now()
		w.parts[0] = part{op: workload.Read, started: started, ended: read, err: err}
		w.nparts = 1
		if err != nil {
			return err
		}
		err = w.write(ctx, func() error { return d.Update(ctx, table, op.Key, op.Values) })
		w.parts[1] = part{op: workload.Update, started: read, ended: time.Now(), err: err}
		w.nparts = 2
		return err
	case workload.Delete:
		// tracked like a write: the lost-write check must know that the
		// key is meant to be absent
		return w.write(ctx, func() error { return d.Delete(ctx, table, op.Key) })
	case workload.Txn:
		return w.executeTxn(ctx)
	}
	return fmt.Errorf("runner: unknown operation kind %d", op.Kind)
}

// readTracker returns t's ReadTracker ability, or nil.
func readTracker(t Tracker) ReadTracker {
	rt, _ := t.(ReadTracker)
	return rt
}

// read reads w.op's key, through the read tracker when there is one.
func (w *worker) read(ctx context.Context, table string) error {
	op := &w.op
	if w.reads == nil {
		_, err := w.r.Driver.Read(ctx, table, op.Key, op.Fields)
		return err
	}
	tok := w.reads.BeforeRead(w.id, op)
	rec, err := w.r.Driver.Read(ctx, table, op.Key, op.Fields)
	w.reads.AfterRead(w.id, op, tok, rec, err)
	return err
}

func (w *worker) write(_ context.Context, do func() error) error {
	t := w.r.Tracker
	if t == nil {
		return do()
	}
	tok := t.BeforeWrite(w.id, &w.op)
	err := do()
	t.AfterWrite(w.id, &w.op, tok, err)
	return err
}
