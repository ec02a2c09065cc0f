package measure

import (
	"context"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/outcome"
)

// TestEndAtCutsTheLastWindow: with an end of the measured period, Close
// called 2 s later still ends the last window at the end, emits no window
// after it, and counts cut operations; dropped operations land in the
// windows of their due times and survive ReadWindows via dropped.csv.
func TestEndAtCutsTheLastWindow(t *testing.T) {
	c := newCollector(t, nil)
	c.EndAt(at(450))
	for i := range 45 {
		c.Recorder(i % 2).Record(ok(i%2, float64(i)*10+5, 1, 1))
	}
	c.Recorder(0).Cut(outcome.Timeout)
	c.Recorder(1).Drop(at(300), 50*time.Millisecond, 3) // due at 300, 350, 400
	c.flushUntil(at(2000))                              // the flusher woke late: still nothing past 450
	tot := finish(t, c, 2450)
	rows := readBack(t, c)
	all := rowsOf(rows, AllOps)
	if n := len(all); n != 5 || all[n-1].End != 450*time.Millisecond || !all[n-1].Partial {
		t.Fatalf("%d windows, last %+v; want 5 ending at 450 ms", n, all[len(all)-1])
	}
	if tot.Duration != 450*time.Millisecond || tot.Cut[outcome.Timeout] != 1 || tot.CutCount() != 1 {
		t.Errorf("duration %v cut %v", tot.Duration, tot.Cut)
	}
	if tot.Dropped != 3 || all[3].Dropped != 2 || all[4].Dropped != 1 {
		t.Errorf("dropped total %d, windows 3,4: %d %d; want 3, 2, 1", tot.Dropped, all[3].Dropped, all[4].Dropped)
	}
	back, err := ReadWindows(filepath.Join(c.cfg.Dir, WindowsFile))
	if err != nil {
		t.Fatal(err)
	}
	ball := rowsOf(back, AllOps)
	if ball[3].Dropped != 2 || ball[4].Dropped != 1 {
		t.Errorf("read back dropped %d %d, want 2 1", ball[3].Dropped, ball[4].Dropped)
	}
}

// TestRunStopsAtTheEnd: with an end set, Run closes the whole windows
// before it and then only waits for its context: it does not close a
// window past the end (nor spin on one it may not close).
func TestRunStopsAtTheEnd(t *testing.T) {
	start := time.Now()
	c := newCollector(t, func(cfg *Config) { cfg.Start = start; cfg.Window = 10 * time.Millisecond })
	c.EndAt(start.Add(35 * time.Millisecond))
	var closed atomic.Int64
	c.OnWindow(func(rows []WindowRow) { closed.Add(int64(len(rowsOf(rows, AllOps)))) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	// Wait for the 3 whole windows however late the scheduler runs Run (a
	// loaded machine: no fixed sleep), then give it more than a window past
	// the end to close a fourth one it must not close.
	for deadline := time.Now().Add(time.Minute); closed.Load() < 3 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(time.Until(start.Add(100 * time.Millisecond)))
	time.Sleep(50 * time.Millisecond)
	n := closed.Load()
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of its context's end")
	}
	if n != 3 {
		t.Errorf("Run closed %d windows, want the 3 whole ones before the end", n)
	}
	tot, err := c.Close()
	if err != nil {
		t.Fatal(err)
	}
	if tot.Duration != 35*time.Millisecond {
		t.Errorf("duration %v, want 35ms", tot.Duration)
	}
}

// TestWindowsOnlyAfterClose: the rows are not kept in memory (a long run's
// memory stays flat); Windows reads windows.csv back, so it refuses before
// Close and afterwards returns exactly the rows handed to OnWindow.
func TestWindowsOnlyAfterClose(t *testing.T) {
	c := newCollector(t, nil)
	var handed []WindowRow
	c.OnWindow(func(rows []WindowRow) { handed = append(handed, rows...) })
	c.Recorder(0).Record(ok(0, 150, 1, 1))
	c.flushUntil(at(200))
	if rows, err := c.Windows(); err == nil {
		t.Fatalf("Windows before Close: %d rows, want an error", len(rows))
	}
	finish(t, c, 250)
	got := readBack(t, c)
	if len(got) == 0 || len(got) != len(handed) {
		t.Fatalf("read back %d rows, %d handed to OnWindow", len(got), len(handed))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], handed[i]) {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, got[i], handed[i])
		}
	}
}
