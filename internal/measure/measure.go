// Package measure turns completed operations into faultbench's time series:
// per-window throughput, error counts by class and latency percentiles
// (windows.csv), HdrHistogram interval logs per operation (hist/*.hlog),
// per-client totals (clients.csv) and run totals for the summary.
//
// Every worker goroutine owns a Recorder. Record folds one completed
// operation into the recorder's own per-window histograms under the
// recorder's own mutex; nothing on that path is shared between workers. A
// Collector closes windows: once per window (at the window's end plus a small
// grace period) it takes each recorder's histograms for that window, hands it
// recycled empty ones, merges them per operation and writes one row per
// operation plus an ALL row. Latency is measured from the operation's
// intended start (no coordinated omission); service time (from the actual
// start) is kept alongside. Only successful operations enter the latency
// histograms; failed ones are counted by error class.
package measure

import (
	"errors"
	"fmt"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/faultbench/faultbench/internal/outcome"
)

// Histogram geometry shared by every histogram of the package: values are
// microseconds from 1 µs to 1 h with 3 significant digits.
const (
	LowestUs  int64 = 1                                   // lowest discernible value, µs
	HighestUs int64 = int64(time.Hour / time.Microsecond) // highest trackable value, µs; larger values are clamped
	SigFigs         = 3                                   // significant decimal digits
)

// Window length limits and default.
const (
	DefaultWindow = time.Second
	MinWindow     = 10 * time.Millisecond
	MaxWindow     = time.Hour
)

// Phase names used in windows.csv.
const (
	PhaseWarmup = "warmup"
	PhaseRun    = "run"
)

// AllOps is the op name of the per-window row and totals aggregating every
// operation type.
const AllOps = "ALL"

// RetryOp is the op name of the retry series (a client retry policy,
// runner.retry): every attempt that failed and was retried, by the class
// it failed with, in the window it ended. It is a series of its own: not
// part of the ALL row, the totals or the per-client figures, which count
// operations by their final outcome.
const RetryOp = "RETRY"

// maxGrace bounds how long after a window's end the collector waits for
// stragglers before it closes the window.
const maxGrace = 100 * time.Millisecond

// Config describes one measured phase.
type Config struct {
	// Dir is the run directory. NewCollector writes windows.csv,
	// hist/<op>.hlog (intended-start latency), hist/<op>-service.hlog
	// (service time), hist/all.hlog, hist/all-service.hlog and clients.csv.
	Dir string
	// Ops are the operation names indexed by op number (Sample.Op). File
	// names use the lower-case name. Names may hold letters, digits, '-',
	// '_' and '.', must be unique and must not be "ALL".
	Ops []string
	// Window is the aggregation window, MinWindow..MaxWindow; zero means
	// DefaultWindow.
	Window time.Duration
	// Start is t=0 of the run; window i covers [Start+i*Window, Start+(i+1)*Window).
	Start time.Time
	// Warmup: windows that start before Start+Warmup have phase "warmup";
	// they are written and kept but excluded from Totals and clients.csv.
	Warmup time.Duration
	// Workers is the number of recorders (worker goroutines), numbered
	// 0..Workers-1.
	Workers int
	// Clients is the number of client groups, 1..Workers; 0 means Workers
	// (every worker is a client of its own). Workers are split into
	// contiguous groups of equal size (ClientOf): client k owns the workers
	// with ClientOf(i) == k. Each client has its own totals (clients.csv,
	// Totals.Clients), the per-client spread of the scalability study.
	Clients int
}

// clients returns the effective number of client groups.
func (c Config) clients() int {
	if c.Clients == 0 {
		return c.Workers
	}
	return c.Clients
}

// ClientOf returns the client group of worker i among workers workers split
// into clients groups: contiguous blocks whose sizes differ by at most one
// (the first workers%clients groups have one worker more).
func ClientOf(i, workers, clients int) int {
	if clients <= 0 || clients >= workers {
		return i
	}
	return i * clients / workers
}

// window returns the effective window length.
func (c Config) window() time.Duration {
	if c.Window == 0 {
		return DefaultWindow
	}
	return c.Window
}

