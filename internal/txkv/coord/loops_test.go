package coord

import (
	"testing"
	"time"
)

func TestLocalPause(t *testing.T) {
	const every = 100 * time.Millisecond
	limit := pauseLimit(3 * time.Second) // 1 s
	tests := []struct {
		name string
		gap  time.Duration
		want time.Duration
	}{
		{"on time", every, 0},
		{"jitter of a loaded machine", every + 300*time.Millisecond, 0},
		{"at the limit", every + limit, 0},
		{"a stall of the coordinator", every + 4*time.Second, 4 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := localPause(tc.gap, every, limit); got != tc.want {
				t.Fatalf("localPause(%v) = %v, want %v", tc.gap, got, tc.want)
			}
		})
	}
}

func TestPauseLimit(t *testing.T) {
	for session, want := range map[time.Duration]time.Duration{
		3 * time.Second:        time.Second,
		time.Second:            500 * time.Millisecond,
		30 * time.Second:       10 * time.Second,
		300 * time.Millisecond: 500 * time.Millisecond,
	} {
		if got := pauseLimit(session); got != want {
			t.Errorf("pauseLimit(%v) = %v, want %v", session, got, want)
		}
	}
}

func TestCreditPause(t *testing.T) {
	now := time.Date(2026, 11, 25, 8, 21, 30, 0, time.UTC)
	tests := []struct {
		name      string
		lastHeard time.Time
		pause     time.Duration
		want      time.Time
	}{
		// heard 4.5 s ago, the coordinator stalled 4 s: 0.5 s of silence
		// count, not 4.5 s (the session timeout is 3 s)
		{"heard before the stall", now.Add(-4500 * time.Millisecond), 4 * time.Second, now.Add(-500 * time.Millisecond)},
		{"not past now", now.Add(-time.Second), 4 * time.Second, now},
		// a server silent for 10 s is still 6 s silent after the credit
		{"long silent", now.Add(-10 * time.Second), 4 * time.Second, now.Add(-6 * time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := creditPause(tc.lastHeard, now, tc.pause); !got.Equal(tc.want) {
				t.Fatalf("creditPause = %v, want %v", got, tc.want)
			}
		})
	}
}
