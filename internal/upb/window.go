package upb

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/runfile"
)

// win is one full measurement window after warm-up (the ALL row).
type win struct {
	start, end time.Duration // since the run's t=0
	ok, errs   int64
}

// runWindows keeps the full (not partial) post-warm-up ALL rows of a run, in
// order; window is the configured window length.
func runWindows(rows []measure.WindowRow, window time.Duration) []win {
	var out []win
	for _, r := range rows {
		if r.Op != measure.AllOps || r.Phase != measure.PhaseRun || r.Partial || r.End-r.Start < window {
			continue
		}
		out = append(out, win{start: r.Start, end: r.End, ok: r.OK, errs: r.ErrorCount()})
	}
	return out
}

// parseWindowsCSV reads the complete ALL rows of a windows.csv that is still
// being written (a last line without its newline is ignored) and returns
// them as WindowRows with OK and the error total (in the timeout class).
func parseWindowsCSV(b []byte) []measure.WindowRow {
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		return nil
	}
	var rows []measure.WindowRow
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) < 10 || f[3] != measure.AllOps {
			continue
		}
		start, err1 := strconv.ParseFloat(f[0], 64)
		end, err2 := strconv.ParseFloat(f[1], 64)
		ok, err3 := strconv.ParseInt(f[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		var r measure.WindowRow
		r.Start = time.Duration(start * float64(time.Millisecond))
		r.End = time.Duration(end * float64(time.Millisecond))
		r.Phase, r.Op, r.OK = f[2], f[3], ok
		for _, v := range f[5:10] {
			n, _ := strconv.ParseInt(v, 10, 64)
			r.Errors[outcome.Timeout] += n // the total; the class does not matter here
		}
		rows = append(rows, r)
	}
	return rows
}

// sample is k consecutive windows summed.
type sample struct {
	start, end time.Duration
	ok, errs   int64
}

func (s sample) tps() float64 {
	d := s.end - s.start
	if d <= 0 {
		return 0
	}
	return float64(s.ok) / d.Seconds()
}

// samples groups consecutive windows into samples of k windows, aligned at
// the first window; an incomplete last group is dropped.
func samples(ws []win, k int) []sample {
	if k < 1 {
		k = 1
	}
	var out []sample
	for i := 0; i+k <= len(ws); i += k {
		s := sample{start: ws[i].start, end: ws[i+k-1].end}
		for _, w := range ws[i : i+k] {
			s.ok += w.ok
			s.errs += w.errs
		}
		out = append(out, s)
	}
	return out
}

// firstSteady returns the index of the earliest run of n consecutive
// samples whose throughputs all lie within ±tol of their own mean (UPB
// §3.2; the test is analyze.SteadyStretches over the samples).
func firstSteady(ss []sample, period time.Duration, tol float64, n int) (int, bool) {
	if n < 2 || len(ss) < n {
		return 0, false
	}
	tp := make([]float64, len(ss))
	for i, s := range ss {
		tp[i] = s.tps()
	}
	st := analyze.SteadyStretches(tp, period, tol, time.Duration(n)*period)
	if len(st) == 0 {
		return 0, false
	}
	return st[0][0], true
}

// Steadiness is the steady-state test of one probe.
type Steadiness struct {
	Sample  time.Duration // sampling period, a multiple of Window
	Window  time.Duration // the runner's window
	Tol     float64       // ±band around the mean
	Measure time.Duration // length of the window to find
}

func (s Steadiness) perSample() int { return max(1, int(s.Sample/s.Window)) }
func (s Steadiness) nSamples() int  { return max(2, int(s.Measure/s.Sample)) }

// Find returns the earliest steady measurement window among the post-warm-up
// rows: its start and end (since t=0), successful operations and errors.
func (s Steadiness) Find(rows []measure.WindowRow) (from, to time.Duration, ok, errs int64, found bool) {
	ss := samples(runWindows(rows, s.Window), s.perSample())
	i, found := firstSteady(ss, s.Sample, s.Tol, s.nSamples())
	if !found {
		return 0, 0, 0, 0, false
	}
	for _, x := range ss[i : i+s.nSamples()] {
		ok += x.ok
		errs += x.errs
	}
	return ss[i].start, ss[i+s.nSamples()-1].end, ok, errs, true
}

