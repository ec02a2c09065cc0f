package runner

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestOpContext checks that the lazy per-operation context behaves as
// context.WithDeadline does: the same deadline, DeadlineExceeded from the
// deadline on, Done closed at the deadline or on the run's cancellation,
// contexts derived from it cancelled with it.
func TestOpContext(t *testing.T) {
	t.Run("deadline and Err without Done", func(t *testing.T) {
		dl := time.Now().Add(time.Hour)
		c := testOp(t, context.Background(), dl)
		defer c.release()
		if got, ok := c.Deadline(); !ok || !got.Equal(dl) {
			t.Fatalf("Deadline = %v %v, want %v", got, ok, dl)
		}
		if c.Err() != nil {
			t.Fatalf("Err before the deadline = %v", c.Err())
		}
		if c.done != nil || c.clock.arms != 0 {
			t.Fatal("Deadline and Err made a channel or armed the timer")
		}
		past := testOp(t, context.Background(), time.Now().Add(-time.Millisecond))
		if !errors.Is(past.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err after the deadline = %v", past.Err())
		}
		select {
		case <-past.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done of a passed deadline did not close")
		}
	})
	t.Run("Done closes at the deadline", func(t *testing.T) {
		c := testOp(t, context.Background(), time.Now().Add(20*time.Millisecond))
		defer c.release()
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done did not close")
		}
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err = %v", c.Err())
		}
	})
	t.Run("the run's cancellation", func(t *testing.T) {
		for _, asked := range []bool{false, true} {
			parent, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
			c := testOp(t, parent, time.Now().Add(time.Hour))
			if asked {
				_ = c.Done()
			}
			if c.Value(ctxKey{}) != "v" {
				t.Fatalf("Value lost (Done asked: %v)", asked)
			}
			child, cc := context.WithCancel(c)
			cancel()
			select {
			case <-c.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("Done did not close on the run's cancellation")
			}
			select {
			case <-child.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("a derived context was not cancelled")
			}
			if !errors.Is(c.Err(), context.Canceled) {
				t.Fatalf("Err = %v, want Canceled", c.Err())
			}
			cc()
			c.release()
		}
	})
	t.Run("release cancels what was derived", func(t *testing.T) {
		c := testOp(t, context.Background(), time.Now().Add(time.Hour))
		child, cc := context.WithCancel(c)
		defer cc()
		c.release()
		select {
		case <-child.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("release did not cancel a derived context")
		}
		late := testOp(t, context.Background(), time.Now().Add(time.Hour))
		late.release()
		select {
		case <-late.Done(): // asked for after the operation ended
		case <-time.After(5 * time.Second):
			t.Fatal("Done asked for after release stays open")
		}
	})
}

type ctxKey struct{}

// testOp starts an operation with deadline dl on a clock of its own.
func testOp(t *testing.T, parent context.Context, dl time.Time) *opContext {
	t.Helper()
	k := newOpClock(parent)
	t.Cleanup(k.stop)
	return k.start(dl)
}

