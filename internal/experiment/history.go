package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/check"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/histcheck"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/lwtag"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/workload"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// KeyHistory is the property that makes a CoreWorkload run record its
// operation history (history=true; a scenario's history: true, `faultbench
// run --history`). A workload made for checking (a program.Historian)
// records one whatever it says.
const KeyHistory = "history"

// KeyHistoryWriterBase numbers a distributed worker's threads among all
// the phase's threads (distrib sets it): its history values are the
// lost-write tags of writers base, base+1, ..., unique across workers.
const KeyHistoryWriterBase = "history.writer-base"

// The history checkers' options as properties (a scenario sets them in
// workload.properties): check.isolation.model, check.linearizable.key-timeout,
// check.bank.total, check.bank.allow-negative.
const (
	keyCheckModel      = "check.isolation.model"
	keyCheckKeyTimeout = "check.linearizable.key-timeout"
	keyCheckBankTotal  = "check.bank.total"
	keyCheckBankNeg    = "check.bank.allow-negative"
)

// readHistorySettings reads the history property and the checkers'
// options into s, adding its errors to errs.
func readHistorySettings(p *properties.Properties, s *Settings, errs *[]error) {
	get := func(err error) {
		if err != nil {
			*errs = append(*errs, err)
		}
	}
	var err error
	s.History, err = p.Bool(KeyHistory, false)
	get(err)
	base, err := p.Int(KeyHistoryWriterBase, 0)
	get(err)
	if base < 0 || base > MaxThreads {
		*errs = append(*errs, p.Error(KeyHistoryWriterBase, "allowed 0..%d", MaxThreads))
	}
	s.HistoryWriterBase = int(base)
	o := &s.CheckOptions
	o.Model = p.String(keyCheckModel, "")
	o.KeyTimeout, err = p.Duration(keyCheckKeyTimeout, 0, time.Second)
	get(err)
	o.Total, err = p.Int(keyCheckBankTotal, 0)
	get(err)
	o.AllowNegative, err = p.Bool(keyCheckBankNeg, false)
	get(err)
	if err := o.Validate(); err != nil {
		key := keyCheckModel
		if o.KeyTimeout < 0 {
			key = keyCheckKeyTimeout
		}
		*errs = append(*errs, p.Error(key, "%v", err))
	}
}

// RecordsHistory reports whether a phase of wl with settings set records
// an operation history: every phase of a workload made for checking (its
// Program is a program.Historian, which always gets its Recorder; a load
// or calibration phase writes the history of its own directory), and a
// run phase of the CoreWorkload that asks for one (history=true).
func RecordsHistory(wl *workload.Workload, set Settings) bool {
	if prog := wl.Program(); prog != nil {
		_, ok := prog.(program.Historian)
		return ok
	}
	return set.History && set.Runner.Phase == runner.Run
}

// phaseHistory is the operation history of one run phase: the
// program.Recorder a Historian is given (and the CoreWorkload's history
// tracker writes through), appending to a history.Writer whose times are
// ns since the phase's t = 0 on the monotonic clock of the windows and
// events. A flusher writes the buffered lines out every
// history.FlushInterval even when no operation completes, so a run killed
// halfway leaves every operation completed more than that before.
type phaseHistory struct {
	w     *history.Writer
	start time.Time
	stop  chan struct{}
	done  chan struct{}
}

// openHistory starts the history of a phase that began at start: into
// sink when it is set (a distributed worker's stream), else into
// dir/history.jsonl.
func openHistory(dir string, sink io.Writer, start time.Time) (*phaseHistory, error) {
	var w *history.Writer
	var err error
	if sink != nil {
		w, err = history.NewWriter(sink)
	} else {
		w, err = history.Create(filepath.Join(dir, history.FileName))
	}
	if err != nil {
		return nil, err
	}
	h := &phaseHistory{w: w, start: start, stop: make(chan struct{}), done: make(chan struct{})}
	go h.flusher()
	return h, nil
}

func (h *phaseHistory) flusher() {
	defer close(h.done)
	t := time.NewTicker(history.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			_ = h.w.Flush() // an error sticks: Write and close return it
		}
	}
}

// Now implements program.Recorder: ns since the phase's t = 0.
func (h *phaseHistory) Now() int64 { return int64(time.Since(h.start)) }

// Record implements program.Recorder. A write error sticks in the writer
// and is returned by close.
func (h *phaseHistory) Record(op *history.Op) { _ = h.w.Write(op) }

