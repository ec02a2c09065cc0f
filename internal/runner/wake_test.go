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

// TestWakerLearnsSlack: the slack follows the timer's observed lateness.
// The timer is replaced by one that fires a known amount late (or never
// late), so the learning is seen through wait itself, whatever the
// machine's load: a timer 3 ms late drives the slack to its ceiling, a
// timer that is never late drives it down to the margin. With the learning
// removed the slack stays at its initial value and both cases fail.
func TestWakerLearnsSlack(t *testing.T) {
	cases := []struct {
		name     string
		extra    time.Duration // how late the fake timer fires
		min, max time.Duration // where the slack must end
	}{
		{"late timer", 3 * time.Millisecond, wakeMaxSlack, wakeMaxSlack},
		{"punctual timer", 0, wakeMargin, wakeMargin + 20*time.Microsecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := newWaker(WakeSpin)
			defer k.stop()
			k.sleepFn = func(ctx context.Context, d time.Duration) bool {
				if tc.extra > 0 {
					return k.sleep(ctx, d+tc.extra)
				}
				return true // fires at once: never late (early, even)
			}
			for range 60 {
				k.wait(context.Background(), time.Now().Add(2500*time.Microsecond))
			}
			if s := k.slack(); s < tc.min || s > tc.max {
				t.Errorf("slack %v after 60 waits, want in [%v, %v] (initial %v)", s, tc.min, tc.max, wakeInitial+wakeMargin)
			}
		})
	}
}

// TestWakerLearn: the moving average moves an eighth of the way to each
// observation and decays by an eighth when the timer was not late.
func TestWakerLearn(t *testing.T) {
	k := newWaker(WakeSpin)
	k.late = 800 * time.Microsecond
	k.learn(1600 * time.Microsecond)
	if k.late != 900*time.Microsecond {
		t.Errorf("after a lateness of 1.6 ms: %v, want 900µs", k.late)
	}
	k.learn(-time.Millisecond)
	if want := 900*time.Microsecond - 900*time.Microsecond/8; k.late != want {
		t.Errorf("after an early wake: %v, want %v", k.late, want)
	}
}
