package runner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload"
)

// Busy is what a timed-out attempt does with what it holds (properties
// runner.timeout.busy, runner.timeout.busy.max). Off (the zero value), an
// attempt's deadline ends the call: the driver gives its connection up
// (closes or returns it) and the worker goes on. On, the client gives up
// at the deadline as before (the attempt is a timeout, and is retried
// under a retry policy) but the call itself goes on in the background
// until the database answers, the connection is dropped or the run ends:
// it keeps its connection of the driver's pool busy, as a real client
// that cannot take back a request it has sent does, and a retry or the
// next operation takes another connection. Under a stall the pool fills
// with busy connections and the next calls wait for one: the client's
// pool saturates the way real clients' pools do.
type Busy struct {
	Enabled bool
	// Max bounds the timed-out calls kept going at once over the run;
	// when that many are in flight, a worker waits (up to its attempt's
	// deadline) for one of them to end before it issues its next attempt.
	// 0 means DefaultBusyMax times the threads.
	Max int
}

// DefaultBusyMax is the default bound of the busy timed-out calls per
// thread (Busy.Max = DefaultBusyMax × threads).
const DefaultBusyMax = 4

// MaxBusy bounds Busy.Max.
const MaxBusy = 1_000_000

// busyCallBound is the deadline of a timed-out call that goes on in a run
// without a deadline of its own (operationcount): the run's end cancels
// it before.
const busyCallBound = 24 * time.Hour

// Validate checks the bound.
func (b Busy) Validate() error {
	if b.Max < 0 || b.Max > MaxBusy {
		return fmt.Errorf("runner.timeout.busy.max must be 0..%d, got %d", MaxBusy, b.Max)
	}
	return nil
}

// limit is Max, or its default for threads.
func (b Busy) limit(threads int) int {
	if b.Max > 0 {
		return b.Max
	}
	return DefaultBusyMax * threads
}

// ReadBusy reads runner.timeout.busy and runner.timeout.busy.max; errors
// name the property and where it was set.
func ReadBusy(p *properties.Properties) (Busy, error) {
	var b Busy
	var errs []error
	var err error
	if b.Enabled, err = p.Bool("runner.timeout.busy", false); err != nil {
		errs = append(errs, err)
	}
	n, err := p.Int("runner.timeout.busy.max", 0)
	if err != nil {
		errs = append(errs, err)
	}
	b.Max = int(n)
	if len(errs) == 0 {
		if err := b.Validate(); err != nil {
			errs = append(errs, p.Error("runner.timeout.busy.max", "allowed 0 (%d × threadcount) or 1..%d", DefaultBusyMax, MaxBusy))
		}
	}
	return b, errors.Join(errs...)
}

// settings adds the option's effective values to env.json's
// client_settings.
func (b Busy) settings(out map[string]string, threads int) {
	if !b.Enabled {
		return
	}
	out["runner.timeout.busy"] = "true"
	out["runner.timeout.busy.max"] = strconv.Itoa(b.limit(threads))
}

// busyPool is the run's state of the option: the slots of the calls in
// flight (the workers' own and the timed-out ones still going), the
// context the timed-out calls go on under (cancelled when the workers
// have stopped) and the gauge of the timed-out calls in flight.
type busyPool struct {
	slots     chan struct{}
	ctx       context.Context
	wg        sync.WaitGroup
	inFlight  atomic.Int64 // timed-out calls still going
	peak      atomic.Int64
	abandoned atomic.Int64 // timed-out calls left going, over the run
}

func newBusyPool(ctx context.Context, threads, limit int) *busyPool {
	return &busyPool{slots: make(chan struct{}, threads+limit), ctx: ctx}
}

// busyCall is one attempt issued in the background.
type busyCall struct {
	w     worker // the attempt's own copy of what execute reads and writes
	state atomic.Int32
	done  chan error // buffered: the call never blocks on it
}

// The states of a busyCall.
const (
	callRunning int32 = iota
	callFinished
	callAbandoned
)