// close stops the flusher and writes everything out; it returns the
// number of operations recorded and the first write error.
func (h *phaseHistory) close() (int64, error) {
	close(h.stop)
	<-h.done
	err := h.w.Close()
	if err != nil {
		err = fmt.Errorf("the operation history: %w", err)
	}
	return h.w.Count(), err
}

// HistoryCheckNames returns the checks of names that are history checkers
// run on the run's history.jsonl: the names histcheck knows, except those
// the workload wl owns (its own check of that name runs instead).
func HistoryCheckNames(names []string, wl *workload.Workload) []string {
	own := map[string]bool{}
	for _, c := range wl.Entry().Checks() {
		own[c.Name] = true
	}
	var out []string
	for _, n := range names {
		if histcheck.IsChecker(n) && !own[n] && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// checkHistoryPossible refuses history checkers for a workload whose run
// records no history (a program workload that is no Historian, e.g.
// TPC-C). The CoreWorkload records one when a history checker is named.
func checkHistoryPossible(file string, names []string, wl *workload.Workload) error {
	hc := HistoryCheckNames(names, wl)
	if len(hc) == 0 {
		return nil
	}
	if prog := wl.Program(); prog != nil {
		if _, ok := prog.(program.Historian); !ok {
			return fmt.Errorf("%s: field checks: %s read the run's operation history, and the %s workload records none (the workloads made for checking and the core workload do)",
				file, strings.Join(hc, ", "), wl.Name())
		}
	}
	return nil
}

// HistoryVerdicts are the verdicts of the history checkers of one run.
type HistoryVerdicts struct {
	// Verdicts by checker name (summary.json's checks).
	Verdicts map[string]verdict.Verdict
	// Errors say which checker could not judge the history, and why.
	Errors []string
}

// Anomalous reports whether a checker found anomalies its model forbids.
func (h HistoryVerdicts) Anomalous() bool {
	for _, v := range h.Verdicts {
		if v.Valid == verdict.False {
			return true
		}
	}
	return false
}

// byName is h's verdicts as report.WriteVerdicts prints them.
func (h HistoryVerdicts) byName() map[string]*verdict.Verdict {
	out := make(map[string]*verdict.Verdict, len(h.Verdicts))
	for name, v := range h.Verdicts {
		out[name] = &v
	}
	return out
}

// RunHistoryChecks runs each history checker of names over the run
// directory dir's history.jsonl (histcheck.CheckPath: the verdict is
// written to dir/checks/<name>.json too, drawings next to it), printing
// to out which checker it is at ("checking NAME on history.jsonl ...");
// the verdicts are printed once, by the caller's summary
// (report.WriteVerdicts). A checker that cannot judge the history (it is
// missing, unreadable, or not of the checker's kind) has an error, printed
// to out, and no verdict.
func RunHistoryChecks(ctx context.Context, dir string, names []string, opts histcheck.Options, out io.Writer) HistoryVerdicts {
	res := HistoryVerdicts{Verdicts: map[string]verdict.Verdict{}}
	for _, name := range names {
		fmt.Fprintf(out, "checking %s on %s ...\n", name, history.FileName)
		r, err := histcheck.CheckPath(ctx, dir, name, opts)
		if err != nil {
			if errors.Is(err, histcheck.ErrNoHistory) {
				err = fmt.Errorf("no %s in the run directory: nothing was checked", history.FileName)
			}
			res.Errors = append(res.Errors, name+": "+err.Error())
			fmt.Fprintf(out, "%s: could not check: %v\n", name, err)
			continue
		}
		res.Verdicts[name] = r.Verdict
	}
	return res
}

// historyTracker records a CoreWorkload run's reads and writes into its
// history (runner.Tracker and runner.ReadTracker), passing every call on
// to the lost-write tracker when there is one. Every written value carries
// the lost-write tag (lwtag.Field: writer and sequence number; the
// lost-write tracker's when it runs, else one of its own in the same
// format), and the history's value of a write is that tag as a number,
// writer << 40 | sequence: unique per run. A read's value is the tag of
// the record it returned (none: the key is missing, or holds an untagged
// value such as a loaded one). Each worker is one process; after an
// operation of unknown outcome it continues as a new one.
type historyTracker struct {
	h          *phaseHistory
	inner      runner.Tracker
	innerReads runner.ReadTracker
	threads    int
	base       int // the first writer number (HistoryWriterBase)
	ws         []historyWorker
}

// historyWorker is one worker's state; only that worker touches it.
type historyWorker struct {
	seq    int64
	gen    int   // how many processes the worker has been
	invoke int64 // of the operation in flight
	tag    [tagLen]byte
	op     history.Op
	mop    [1]history.Mop
	_      [64]byte // no false sharing between workers
}

// tagLen is the length of a lost-write tag, wwww:ssssssssss (hex).
const tagLen = 15

func newHistoryTracker(h *phaseHistory, inner runner.Tracker, threads, writerBase int) *historyTracker {
	t := &historyTracker{h: h, inner: inner, threads: threads, base: writerBase, ws: make([]historyWorker, threads)}
	t.innerReads, _ = inner.(runner.ReadTracker)
	return t
}

// BeforeWrite implements runner.Tracker.
func (t *historyTracker) BeforeWrite(worker int, op *workload.Op) uint64 {
	w := &t.ws[worker]
	var tok uint64
	if t.inner != nil {
		tok = t.inner.BeforeWrite(worker, op)
	} else if op.Kind != workload.Delete {
		encodeTag(&w.tag, t.base+worker, w.seq)
		w.seq++
		if op.Values == nil {
			op.Values = map[string][]byte{}
		}
		op.Values[lwtag.Field] = w.tag[:]
	}
	w.invoke = t.h.Now()
	return tok
}

// AfterWrite implements runner.Tracker. A delete is not recorded: the
// history's register has no delete (docs/checks.md).
func (t *historyTracker) AfterWrite(worker int, op *workload.Op, token uint64, err error) {
	if t.inner != nil {
		t.inner.AfterWrite(worker, op, token, err)
	}
	if op.Kind == workload.Delete {
		return
	}
	w := &t.ws[worker]
	v, ok := tagValue(op.Values[lwtag.Field])
	if !ok {
		return
	}
	w.mop[0] = history.Mop{F: history.Write, Key: op.Key, Value: v}
	t.record(worker, w, writeName(op.Kind), err)
}

// BeforeRead implements runner.ReadTracker.
func (t *historyTracker) BeforeRead(worker int, op *workload.Op) uint64 {
	var tok uint64
	if t.innerReads != nil {
		tok = t.innerReads.BeforeRead(worker, op)
	}
	t.ws[worker].invoke = t.h.Now()
	return tok
}

// AfterRead implements runner.ReadTracker. A read of a field subset that
// leaves the tag out says nothing of the version read: not recorded.
func (t *historyTracker) AfterRead(worker int, op *workload.Op, token uint64, rec map[string][]byte, err error) {
	if t.innerReads != nil {
		t.innerReads.AfterRead(worker, op, token, rec, err)
	}
	w := &t.ws[worker]
	m := history.Mop{F: history.Read, Key: op.Key}
	if err == nil {
		raw, tagged := rec[lwtag.Field]
		if !tagged && op.Fields != nil {
			return
		}
		if tagged {
			v, ok := tagValue(raw)
			if !ok {
				return // not a tag of this format: nothing to say
			}
			m.Value, m.HasValue = v, true
		}
	}
	w.mop[0] = m
	t.record(worker, w, "read", err)
}

// record writes the worker's operation in flight with outcome err.
func (t *historyTracker) record(worker int, w *historyWorker, name string, err error) {
	op := &w.op
	*op = history.Op{Process: w.gen*t.threads + worker, Name: name, Mops: w.mop[:], Invoke: w.invoke, Complete: t.h.Now()}
	op.Outcome, op.Error = outcomeOf(err)
	t.h.Record(op)
	if op.Outcome == history.Unknown {
		w.gen++
	}
}

// outcomeOf maps an operation's error to its history outcome: nil and
// not-found (an answer) are ok; a conflict or a refusal took no effect
// (fail); anything else — a timeout, an unavailable cluster, an unknown
// error — may have (unknown).
func outcomeOf(err error) (history.Outcome, string) {
	switch c := outcome.ClassOf(err); c {
	case outcome.OK, outcome.NotFound:
		return history.OK, ""
	case outcome.Conflict, outcome.Rejected:
		return history.Fail, c.String()
	default:
		return history.Unknown, c.String()
	}
}

func writeName(k workload.OpKind) string {
	switch k {
	case workload.Insert:
		return "insert"
	case workload.Update:
		return "update"
	}
	return "write" // the write half of a read-modify-write is an Update too
}

// encodeTag writes the lost-write tag of worker's seq-th write, as the
// lost-write tracker does.
func encodeTag(b *[tagLen]byte, worker int, seq int64) {
	const hexd = "0123456789abcdef"
	for i := 3; i >= 0; i-- {
		b[i] = hexd[worker&0xf]
		worker >>= 4
	}
	b[4] = ':'
	for i := tagLen - 1; i >= 5; i-- {
		b[i] = hexd[seq&0xf]
		seq >>= 4
	}
}

// tagValue is a lost-write tag as a history value: writer << 40 |
// sequence.
func tagValue(b []byte) (int64, bool) {
	if len(b) != tagLen || b[4] != ':' {
		return 0, false
	}
	var v int64
	for i, c := range b {
		if i == 4 {
			continue
		}
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		default:
			return 0, false
		}
		v = v<<4 | int64(d)
	}
	return v, true
}

// ErrAnomalies is the error of a run whose history checkers found
// anomalies their model forbids, when the caller asked to fail on them
// (Spec.FailOnAnomaly; `--fail-on-anomaly`).
var ErrAnomalies = errors.New("anomalies found (--fail-on-anomaly)")

// AnomalyError returns an error wrapping ErrAnomalies that names every
// checker whose verdict is false, or nil when none is.
func (h HistoryVerdicts) AnomalyError() error {
	var lines []string
	for _, v := range h.Verdicts {
		if v.Valid == verdict.False {
			lines = append(lines, v.Line())
		}
	}
	if len(lines) == 0 {
		return nil
	}
	slices.Sort(lines)
	return fmt.Errorf("%w: %s", ErrAnomalies, strings.Join(lines, "; "))
}

// finalReaders is how many keys appendFinalReads reads at once.
const finalReaders = 8

// appendFinalReads reads back every key the CoreWorkload history at path
// wrote (with the driver's strong read when it has one, as the lost-write
// check does) and appends each read to the history as an operation named
// histcheck.FinalReadName, by processes of their own, on the run's clock
// (t = 0 at start): the final state the per-operation lost-write check
// judges every acknowledged write against, and reads every history
// checker sees. It returns the number of keys read back.
func appendFinalReads(ctx context.Context, rd check.Reader, table, path string, start time.Time) (int, error) {
	keys := map[string]bool{}
	maxP := -1
	if _, err := history.Each(ctx, path, func(op *history.Op) error {
		maxP = max(maxP, op.Process)
		for _, m := range op.Mops {
			if m.F == history.Write && op.Outcome != history.Fail {
				keys[m.Key] = true
			}
		}
		return nil
	}); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return 0, fmt.Errorf("appending the final reads: %w", err)
	}
	defer f.Close()
	hw, err := history.NewWriter(f)
	if err != nil {
		return 0, err
	}
	read := rd.Read
	if sr, ok := rd.(check.StrongReader); ok {
		read = sr.ReadStrong
	}
	todo := make(chan string)
	var wg sync.WaitGroup
	for i := range finalReaders {
		wg.Go(func() {
			for k := range todo {
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				op := history.Op{Process: maxP + 1 + i, Name: histcheck.FinalReadName, Invoke: int64(time.Since(start))}
				rec, err := read(rctx, table, k, nil)
				cancel()
				op.Complete = int64(time.Since(start))
				m := history.Mop{F: history.Read, Key: k}
				if err == nil {
					if v, ok := tagValue(rec[lwtag.Field]); ok {
						m.Value, m.HasValue = v, true
					}
				}
				op.Mops = []history.Mop{m}
				op.Outcome, op.Error = outcomeOf(err)
				_ = hw.Write(&op) // an error sticks: Flush returns it
			}
		})
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	for _, k := range sorted {
		select {
		case todo <- k:
		case <-ctx.Done():
		}
	}
	close(todo)
	wg.Wait()
	if err := hw.Flush(); err != nil {
		return len(sorted), err
	}
	return len(sorted), ctx.Err()
}

// AnomaliesIn returns an error wrapping ErrAnomalies when summary.json in
// the run directory dir, or in one of its trials (trial-*/), has a
// history checker's verdict false; nil when none has.
func AnomaliesIn(dir string) error {
	paths, _ := filepath.Glob(filepath.Join(dir, "trial-*", "summary.json"))
	paths = append(paths, filepath.Join(dir, "summary.json"))
	var lines []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		var sum rundir.Summary
		if err := json.Unmarshal(b, &sum); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, v := range sum.Verdicts {
			if v.Valid == verdict.False {
				lines = append(lines, v.Line()+" ("+filepath.Dir(p)+")")
			}
		}
	}
	if len(lines) == 0 {
		return nil
	}
	slices.Sort(lines)
	return fmt.Errorf("%w: %s", ErrAnomalies, strings.Join(lines, "; "))
}
