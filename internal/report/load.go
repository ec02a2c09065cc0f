package report

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/fault/kind"
	"github.com/faultbench/faultbench/internal/hostload"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/runfile"
)

// Run is what a run directory holds, read into memory: the measurements,
// the events, the summary and the files describing the run. Load fills it;
// the HTML report, the plots and compare read only this.
type Run struct {
	Dir  string // the run directory as given
	Name string // its base name, e.g. 20261122T025454Z-etcd-kill-pause

	Windows []measure.WindowRow // windows.csv, in file order
	Events  []event.Event       // events.jsonl
	Summary *rundir.Summary     // summary.json; nil when missing
	// Analysis is summary.json's availability report or, when the summary
	// has none (a load/run phase, a run killed before its end), one
	// computed from the windows and events with the default parameters.
	Analysis *analyze.Report
	// Faults are the faults drawn as spans: those of Analysis (faults
	// injected after the last window are left out).
	Faults []analyze.Fault
	// Kinds are the fault kinds the faults are labelled and coloured by:
	// the built-in ones (nil) and those summary.json's fault_kinds adds.
	Kinds   *kind.Registry
	Clients []Client    // clients.csv
	Env     *rundir.Env // env.json; nil when missing

	// Host is host.csv: the machine's load, steal and CPU per sample;
	// nil when the run has none (runs before it was recorded).
	Host *hostload.Series

	// Verdicts are the checkers' verdicts over the run's history, by
	// checker: summary.json's checks and checks/<checker>.json (verdicts.go).
	Verdicts map[string]*verdict.Verdict

	Scenario   string // scenario.yaml, verbatim ("" when absent)
	Properties string // run.properties, verbatim ("" when absent)
	// Files are the run directory's files (relative, slash-separated,
	// sorted), for links; node data directories are left out.
	Files []string

	Ops    []string      // operation types with rows, in file order (ALL excluded)
	Window time.Duration // median window length
	Warmup time.Duration // start of the first run-phase window (0 without warm-up)
	End    time.Duration // end of the last window
	Notes  []string      // what was missing or odd while reading
}

// Client is one row of clients.csv.
type Client struct {
	ID                                 int
	OK, Errors                         int64
	MeanUs, P50Us, P95Us, P99Us, MaxUs float64
	ThroughputOps                      float64
}

// Title is the run's display name: the scenario's name, else the phase and
// target of a load/run, else the directory's name.
func (r *Run) Title() string {
	switch {
	case r.Summary != nil && r.Summary.Scenario != "":
		return r.Summary.Scenario
	case r.Summary != nil && r.Summary.Phase != "":
		return r.Summary.Phase + " " + r.Summary.Target
	}
	return r.Name
}