// attempt issues w.op once: synchronously, or with Busy in the
// background, given up at its deadline.
func (w *worker) attempt(ctx context.Context, started time.Time) error {
	if w.busy == nil || w.op.Kind == workload.Txn {
		// a transaction draws its row operations from the worker's thread
		// as it goes: it stays in the worker
		return w.execute(ctx, started)
	}
	return w.executeBusy(ctx, started)
}

// executeBusy runs the attempt on a goroutine of its own and waits for it
// until the attempt's deadline: an attempt that ends in time is as
// execute's; one that does not is a timeout for the worker, and its call
// goes on holding what it holds (Busy).
func (w *worker) executeBusy(ctx context.Context, started time.Time) error {
	bp := w.busy
	opDeadline := started.Add(w.cfg.OpTimeout)
	if !w.deadline.IsZero() && w.deadline.Before(opDeadline) {
		opDeadline = w.deadline
	}
	if w.busyTimer == nil {
		w.busyTimer = time.NewTimer(time.Until(opDeadline))
	} else {
		w.busyTimer.Reset(time.Until(opDeadline))
	}
	defer w.busyTimer.Stop()
	select {
	case bp.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.busyTimer.C:
		// every slot is taken by timed-out calls still going: the client
		// has nothing to send this attempt on
		return fmt.Errorf("runner.timeout.busy: %d calls in flight, none ended before the deadline: %w", cap(bp.slots), context.DeadlineExceeded)
	}
	c := &busyCall{done: make(chan error, 1)}
	c.w = worker{id: w.id, cfg: w.cfg, r: w.r, reads: w.reads, deadline: w.deadline, op: copyOp(&w.op)}
	// the call's own deadline: the run's (or a day, for a run without
	// one); the run's end cancels it either way
	callDeadline := w.deadline
	if callDeadline.IsZero() {
		callDeadline = started.Add(busyCallBound)
	}
	bp.wg.Add(1)
	go func() {
		defer bp.wg.Done()
		err := c.w.issue(bp.ctx, callDeadline, started)
		<-bp.slots
		if c.state.CompareAndSwap(callRunning, callFinished) {
			c.done <- err
			return
		}
		bp.inFlight.Add(-1) // abandoned: the worker has gone on
	}()
	select {
	case err := <-c.done:
		w.parts, w.nparts = c.w.parts, c.w.nparts
		return err
	case <-ctx.Done():
		// the run is stopped: the call ends with it
		err := <-c.done
		w.parts, w.nparts = c.w.parts, c.w.nparts
		return err
	case <-w.busyTimer.C:
	}
	n := bp.inFlight.Add(1)
	if !c.state.CompareAndSwap(callRunning, callAbandoned) {
		// it ended as the deadline passed: its outcome stands
		bp.inFlight.Add(-1)
		err := <-c.done
		w.parts, w.nparts = c.w.parts, c.w.nparts
		return err
	}
	bp.abandoned.Add(1)
	for {
		p := bp.peak.Load()
		if n <= p || bp.peak.CompareAndSwap(p, n) {
			break
		}
	}
	w.nparts = 0
	return fmt.Errorf("attempt timed out after %v (runner.timeout.busy: its call goes on): %w", w.cfg.OpTimeout, context.DeadlineExceeded)
}

// copyOp copies op with its own values and fields: the worker's thread
// reuses them for its next operation while the call goes on.
func copyOp(op *workload.Op) workload.Op {
	c := *op
	if op.Fields != nil {
		c.Fields = append([]string(nil), op.Fields...)
	}
	if op.Values != nil {
		c.Values = make(map[string][]byte, len(op.Values))
		for k, v := range op.Values {
			c.Values[k] = append([]byte(nil), v...)
		}
	}
	return c
}

// errBusyTracker says why Busy and a write tracker do not go together.
var errBusyTracker = errors.New("runner.timeout.busy does not combine with the checks that follow every operation (lost-writes, a history): a timed-out call that goes on would be reported after its worker's next operation")

// errBusyProgram says why a program workload takes no Busy.
var errBusyProgram = errors.New("runner.timeout.busy applies to CoreWorkload operations only")