// Validate reports every invalid field of c, naming the field.
func (c Config) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, fieldErr("Dir", "empty (the run directory is required)"))
	}
	if len(c.Ops) == 0 {
		errs = append(errs, fieldErr("Ops", "empty (at least one operation name is required)"))
	}
	files := map[string]string{"all": AllOps, "all-service": AllOps}
	for i, name := range c.Ops {
		if err := checkOpName(name); err != nil {
			errs = append(errs, fieldErr(fmt.Sprintf("Ops[%d]", i), "%v", err))
			continue
		}
		for _, f := range []string{opFileName(name), opFileName(name) + "-service"} {
			if other, dup := files[f]; dup {
				errs = append(errs, fieldErr(fmt.Sprintf("Ops[%d]", i), "%q clashes with %q (both need hist/%s.hlog)", name, other, f))
			}
			files[f] = name
		}
	}
	if w := c.Window; w != 0 && (w < MinWindow || w > MaxWindow) {
		errs = append(errs, fieldErr("Window", "%v out of range (allowed %v..%v, or 0 for %v)", w, MinWindow, MaxWindow, DefaultWindow))
	}
	if c.Window%time.Microsecond != 0 {
		errs = append(errs, fieldErr("Window", "%v is not a whole number of microseconds", c.Window))
	}
	if c.Start.IsZero() {
		errs = append(errs, fieldErr("Start", "zero time (t=0 of the run is required)"))
	}
	if c.Warmup < 0 {
		errs = append(errs, fieldErr("Warmup", "%v is negative", c.Warmup))
	}
	if c.Workers < 1 {
		errs = append(errs, fieldErr("Workers", "%d (at least 1 is required)", c.Workers))
	}
	if c.Clients < 0 || (c.Workers >= 1 && c.Clients > c.Workers) {
		errs = append(errs, fieldErr("Clients", "%d out of range (allowed 1..Workers=%d, or 0 for one client per worker)", c.Clients, c.Workers))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("measure config: %w", errors.Join(errs...))
}

// fieldErr is an error naming a Config field.
func fieldErr(field, format string, args ...any) error {
	return fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...))
}

func checkOpName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	if strings.EqualFold(name, AllOps) {
		return fmt.Errorf("%q is reserved for the aggregate row", name)
	}
	if name[0] == '.' {
		return fmt.Errorf("%q starts with '.'", name)
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return fmt.Errorf("%q: character %q not allowed (letters, digits, '-', '_', '.')", name, r)
		}
	}
	return nil
}

// opFileName is the base name (without .hlog) of an operation's log.
func opFileName(op string) string { return strings.ToLower(op) }

// Sample is one completed operation.
type Sample struct {
	// Op is the operation number, an index into Config.Ops.
	Op int
	// Class is the outcome; only OK samples enter the latency histograms.
	Class outcome.Class
	// Intended is when the operation should have started (open loop); a
	// zero Intended means Started (closed loop).
	Intended time.Time
	// Started is when the operation was issued; zero means Intended.
	Started time.Time
	// Ended is when the operation completed; it selects the window.
	Ended time.Time
	// Behind marks an operation that started late against its schedule.
	Behind bool
	// Woke marks an operation whose worker waited for its intended start:
	// Started - Intended is then the harness's own wake-up lag (for an
	// operation that did not wait, the delay is the schedule's backlog).
	Woke bool
}

// WindowRow is one row of windows.csv: one operation type (or ALL) in one
// window. Latencies are microseconds, intended-start based, over successful
// operations; they are 0 when the window had no successful operation.
type WindowRow struct {
	Index      int           // window number, 0-based
	Start, End time.Duration // since Config.Start; End-Start < Window only for the partial last window
	Phase      string        // PhaseWarmup or PhaseRun
	Op         string        // operation name or AllOps
	OK         int64         // successful operations
	// Errors counts failed operations by class; index by outcome.Class, [outcome.OK] is unused (0).
	Errors [outcome.NumClasses]int64
	Behind int64 // operations (any outcome) that started behind schedule
	// Dropped counts open-loop operations due in this window that never
	// started: the run ended while the workers were still behind (ALL rows
	// only; from dropped.csv, written at the end of the run).
	Dropped int64
	// Intended-start latency of successful operations, µs.
	MeanUs, P50Us, P90Us, P95Us, P99Us, P999Us, MaxUs float64
	// Service time (from the actual start) of successful operations, µs.
	SvcMeanUs, SvcP99Us float64
	// FailMaxUs is the longest intended-start latency of the window's
	// failed operations (every failure class; not found is an answer), µs:
	// a timed-out operation's latency censored at its duration (column
	// fail_max_us, empty without failures or in files written before it).
	FailMaxUs float64
	// The harness's own wake-up lag (ALL rows only): how late, after its
	// intended start, an open-loop worker that waited for it issued the
	// operation (any outcome), µs; WakeN is how many operations waited
	// (columns wake_n, wake_p50_us, wake_p99_us, wake_max_us; empty when none).
	WakeN                           int64
	WakeP50Us, WakeP99Us, WakeMaxUs float64
	// FirstOK and LastOK are when the window's first and last successful
	// operations completed, since Config.Start (columns first_ok_ms and
	// last_ok_ms, empty when OK is 0). A completion can precede Start when
	// it arrived late for an already closed window. They are valid when
	// OKTimes is set and OK > 0; OKTimes is false for rows of a windows.csv
	// written before these columns existed, and for rows made by hand.
	// From them the longest interval without a success is exact whenever
	// it is at least one window long (analyze's longest gap).
	FirstOK, LastOK time.Duration
	// OKTimes reports whether FirstOK and LastOK were recorded.
	OKTimes bool
	// Partial is true for a last window cut short by the end of the run
	// (End-Start shorter than the window). Not a column: ReadWindows derives
	// it from the row's length.
	Partial bool
}