// Load reads the run directory dir. windows.csv is required; every other
// file is optional and its absence is recorded in Notes, so that a run
// killed halfway still gets a report.
func Load(ctx context.Context, dir string) (*Run, error) {
	r := &Run{Dir: dir, Name: filepath.Base(filepath.Clean(dir))}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("run directory %s: not a directory", dir)
	}
	if r.Windows, err = measure.ReadWindows(filepath.Join(dir, measure.WindowsFile)); err != nil {
		return nil, fmt.Errorf("%s is not a readable run directory: %w", dir, err)
	}
	if len(r.Windows) == 0 {
		return nil, fmt.Errorf("%s: windows.csv has no windows (the run ended before its first window closed)", dir)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	optional := func(name string, err error) {
		switch {
		case err == nil:
		case errors.Is(err, fs.ErrNotExist):
			r.Notes = append(r.Notes, name+" is missing")
		default:
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %v", name, err))
		}
	}
	evs, err := event.ReadFile(filepath.Join(dir, "events.jsonl"))
	r.Events = evs // a torn last line still leaves the events before it
	optional("events.jsonl", err)
	var sum rundir.Summary
	if err := readJSON(filepath.Join(dir, "summary.json"), &sum); err != nil {
		optional("summary.json", err)
	} else {
		r.Summary = &sum
		if len(sum.FaultKinds) > 0 { // kinds the run registered beside the built-in ones
			r.Kinds = kind.Builtin()
			if err := r.Kinds.AddDescriptions(sum.FaultKinds); err != nil {
				r.Notes = append(r.Notes, "summary.json fault_kinds: "+err.Error())
			}
		}
	}
	var vnotes []string
	r.Verdicts, vnotes = loadVerdicts(dir, r.Summary)
	r.Notes = append(r.Notes, vnotes...)
	var env rundir.Env
	if err := readJSON(filepath.Join(dir, "env.json"), &env); err != nil {
		optional("env.json", err)
	} else {
		r.Env = &env
	}
	r.Clients, err = readClients(filepath.Join(dir, measure.ClientsFile))
	optional(measure.ClientsFile, err)
	if h, err := hostload.Read(filepath.Join(dir, hostload.File)); err == nil {
		r.Host = h
	} else if !errors.Is(err, fs.ErrNotExist) {
		r.Notes = append(r.Notes, hostload.File+": "+err.Error())
	}
	if b, err := runfile.ReadFile(filepath.Join(dir, "scenario.yaml")); err == nil {
		r.Scenario = string(b)
	}
	if b, err := runfile.ReadFile(filepath.Join(dir, "run.properties")); err == nil {
		r.Properties = string(b)
	}
	if r.Files, err = listFiles(dir); err != nil {
		r.Notes = append(r.Notes, "listing files: "+err.Error())
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.derive()
	if r.Summary != nil && r.Summary.Analysis != nil {
		r.Analysis = r.Summary.Analysis
	} else {
		params := analyze.DefaultParams()
		if hl, err := measure.ReadHistLogs(dir); err == nil {
			params.Hists = hl // exact span percentiles
		} else if !errors.Is(err, fs.ErrNotExist) {
			r.Notes = append(r.Notes, "hist/*.hlog: "+err.Error())
		}
		if r.Summary != nil {
			params.OfferedOps = r.Summary.TargetOps
		}
		params.Kinds = r.Kinds
		rep, err := analyze.Analyze(r.Windows, r.Events, params)
		if err != nil {
			r.Notes = append(r.Notes, "analysis: "+err.Error())
		} else {
			r.Analysis = rep
			if r.Summary != nil && r.Summary.Scenario != "" {
				r.Notes = append(r.Notes, "summary.json has no availability report: computed here with the default parameters")
			}
		}
	}
	if r.Analysis != nil {
		for _, f := range r.Analysis.Faults {
			r.Faults = append(r.Faults, f.Fault)
		}
	}
	return r, nil
}

// derive computes Ops, Window, Warmup and End from the windows.
func (r *Run) derive() {
	seen := map[string]bool{}
	var lens []time.Duration
	last := -1
	r.Warmup = -1
	for _, w := range r.Windows {
		if w.Op != measure.AllOps && !seen[w.Op] {
			seen[w.Op] = true
			r.Ops = append(r.Ops, w.Op)
		}
		if w.Index != last {
			last = w.Index
			lens = append(lens, w.End-w.Start)
			if r.Warmup < 0 && w.Phase == measure.PhaseRun {
				r.Warmup = w.Start
			}
		}
		r.End = max(r.End, w.End)
	}
	if r.Warmup < 0 {
		r.Warmup = 0
	}
	sort.Slice(lens, func(i, j int) bool { return lens[i] < lens[j] })
	r.Window = lens[len(lens)/2]
}

// RunFaults returns the faults that are real injections (not restore-only
// actions): the ones drawn as shaded spans.
func (r *Run) RunFaults() []analyze.Fault {
	var out []analyze.Fault
	for _, f := range r.Faults {
		if !f.RestoreOnly() {
			out = append(out, f)
		}
	}
	return out
}

// Start0 returns the wall clock of the run's t = 0, from the first event
// (every event carries both clocks); zero when there are no events.
func (r *Run) Start0() time.Time {
	for _, e := range r.Events {
		if e.Kind == event.PhaseStart {
			return e.Wall.Add(-e.Since())
		}
	}
	return time.Time{}
}

// RunEvents returns the events that happened during the measured run
// (from t = 0 to the end of the last window), by wall clock: events logged
// before t = 0 (cluster start, load) keep times relative to an earlier
// origin and are left out.
func (r *Run) RunEvents() []event.Event {
	t0 := r.Start0()
	var out []event.Event
	for _, e := range r.Events {
		if !t0.IsZero() && e.Wall.Before(t0) {
			continue
		}
		if e.Since() < 0 || e.Since() > r.End {
			continue
		}
		out = append(out, e)
	}
	return out
}

func readJSON(path string, v any) error {
	b, err := runfile.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return nil
}

// readClients parses clients.csv.
func readClients(path string) ([]Client, error) {
	f, err := runfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd := csv.NewReader(f)
	head, err := rd.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file")
		}
		return nil, err
	}
	if got := strings.Join(head, ","); got != measure.ClientsHeader {
		return nil, fmt.Errorf("header %q, want %q", got, measure.ClientsHeader)
	}
	var out []Client
	for line := 2; ; line++ {
		rec, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		var c Client
		var errs []error
		atoi := func(s string) int64 {
			v, err := strconv.ParseInt(s, 10, 64)
			errs = append(errs, err)
			return v
		}
		atof := func(s string) float64 {
			v, err := strconv.ParseFloat(s, 64)
			errs = append(errs, err)
			return v
		}
		c.ID = int(atoi(rec[0]))
		c.OK, c.Errors = atoi(rec[1]), atoi(rec[2])
		c.MeanUs, c.P50Us, c.P95Us, c.P99Us, c.MaxUs = atof(rec[3]), atof(rec[4]), atof(rec[5]), atof(rec[6]), atof(rec[7])
		c.ThroughputOps = atof(rec[8])
		if err := errors.Join(errs...); err != nil {
			return out, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, c)
	}
}

// maxListedFiles bounds the file list of a report.
const maxListedFiles = 300

// listFiles lists the run directory's files for the report's links,
// skipping node data directories (they are large and not for reading) and
// temporary files.
func listFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entry: skip it
		}
		rel, rerr := filepath.Rel(dir, path)
		if rerr != nil || rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		depth := strings.Count(rel, "/")
		if d.IsDir() {
			// cluster/<node>/ holds node.log (listed) and data dirs (not)
			if depth >= 2 && strings.HasPrefix(rel, "cluster/") {
				return fs.SkipDir
			}
			if depth >= 3 {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".tmp") || len(out) >= maxListedFiles {
			return nil
		}
		out = append(out, rel)
		return nil
	})
	sort.Strings(out)
	return out, err
}