// TestOpClock checks a worker's clock over successive operations: one
// timer armed for many operations that ask for Done (the cost that
// context.WithDeadline paid per operation), and still every operation's
// Done closed at its own deadline, at its end, or on the run's
// cancellation.
func TestOpClock(t *testing.T) {
	t.Run("one timer for many operations", func(t *testing.T) {
		k := newOpClock(context.Background())
		defer k.stop()
		for range 1000 {
			c := k.start(time.Now().Add(time.Hour))
			_ = c.Done()
			child, cc := context.WithCancel(c) // as gRPC derives one per call
			c.release()
			select {
			case <-child.Done():
			default:
				t.Fatal("release did not cancel the derived context")
			}
			cc()
			if !errors.Is(c.Err(), context.Canceled) {
				t.Fatalf("Err after release = %v, want Canceled", c.Err())
			}
		}
		k.mu.Lock()
		arms := k.arms
		k.mu.Unlock()
		if arms != 1 {
			t.Fatalf("the timer was armed %d times for 1000 operations with increasing deadlines, want 1", arms)
		}
	})
	t.Run("a later operation's deadline after an earlier arming", func(t *testing.T) {
		k := newOpClock(context.Background())
		defer k.stop()
		first := k.start(time.Now().Add(30 * time.Millisecond))
		_ = first.Done()
		first.release()
		c := k.start(time.Now().Add(80 * time.Millisecond))
		child, cc := context.WithCancel(c)
		defer cc()
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("Done did not close at the second operation's deadline")
		}
		if time.Now().Before(c.deadline) {
			t.Fatal("Done closed before the deadline")
		}
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err = %v, want DeadlineExceeded", c.Err())
		}
		<-child.Done()
		c.release()
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err after release = %v, want DeadlineExceeded kept", c.Err())
		}
	})
	t.Run("the run's cancellation mid-operation", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		k := newOpClock(parent)
		defer k.stop()
		c := k.start(time.Now().Add(time.Hour))
		done := c.Done()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Done did not close on the run's cancellation")
		}
		c.release()
		next := k.start(time.Now().Add(time.Hour))
		defer next.release()
		if !errors.Is(next.Err(), context.Canceled) {
			t.Fatalf("an operation after the cancellation: Err = %v", next.Err())
		}
		select {
		case <-next.Done():
		default:
			t.Fatal("an operation after the cancellation: Done open")
		}
	})
	t.Run("derived contexts start no goroutine", func(t *testing.T) {
		// context.WithCancel and context.AfterFunc (pgx's cancellation)
		// register through the AfterFunc method; without it the context
		// package starts a goroutine per derived context
		k := newOpClock(context.Background())
		defer k.stop()
		c := k.start(time.Now().Add(time.Hour))
		before := runtime.NumGoroutine()
		var cancels []context.CancelFunc
		var stops []func() bool
		called := make(chan struct{}, 100)
		for range 50 {
			_, cc := context.WithCancel(c)
			cancels = append(cancels, cc)
			stops = append(stops, context.AfterFunc(c, func() { called <- struct{}{} }))
		}
		if n := runtime.NumGoroutine() - before; n > 5 {
			t.Fatalf("100 derived contexts started %d goroutines", n)
		}
		if !stops[0]() {
			t.Fatal("stopping an AfterFunc before the end: false")
		}
		c.release()
		for range 49 {
			select {
			case <-called:
			case <-time.After(10 * time.Second):
				t.Fatal("release did not run the AfterFunc functions")
			}
		}
		if stops[1]() {
			t.Fatal("stopping an AfterFunc that ran: true")
		}
		for _, cc := range cancels {
			cc()
		}
	})
	t.Run("concurrent use", func(t *testing.T) {
		// for -race: the library's goroutines ask while the worker releases
		parent, cancel := context.WithCancel(context.Background())
		defer cancel()
		k := newOpClock(parent)
		defer k.stop()
		for i := range 200 {
			c := k.start(time.Now().Add(time.Duration(i%3) * time.Millisecond))
			var wg sync.WaitGroup
			for range 3 {
				wg.Go(func() {
					_ = c.Err()
					ch, cc := context.WithCancel(c)
					<-c.Done()
					<-ch.Done()
					cc()
				})
			}
			if i%2 == 0 {
				c.release()
				wg.Wait()
			} else {
				wg.Wait()
				c.release()
			}
		}
	})
}

// BenchmarkOpContext compares the per-operation context of 16 workers
// asking for Done and deriving a context (as gRPC does per call) through
// context.WithDeadline, the runner's former way, and through the
// worker's opClock.
func BenchmarkOpContext(b *testing.B) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, derive := range []bool{false, true} {
		name := "done"
		if derive {
			name = "done+derived"
		}
		b.Run("withdeadline/"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					ctx, c1 := context.WithDeadline(parent, time.Now().Add(10*time.Second))
					_ = ctx.Done()
					if derive {
						child, c2 := context.WithCancel(ctx)
						_ = child.Done()
						c2()
					}
					c1()
				}
			})
		})
		b.Run("opclock/"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				k := newOpClock(parent)
				defer k.stop()
				for pb.Next() {
					c := k.start(time.Now().Add(10 * time.Second))
					_ = c.Done()
					if derive {
						child, c2 := context.WithCancel(c)
						_ = child.Done()
						c2()
					}
					c.release()
				}
			})
		})
	}
}
