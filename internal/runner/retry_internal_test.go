package runner

import (
	"sync"
	"testing"
	"time"
)

// TestBackoffPause: full jitter under an exponential bound, capped.
func TestBackoffPause(t *testing.T) {
	rt := newRetrier(Retry{Policy: RetryBackoff, Max: 10, Base: 10 * time.Millisecond, Cap: 80 * time.Millisecond}, 0, nil, 1, 0)
	for n, bound := range []time.Duration{10, 20, 40, 80, 80, 80} {
		bound *= time.Millisecond
		var longest time.Duration
		for range 200 {
			d := rt.pause(n + 1)
			if d <= 0 || d > bound {
				t.Fatalf("retry %d: pause %v outside (0, %v]", n+1, d, bound)
			}
			longest = max(longest, d)
		}
		if longest < bound/2 {
			t.Errorf("retry %d: longest of 200 pauses %v: not jittered up to %v", n+1, longest, bound)
		}
	}
	if d := (&retrier{cfg: Retry{Policy: RetryImmediate}}).pause(3); d != 0 {
		t.Errorf("immediate pauses %v", d)
	}
}

// TestTokenBucket: gRPC's throttling: retries while more than half the
// tokens are left; successes refill by the ratio; concurrent use keeps it
// in [0, max].
func TestTokenBucket(t *testing.T) {
	b := newTokenBucket(10, 0.5)
	allowed := 0
	for range 20 {
		if b.failure() {
			allowed++
		}
	}
	if allowed != 5 {
		t.Errorf("failures allowed %d retries, want 5 (10 tokens down to half)", allowed)
	}
	for range 12 { // +6 tokens
		b.success()
	}
	if !b.failure() {
		t.Errorf("after 12 successes at 0.5 a retry is allowed (6 tokens > 5)")
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				if i%2 == 0 {
					b.success()
				} else {
					b.failure()
				}
			}
		}()
	}
	wg.Wait()
	if v := b.milli.Load(); v < 0 || v > b.max {
		t.Errorf("bucket %d milli-tokens outside [0, %d]", v, b.max)
	}
}