// First returns the measurement window of the paper's acceptance (no
// steady-state search, Config.SteadyRule off): the first Measure after
// warm-up — its start and end, successful operations and errors — and
// whether its samples happen to stay within ±Tol (recorded, not judged).
// have is false when the rows hold less than Measure after warm-up; the
// window is then what there is.
func (s Steadiness) First(rows []measure.WindowRow) (from, to time.Duration, ok, errs int64, have, steady bool) {
	ss := samples(runWindows(rows, s.Window), s.perSample())
	if len(ss) == 0 {
		return 0, 0, 0, 0, false, false
	}
	n := min(len(ss), s.nSamples())
	for _, x := range ss[:n] {
		ok += x.ok
		errs += x.errs
	}
	i, st := firstSteady(ss[:n], s.Sample, s.Tol, n)
	return ss[0].start, ss[n-1].end, ok, errs, n == s.nSamples(), st && i == 0
}

// spread describes how far the samples of the post-warm-up rows stray from
// their mean, for a "not steady" note.
func (s Steadiness) spread(rows []measure.WindowRow) string {
	ss := samples(runWindows(rows, s.Window), s.perSample())
	if len(ss) == 0 {
		return "no complete sample after warm-up"
	}
	var sum, lo, hi float64
	for i, x := range ss {
		v := x.tps()
		sum += v
		if i == 0 || v < lo {
			lo = v
		}
		if i == 0 || v > hi {
			hi = v
		}
	}
	mean := sum / float64(len(ss))
	if mean <= 0 {
		return "no throughput"
	}
	return fmt.Sprintf("%d samples of %v: %.0f..%.0f ops/s around %.0f, ±%.0f %% allowed", len(ss), s.Sample, lo, hi, mean, s.Tol*100)
}

// countWithin reads an HdrHistogram interval log (hist/all.hlog) and returns
// the total count and the count of values ≤ limitUs over the intervals that
// start in [from, to) (seconds since the log's base time).
func countWithin(r io.Reader, from, to time.Duration, limitUs int64) (total, within int64, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 64*1024*1024)
	eps := time.Millisecond
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '"' {
			continue
		}
		if strings.HasPrefix(line, "Tag=") {
			if i := strings.IndexByte(line, ','); i >= 0 {
				line = line[i+1:]
			}
		}
		f := strings.SplitN(line, ",", 4)
		if len(f) != 4 {
			continue
		}
		secs, perr := strconv.ParseFloat(f[0], 64)
		if perr != nil {
			continue
		}
		at := time.Duration(secs * float64(time.Second))
		if at < from-eps || at >= to-eps {
			continue
		}
		h, derr := hdrhistogram.Decode([]byte(f[3]))
		if derr != nil {
			return 0, 0, fmt.Errorf("decoding interval at %.3f s: %w", secs, derr)
		}
		for _, b := range h.Distribution() {
			total += b.Count
			if b.To <= limitUs {
				within += b.Count
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	return total, within, nil
}

// phiOf returns the fraction of operations of [from, to) that completed
// successfully within limit: operations within the limit over successful
// plus failed operations. It reads the run directory's hist/all.hlog.
func phiOf(dir string, from, to time.Duration, limit time.Duration, errs int64) (float64, error) {
	f, err := runfile.Open(dir + "/hist/all.hlog")
	if err != nil {
		return 0, fmt.Errorf("φ: %w", err)
	}
	defer f.Close()
	total, within, err := countWithin(f, from, to, int64(limit/time.Microsecond))
	if err != nil {
		return 0, fmt.Errorf("φ: %s: %w", dir+"/hist/all.hlog", err)
	}
	if total+errs == 0 {
		return 0, nil
	}
	return float64(within) / float64(total+errs), nil
}
