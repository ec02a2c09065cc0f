// Package live shows a phase while it runs: a progress bar on a terminal
// (elapsed and remaining time, current ops/s, p99, errors) or plain
// timestamped status lines when the output is not a terminal, and an
// optional Prometheus endpoint with operation counters, latency
// histograms, window throughput and fault state.
package live

import (
	"io"
	"os"
	"sync"
)

// Console is a writer shared by the progress bar and every other line a
// run prints (fault events, warnings). On a terminal it erases the bar
// before a line is written and draws it again after; elsewhere it only
// serialises writes. It is safe for concurrent use.
type Console struct {
	mu    sync.Mutex
	w     io.Writer
	term  bool
	bar   string // the bar to show, "" when none
	shown bool   // the bar is on the screen
	mid   bool   // the last write did not end a line
}

// NewConsole wraps w; a *Console is returned as it is.
func NewConsole(w io.Writer) *Console {
	if c, ok := w.(*Console); ok {
		return c
	}
	return &Console{w: w, term: IsTerminal(w)}
}

// IsTerminal reports whether w is a character device (a terminal) and the
// terminal is not "dumb".
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	return fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

// Terminal reports whether the console writes to a terminal.
func (c *Console) Terminal() bool { return c.term }

// eraseLine returns the cursor to the line's start and clears the line.
const eraseLine = "\r\x1b[K"

// Write writes p, keeping the bar (if any) below the written lines.
func (c *Console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shown {
		if _, err := io.WriteString(c.w, eraseLine); err != nil {
			return 0, err
		}
		c.shown = false
	}
	n, err := c.w.Write(p)
	if len(p) > 0 {
		c.mid = p[len(p)-1] != '\n'
	}
	if err == nil && c.bar != "" && !c.mid {
		_, err = io.WriteString(c.w, c.bar)
		c.shown = err == nil
	}
	return n, err
}

// setBar shows s as the bar (terminal only).
func (c *Console) setBar(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.term {
		return
	}
	c.bar = s
	if c.mid {
		return // drawn after the line being written ends
	}
	if _, err := io.WriteString(c.w, eraseLine+s); err == nil {
		c.shown = true
	}
}

// clearBar removes the bar.
func (c *Console) clearBar() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shown {
		io.WriteString(c.w, eraseLine)
	}
	c.bar, c.shown = "", false
}
