package runner

import (
	"context"
	"runtime"
	"time"
)

// WakeMode says how an open-loop worker waits for an operation's intended
// start (property runner.wake).
type WakeMode string

// The wake modes.
const (
	// WakeSpin sleeps on a timer until shortly before the intended start —
	// by the timer's own lateness, learned as the run goes — and yields the
	// processor in a loop for the rest, so operations start within tens of
	// microseconds of their intended time. It costs CPU: the yield loop
	// runs for about the timer's lateness (~0.1-1 ms on Linux) per operation.
	WakeSpin WakeMode = "spin"
	// WakeSleep sleeps on a timer until the intended start: no CPU spent
	// waiting, but the operation starts as late as the timer fires (Go's
	// timers on Linux: up to about a millisecond).
	WakeSleep WakeMode = "sleep"
)

// Bounds of the learned slack (how long before the intended start the
// timer is set to fire).
const (
	wakeMargin   = 30 * time.Microsecond // added to the learned lateness
	wakeMaxSlack = 2 * time.Millisecond  // never spin for longer than this
	wakeInitial  = time.Millisecond      // lateness assumed before the first measurement
)

// waker waits for intended start times. One per worker; not safe for
// concurrent use.
type waker struct {
	mode  WakeMode
	timer *time.Timer
	late  time.Duration // moving average of the timer's lateness (spin mode)
	// sleepFn waits on the timer (k.sleep); tests replace it with a timer
	// that is late, or early, by a known amount.
	sleepFn func(ctx context.Context, d time.Duration) bool
}

func newWaker(mode WakeMode) *waker {
	if mode == "" {
		mode = WakeSpin
	}
	k := &waker{mode: mode, late: wakeInitial}
	k.sleepFn = k.sleep
	return k
}

// stop releases the timer.
func (k *waker) stop() {
	if k.timer != nil {
		k.timer.Stop()
	}
}

// sleep waits on the timer for d; false if ctx ended first.
func (k *waker) sleep(ctx context.Context, d time.Duration) bool {
	if k.timer == nil {
		k.timer = time.NewTimer(d)
	} else {
		k.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		return false
	case <-k.timer.C:
		return true
	}
}

// learn folds one observed lateness of the timer (how long after its
// target it fired; <= 0 when it was not late) into the moving average: a
// slow one, so one long stall (a GC pause, a busy machine) does not make
// every later wait spin.
func (k *waker) learn(late time.Duration) {
	if late > 0 {
		k.late += (late - k.late) / 8
	} else {
		k.late -= k.late / 8
	}
}

// slack is how long before the intended start the timer should fire.
func (k *waker) slack() time.Duration { return min(k.late+wakeMargin, wakeMaxSlack) }

// wait returns at t or just after it (never before), or false when ctx
// ended first. waited reports whether it had to wait at all: a worker
// already behind its schedule does not, and its delay is the backlog, not
// the harness's wake-up lag.
func (k *waker) wait(ctx context.Context, t time.Time) (ok, waited bool) {
	d := time.Until(t)
	if d <= 0 {
		return true, false
	}
	if k.mode == WakeSleep {
		return k.sleepFn(ctx, d), true
	}
	if s := k.slack(); d > s {
		target := t.Add(-s)
		if !k.sleepFn(ctx, d-s) {
			return false, true
		}
		k.learn(time.Since(target))
	}
	for n := 0; time.Now().Before(t); n++ {
		if n&63 == 63 && ctx.Err() != nil {
			return false, true
		}
		runtime.Gosched()
	}
	return true, true
}
