package runner

import (
	"context"
	"sync"
	"time"
)

// opClock is a worker's source of per-operation contexts (opContext): the
// run's context with each operation's deadline, as context.WithDeadline
// would make them, without what WithDeadline costs per operation — a
// timer armed and stopped, and a registration with the run's context
// under its lock, which every worker shares. The worker registers once
// with the run's context (context.AfterFunc) and keeps one timer that is
// armed only when an operation's Done is asked for, at that operation's
// deadline or earlier, and is not stopped when the operation ends: when
// it fires it ends the operation in flight if that operation's deadline
// has passed, else it re-arms itself at that deadline. Operations start
// in order and their deadlines (start + timeout, at most the run's
// deadline) never decrease, so a timer armed for an earlier operation
// fires no later than the current one's deadline; with a client library
// that asks every operation for Done (gRPC, gocql, pgx) the timer fires
// about once per operation timeout instead of being armed per operation.
type opClock struct {
	parent context.Context

	mu      sync.Mutex
	cur     *opContext // the operation in flight, nil between operations
	timer   *time.Timer
	armed   bool      // a fire is due at armedAt
	armedAt time.Time // (a stale fire finding nothing to do is harmless)
	nextID  uint64    // of AfterFunc registrations
	arms    int       // times the timer was armed (tests)
	// stopParent ends the registration with the run's context
	stopParent func() bool
}

// newOpClock registers with parent; stop ends that and the timer.
func newOpClock(parent context.Context) *opClock {
	k := &opClock{parent: parent}
	k.timer = time.AfterFunc(time.Hour, k.fire)
	k.timer.Stop()
	k.stopParent = context.AfterFunc(parent, k.parentDone)
	return k
}

// stop releases the clock's timer and its registration with the run's
// context; its operations must have been released.
func (k *opClock) stop() {
	k.stopParent()
	k.mu.Lock()
	k.timer.Stop()
	k.armed = false
	k.mu.Unlock()
}

// start begins an operation with the given deadline; the caller releases it.
func (k *opClock) start(deadline time.Time) *opContext {
	c := &opContext{clock: k, deadline: deadline}
	k.mu.Lock()
	k.cur = c
	k.mu.Unlock()
	return c
}

// armLocked makes sure that the timer fires at deadline or earlier.
func (k *opClock) armLocked(deadline time.Time) {
	if k.armed && !k.armedAt.After(deadline) {
		return
	}
	k.armed, k.armedAt = true, deadline
	k.arms++
	k.timer.Reset(time.Until(deadline))
}

// fire is the timer's function: it ends the operation in flight at its
// deadline, or re-arms for it.
func (k *opClock) fire() {
	k.mu.Lock()
	k.armed = false
	var fs []opFunc
	if c := k.cur; c != nil && c.err == nil && (c.done != nil || len(c.funcs) > 0) {
		if time.Now().Before(c.deadline) {
			k.armLocked(c.deadline)
		} else {
			fs = c.endLocked(context.DeadlineExceeded)
		}
	}
	k.mu.Unlock()
	callAll(fs)
}

// parentDone ends the operation in flight when the run is cancelled.
func (k *opClock) parentDone() {
	k.mu.Lock()
	var fs []opFunc
	if c := k.cur; c != nil {
		fs = c.endLocked(k.parent.Err())
	}
	k.mu.Unlock()
	callAll(fs)
}

// opContext is one operation's context: the run's context with the
// operation's deadline, behaving as context.WithDeadline's: Err is
// context.DeadlineExceeded from the deadline on, the run's error once it
// is cancelled, context.Canceled once the operation ended before either;
// Done closes then; contexts derived from it are cancelled with it
// (through its AfterFunc, which context.WithCancel and context.AfterFunc
// use). Done's channel is made only when asked for: a driver that reads
// only Deadline and Err — one that puts the deadline on its socket, as
// the Redis driver does — costs one small allocation per operation.
type opContext struct {
	clock    *opClock
	deadline time.Time

	// under clock.mu
	done  chan struct{} // nil until asked for
	err   error         // set once; done is closed when both are set
	funcs []opFunc      // registered by AfterFunc, called when err is set
	fbuf  [1]opFunc     // funcs' first registration (gRPC's per call)
}

// opFunc is one AfterFunc registration.
type opFunc struct {
	id uint64
	f  func()
}

var _ context.Context = (*opContext)(nil)

// endLocked sets the context's error (once) and closes Done; the caller
// calls the returned functions after unlocking.
func (c *opContext) endLocked(err error) []opFunc {
	if c.err != nil {
		return nil
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	fs := c.funcs
	c.funcs = nil
	return fs
}

// settleLocked ends the context if the run is cancelled or the deadline
// has passed.
func (c *opContext) settleLocked() []opFunc {
	if c.err != nil {
		return nil
	}
	if err := c.clock.parent.Err(); err != nil {
		return c.endLocked(err)
	}
	if !time.Now().Before(c.deadline) {
		return c.endLocked(context.DeadlineExceeded)
	}
	return nil
}

func callAll(fs []opFunc) {
	for _, e := range fs {
		e.f()
	}
}

// Deadline is the operation's deadline.
func (c *opContext) Deadline() (time.Time, bool) { return c.deadline, true }

// Done returns a channel closed at the deadline, when the run is
// cancelled or when the operation ends, creating it on first use.
func (c *opContext) Done() <-chan struct{} {
	k := c.clock
	k.mu.Lock()
	var fs []opFunc
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done) // ended before
		} else if fs = c.settleLocked(); c.err == nil {
			k.armLocked(c.deadline)
		}
	}
	done := c.done
	k.mu.Unlock()
	callAll(fs)
	return done
}

// Err is nil while the operation runs within its deadline, then the
// reason it ended.
func (c *opContext) Err() error {
	k := c.clock
	k.mu.Lock()
	fs := c.settleLocked()
	err := c.err
	k.mu.Unlock()
	callAll(fs)
	return err
}

// Value looks key up in the run's context.
func (c *opContext) Value(key any) any { return c.clock.parent.Value(key) }

// AfterFunc arranges for f to be called once the context ends, and
// returns a function that cancels that (true if it did). It is how the
// context package registers a context derived from this one
// (WithCancel, WithDeadline, AfterFunc): f is called synchronously by
// whoever ends the context, as a cancelled context cancels its children,
// or in its own goroutine when the context has already ended.
func (c *opContext) AfterFunc(f func()) func() bool {
	k := c.clock
	k.mu.Lock()
	fs := c.settleLocked()
	if c.err != nil {
		k.mu.Unlock()
		callAll(fs)
		go f() // the caller may hold a lock that f takes
		return func() bool { return false }
	}
	k.nextID++
	id := k.nextID
	if c.funcs == nil {
		c.funcs = c.fbuf[:0]
	}
	c.funcs = append(c.funcs, opFunc{id: id, f: f})
	k.armLocked(c.deadline)
	k.mu.Unlock()
	return func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		for i, e := range c.funcs {
			if e.id == id {
				c.funcs = append(c.funcs[:i], c.funcs[i+1:]...)
				return true
			}
		}
		return false
	}
}

// release ends the operation: its context is cancelled, as
// WithDeadline's cancel function would cancel it, unless the deadline or
// the run's cancellation ended it first.
func (c *opContext) release() {
	k := c.clock
	k.mu.Lock()
	if k.cur == c {
		k.cur = nil
	}
	fs := c.settleLocked()
	if c.err == nil {
		fs = c.endLocked(context.Canceled)
	}
	k.mu.Unlock()
	callAll(fs)
}

func (c *opContext) String() string { return "runner.opContext" }
