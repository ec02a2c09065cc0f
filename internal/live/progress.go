package live

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/measure"
)

// Source is what progress reads: measure.Collector.
type Source interface {
	Live() measure.Live
}

// Progress shows a running phase. On a terminal (Out is a *Console on a
// terminal and Lines is false) it redraws a one-line bar a few times a
// second:
//
//	run [██████████░░░░░░░░░░]  48%  0:19/0:39  1702 ops/s  p99 4.2ms  err 0
//
// otherwise it prints a timestamped status line every Every (YCSB's -s
// format, plus the remaining time when known).
type Progress struct {
	Out   io.Writer
	Lines bool          // plain lines even on a terminal
	Every time.Duration // interval of plain lines (default 10 s)
	Phase string        // "load", "run", ...
	// Total is the phase's expected length (warm-up + duration), 0 when it
	// ends by operation count; Ops is then the expected operation count
	// (0 = unknown).
	Total time.Duration
	Ops   int64
}

// barRefresh is how often the bar is redrawn.
const barRefresh = 250 * time.Millisecond

// Run shows progress until ctx is done, then removes the bar.
func (p Progress) Run(ctx context.Context, src Source) {
	con, _ := p.Out.(*Console)
	if con != nil && con.Terminal() && !p.Lines {
		p.bar(ctx, con, src)
		return
	}
	p.lines(ctx, src)
}

func (p Progress) bar(ctx context.Context, con *Console, src Source) {
	t := time.NewTicker(barRefresh)
	defer t.Stop()
	defer con.clearBar()
	for {
		con.setBar(p.barText(src.Live()))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// barText renders the bar for a snapshot (at most 79 columns).
func (p Progress) barText(l measure.Live) string {
	const width = 20
	frac := -1.0
	switch {
	case p.Total > 0:
		frac = l.Elapsed.Seconds() / p.Total.Seconds()
	case p.Ops > 0:
		frac = float64(l.OK+l.Errors) / float64(p.Ops)
	}
	var b strings.Builder
	b.WriteString(p.Phase)
	b.WriteString(" [")
	if frac >= 0 {
		frac = min(frac, 1)
		n := int(frac * width)
		b.WriteString(strings.Repeat("█", n) + strings.Repeat("░", width-n))
		fmt.Fprintf(&b, "] %3.0f%% ", frac*100)
	} else {
		pos := int(l.Elapsed/barRefresh) % width
		b.WriteString(strings.Repeat("░", pos) + "█" + strings.Repeat("░", width-pos-1) + "] ")
	}
	b.WriteString(clock(l.Elapsed))
	if p.Total > 0 {
		b.WriteString("/" + clock(p.Total))
	}
	fmt.Fprintf(&b, " %5.0f ops/s p99 %s err %d", l.LastOpsPerSec, latencyText(l.LastP99Us), l.Errors)
	if l.Behind > 0 {
		fmt.Fprintf(&b, " behind %d", l.Behind)
	}
	return b.String()
}

func (p Progress) lines(ctx context.Context, src Source) {
	every := p.Every
	if every <= 0 {
		every = 10 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var lastOK, lastErr int64
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			l := src.Live()
			rate := float64(l.OK-lastOK) / now.Sub(last).Seconds()
			line := fmt.Sprintf("%s %6.0f sec: %d operations; %.1f current ops/sec; p99 %.0f us (last window); errors %d (+%d); behind schedule %d",
				now.Format("2006-01-02 15:04:05"), l.Elapsed.Seconds(), l.OK+l.Errors, rate, l.LastP99Us, l.Errors, l.Errors-lastErr, l.Behind)
			if p.Total > 0 {
				line += fmt.Sprintf("; %s left", clock(max(0, p.Total-l.Elapsed)))
			}
			fmt.Fprintln(p.Out, line)
			lastOK, lastErr, last = l.OK, l.Errors, now
		}
	}
}

// clock formats a duration as m:ss (h:mm:ss from an hour on).
func clock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// latencyText formats microseconds compactly.
func latencyText(us float64) string {
	switch {
	case us <= 0:
		return "-"
	case us >= 1e6:
		return fmt.Sprintf("%.1fs", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.1fms", us/1e3)
	}
	return fmt.Sprintf("%.0fµs", us)
}