// Throughput returns the window's successful operations per second.
func (w WindowRow) Throughput() float64 {
	d := w.End - w.Start
	if d <= 0 {
		return 0
	}
	return float64(w.OK) / d.Seconds()
}

// ErrorCount returns the window's failed operations over all error classes.
func (w WindowRow) ErrorCount() int64 {
	var n int64
	for _, c := range outcome.ErrorClasses() {
		n += w.Errors[c]
	}
	return n
}

// FailureCount returns the window's failed operations over the failure
// classes: every error class but not found (outcome.FailureClasses).
func (w WindowRow) FailureCount() int64 {
	var n int64
	for _, c := range outcome.FailureClasses() {
		n += w.Errors[c]
	}
	return n
}

// Totals are the cumulative measurements of the post-warm-up windows.
type Totals struct {
	// Duration is the measured time: from the start of the first
	// post-warm-up window to the end of the last window (possibly partial).
	Duration time.Duration
	// Ops holds one entry per operation type, indexed by op number.
	Ops []OpTotals
	// All aggregates every operation type; its Name is AllOps.
	All OpTotals
	// Parts holds, indexed like Ops, the parts of other operations
	// (Recorder.RecordPart): Parts[i] are the operations done as a part of
	// another that are what Ops[i] is, e.g. the read and the update of a
	// READ-MODIFY-WRITE under READ and UPDATE, as YCSB's DBWrapper
	// measures them. They are in no window, in neither All nor Ops.
	Parts []OpTotals
	// Late counts samples (all phases) that arrived for an already closed
	// window and were put into the earliest open one.
	Late int64
	// Clamped counts successful samples (all phases) whose latency or service
	// time was outside 0..HighestUs and was recorded at the nearest bound.
	Clamped int64
	// Cut counts, by outcome class, the operations still in flight at the
	// end of the measured period (Collector.EndAt): cancelled at the
	// deadline or completed after it, they are in no window.
	Cut [outcome.NumClasses]int64
	// Dropped counts open-loop operations due in post-warm-up windows that
	// never started (the run ended while the workers were behind).
	Dropped int64
	// Clients holds each client group's post-warm-up totals, indexed by
	// client number (Config.Clients groups; one per worker by default).
	Clients []ClientTotals
}

// ClientTotals are one client group's post-warm-up totals: what one YCSB
// client (server) of a multi-client benchmark would report on its own.
type ClientTotals struct {
	Client  int   // client number, 0-based
	Workers int   // worker goroutines in the group
	OK      int64 // successful operations
	Errors  int64 // failed operations, every class
	// Intended-start latency of successful operations, µs, over every
	// operation type (All) and per operation type (Ops, indexed by op
	// number). Never nil.
	All *hdrhistogram.Histogram
	Ops []*hdrhistogram.Histogram
}

// CutCount is the number of cut operations over every class.
func (t *Totals) CutCount() int64 {
	var n int64
	for _, v := range t.Cut {
		n += v
	}
	return n
}

// OpTotals are the post-warm-up totals of one operation type.
type OpTotals struct {
	Name   string
	OK     int64
	Errors [outcome.NumClasses]int64 // by class; [outcome.OK] unused
	Behind int64
	// Intended-start latency and service time of successful operations, µs.
	// Never nil (empty when the operation was not used).
	Intended, Service *hdrhistogram.Histogram
	// Wake is the wake-up lag of the operations whose worker waited for
	// their intended start, µs (Totals.All only; nil when none waited).
	Wake *hdrhistogram.Histogram
}

// Live is a cheap snapshot for a status line. Counts cover closed windows
// of every phase.
type Live struct {
	Elapsed       time.Duration // since Config.Start
	Windows       int           // closed windows
	OK            int64         // cumulative successful operations
	Errors        int64         // cumulative failed operations
	Behind        int64         // cumulative operations started behind schedule
	LastOpsPerSec float64       // last closed window: successful operations per second
	LastP99Us     float64       // last closed window: p99 intended-start latency, µs
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(LowestUs, HighestUs, SigFigs) }

func newPacked() *hdrhistogram.PackedHistogram {
	return hdrhistogram.NewPacked(LowestUs, HighestUs, SigFigs)
}
