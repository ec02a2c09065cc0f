package runner

import (
	"context"
	"testing"
	"time"
)

// TestWakerNeverEarly: whatever the mode and the distance, wait returns
// at or after the intended start, says whether it waited, and gives up
// when the context ends.
func TestWakerNeverEarly(t *testing.T) {
	for _, mode := range []WakeMode{WakeSpin, WakeSleep} {
		t.Run(string(mode), func(t *testing.T) {
			k := newWaker(mode)
			defer k.stop()
			for _, d := range []time.Duration{-time.Millisecond, 0, 20 * time.Microsecond, 300 * time.Microsecond, 3 * time.Millisecond} {
				at := time.Now().Add(d)
				ok, waited := k.wait(context.Background(), at)
				if now := time.Now(); !ok || now.Before(at) {
					t.Errorf("wait(%v): ok %v, returned %v before the intended start", d, ok, at.Sub(now))
				}
				if d <= 0 && waited {
					t.Errorf("wait(%v) says it waited for a time already past", d)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if ok, _ := k.wait(ctx, time.Now().Add(time.Hour)); ok {
				t.Error("wait returned ok after the context ended")
			}
		})
	}
}

// TestWakerLearnsSlack: the learned lateness stays within its bounds.
func TestWakerLearnsSlack(t *testing.T) {
	k := newWaker(WakeSpin)
	defer k.stop()
	for range 20 {
		k.wait(context.Background(), time.Now().Add(4*time.Millisecond))
	}
	if s := k.slack(); s < wakeMargin || s > wakeMaxSlack {
		t.Errorf("slack %v outside [%v, %v]", s, wakeMargin, wakeMaxSlack)
	}
}
