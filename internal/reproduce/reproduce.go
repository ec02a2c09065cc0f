// Package reproduce runs the experiments of one of the five papers
// faultbench implements (docs/papers.md) in the paper's order — each step a
// shipped scenario under scenarios/<paper>/ (or a top-level one) with the
// --set assignments of the chosen scale — and writes the tables of the
// paper's reproduction page (docs/reproductions/<paper>.md) from the runs:
// into the reproduction directory's tables.md, and, when asked, between the
// page's generated-section markers, so that a user can re-run a paper and
// diff. `faultbench reproduce` is its command.
package reproduce

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
	"time"

	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/sweep"
	"github.com/faultbench/faultbench/internal/targets"
	"github.com/faultbench/faultbench/internal/upb"
	"github.com/faultbench/faultbench/scenarios"
)

// Spec is one `faultbench reproduce PAPER` invocation.
type Spec struct {
	Paper  string // a name of Names()
	Scale  Scale
	DryRun bool // validate every step and print the plan; start nothing
	// Page, if set, is the reproduction page whose generated section is
	// rewritten from the runs (docs/reproductions/<paper>.md).
	Page string
	// Only, if set, runs just these steps (by ID) of the scale, in the
	// paper's order; Sets are appended to every step's assignments (a
	// shorter run to try the command: load.duration=5s).
	Only     []string
	Sets     []string
	RunsDir  string // parent of the reproduction directory
	StateDir string // where running clusters are recorded
	Out, Err io.Writer
	// Env is what running a scenario needs from the binary.
	Env Env
	// Exec runs one step; nil runs it for real (experiment, sweep, upb).
	Exec Executor
	// Now stamps the reproduction directory; nil is time.Now.
	Now func() time.Time
}

// Env is what a scenario run needs from the binary.
type Env struct {
	OpenWorkload    func(name string) (io.Reader, error)
	Targets         *targets.Registry // nil: targets.Builtin()
	Processes       experiment.ProcessRunner
	Version, Commit string
	Status, Quiet   bool
}

// Validate checks the spec: a known paper, a scale, where runs go.
func (s Spec) Validate() error {
	var errs []error
	if _, err := Lookup(s.Paper); err != nil {
		errs = append(errs, err)
	}
	if _, err := ParseScale(string(s.Scale)); err != nil {
		errs = append(errs, err)
	}
	if s.RunsDir == "" && !s.DryRun {
		errs = append(errs, errors.New("no runs directory"))
	}
	if s.Out == nil || s.Err == nil {
		errs = append(errs, errors.New("no output writers"))
	}
	if p, err := Lookup(s.Paper); err == nil {
		var ids []string
		for _, st := range p.StepsFor(s.Scale) {
			ids = append(ids, st.ID)
		}
		for _, o := range s.Only {
			if !slices.Contains(ids, o) {
				errs = append(errs, fmt.Errorf("step %q: not a step of %s at scale %s (its steps: %s)", o, p.Name, s.Scale, strings.Join(ids, ", ")))
			}
		}
	}
	return errors.Join(errs...)
}

// steps returns the steps to run: the scale's, only those asked for,
// with the extra assignments.
func (s Spec) steps(p Paper) []Step {
	var out []Step
	for _, st := range p.StepsFor(s.Scale) {
		if len(s.Only) > 0 && !slices.Contains(s.Only, st.ID) {
			continue
		}
		// after the scale's own, so that they win
		st.Small = append(append([]string(nil), st.Small...), s.Sets...)
		st.Full = append(append([]string(nil), st.Full...), s.Sets...)
		out = append(out, st)
	}
	return out
}

// StepRun is one step as it is run: its scenario parsed with the scale's
// assignments and where its run directory goes.
type StepRun struct {
	Step     Step
	Scenario *scenario.Scenario
	File     string   // scenarios/DIR/NAME.yaml
	Sets     []string // the assignments it was parsed with
	Trials   int      // > 0: run as trials
	RunsDir  string   // the reproduction directory
	StateDir string
	Out, Err io.Writer
	Env      Env
}

// Executor runs one step and returns its run directory (a run, a trials
// parent, a sweep or a UPB directory).
type Executor interface {
	Execute(ctx context.Context, r StepRun) (dir string, err error)
}

// Outcome is a reproduction's result.
type Outcome struct {
	Dir      string // the reproduction directory (none for a dry run)
	Manifest *Manifest
	Tables   string // the generated section's body
}

// ParseStep reads a step's scenario with its assignments at scale sc.
func ParseStep(st Step, sc Scale) (*scenario.Scenario, string, []string, error) {
	b, err := scenarios.Read(st.File)
	if err != nil {
		return nil, "", nil, fmt.Errorf("step %s: %w", st.ID, err)
	}
	file := "scenarios/" + st.File + ".yaml"
	sets := st.SetsFor(sc)
	if n := st.TrialsFor(sc); n > 0 {
		sets = append(sets, fmt.Sprintf("trials.n=%d", n))
	}
	s, err := scenario.Parse(b, file, sets)
	if err != nil {
		return nil, "", nil, fmt.Errorf("step %s: %w", st.ID, err)
	}
	if err := checkKind(st, s); err != nil {
		return nil, "", nil, fmt.Errorf("step %s (%s): %w", st.ID, file, err)
	}
	return s, file, sets, nil
}

// checkKind: the step's kind is the scenario's.
func checkKind(st Step, s *scenario.Scenario) error {
	got := KindScenario
	switch {
	case s.UPB != nil:
		got = KindUPB
	case s.Sweep != nil:
		got = KindSweep
	}
	if got != st.Kind {
		return fmt.Errorf("the catalog runs it as %s, the file is a %s", st.Kind, got)
	}
	return nil
}

// Validate checks a step as a dry run does: the scenario parses with the
// scale's assignments, and the run it describes is valid (target,
// launcher options, workload and its properties; every sweep step; the
// UPB configuration). Nothing is started.
func ValidateStep(st Step, sc Scale, env Env) error {
	s, file, sets, err := ParseStep(st, sc)
	if err != nil {
		return err
	}
	wrap := func(err error) error {
		if err == nil {
			return nil
		}
		return fmt.Errorf("step %s (%s): %w", st.ID, file, err)
	}
	switch st.Kind {
	case KindUPB:
		s.Resolve("")
		_, err := upb.ConfigFrom(s)
		return wrap(err)
	case KindSweep:
		spec := sweep.Spec{Scenario: s, File: file, OpenWorkload: env.OpenWorkload, Out: io.Discard, Err: io.Discard, Targets: env.Targets,
			Step: stepParser(st, sets)}
		_, err := sweep.Plan(&spec)
		return wrap(err)
	}
	return wrap(experiment.PlanScenario(experiment.ScenarioSpec{Scenario: s, File: file, OpenWorkload: env.OpenWorkload,
		Out: io.Discard, Err: io.Discard, Targets: env.Targets, Processes: env.Processes}))
}

// stepParser parses the step's file again with extra assignments (a
// sweep's steps).
func stepParser(st Step, sets []string) func([]string) (*scenario.Scenario, error) {
	return func(extra []string) (*scenario.Scenario, error) {
		b, err := scenarios.Read(st.File)
		if err != nil {
			return nil, err
		}
		return scenario.Parse(b, "scenarios/"+st.File+".yaml", append(append([]string(nil), sets...), extra...))
	}
}

// Run reproduces a paper: every step of the scale validated first, then
// run in order into runs/<UTC time>-reproduce-<paper>/ (a failed step is
// recorded and the next one runs; an interruption stops), manifest.json
// rewritten after each step, and the tables written to tables.md and, if
// Spec.Page is set, into the page's generated section.
func Run(ctx context.Context, s Spec) (*Outcome, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	p, _ := Lookup(s.Paper)
	steps := s.steps(p)
	for _, st := range steps {
		if err := ValidateStep(st, s.Scale, s.Env); err != nil {
			// bad input (a --set, or a shipped file): nothing started
			return nil, &experiment.InvalidError{Err: err}
		}
	}
	if s.DryRun {
		writePlan(s.Out, p, s.Scale, steps)
		return &Outcome{}, nil
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	exec := s.Exec
	if exec == nil {
		exec = realExecutor{}
	}
	start := now().UTC()
	dir := filepath.Join(s.RunsDir, start.Format("20060102T150405Z")+"-reproduce-"+p.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("reproduction directory: %w", err)
	}
	m := &Manifest{Paper: p.Name, Scale: s.Scale, Started: start, Version: s.Env.Version, Commit: s.Env.Commit}
	out := &Outcome{Dir: dir, Manifest: m}
	var stopErr error
	for i, st := range steps {
		fmt.Fprintf(s.Out, "reproduce %s: step %d/%d %s (%s): %s\n", p.Name, i+1, len(steps), st.ID, st.Figure, st.File)
		sc, file, sets, err := ParseStep(st, s.Scale)
		rec := ManifestStep{ID: st.ID, Figure: st.Figure, File: file, Kind: st.Kind, Sets: sets}
		if err == nil {
			var rd string
			rd, err = exec.Execute(ctx, StepRun{Step: st, Scenario: sc, File: file, Sets: sets, Trials: st.TrialsFor(s.Scale),
				RunsDir: dir, StateDir: s.StateDir, Out: s.Out, Err: s.Err, Env: s.Env})
			if rd != "" {
				if rel, rerr := filepath.Rel(dir, rd); rerr == nil && !strings.HasPrefix(rel, "..") {
					rd = rel
				}
				rec.Dir = rd
			}
		}
		if err != nil {
			rec.Error = err.Error()
			fmt.Fprintf(s.Err, "reproduce %s: step %s failed: %v\n", p.Name, st.ID, err)
		}
		m.Steps = append(m.Steps, rec)
		if werr := m.write(dir); werr != nil {
			return out, werr
		}
		if ctx.Err() != nil {
			stopErr = ctx.Err()
			break
		}
	}
	tables, err := Tables(p, m, dir)
	if err != nil {
		return out, err
	}
	out.Tables = tables
	if err := os.WriteFile(filepath.Join(dir, TablesFile), []byte(tables), 0o644); err != nil {
		return out, err
	}
	if s.Page != "" {
		if err := UpdatePage(s.Page, p.Name, tables); err != nil {
			return out, err
		}
		fmt.Fprintf(s.Out, "reproduce %s: tables written to %s\n", p.Name, s.Page)
	}
	fmt.Fprintf(s.Out, "reproduce %s: %s (tables: %s)\n", p.Name, dir, filepath.Join(dir, TablesFile))
	if stopErr != nil {
		return out, stopErr
	}
	if n := m.failed(); n > 0 {
		return out, fmt.Errorf("%d of %d steps failed (manifest.json says which)", n, len(m.Steps))
	}
	return out, nil
}

// writePlan prints what a run would do.
func writePlan(w io.Writer, p Paper, sc Scale, steps []Step) {
	fmt.Fprintf(w, "reproduce %s (%s), scale %s: %d steps, valid; dry run, nothing started\n", p.Name, p.Title, sc, len(steps))
	fmt.Fprintf(w, "%s\npage: %s\n", p.Cite, p.Page)
	if sc == Small {
		fmt.Fprintf(w, "expected wall time: about %d minutes on a quiet 2-core machine\n\n", p.SmallMinutes)
	} else {
		fmt.Fprintf(w, "expected wall time: about %d hours at the paper's sizes (needs machines of the paper's size)\n\n", p.FullHours)
	}
	for i, st := range steps {
		fmt.Fprintf(w, "%2d. %-22s %-9s %s\n", i+1, st.ID, st.Kind, "scenarios/"+st.File+".yaml")
		fmt.Fprintf(w, "    reproduces: %s\n", st.Figure)
		if sets := st.SetsFor(sc); len(sets) > 0 {
			fmt.Fprintf(w, "    --set %s\n", strings.Join(sets, " --set "))
		}
		if n := st.TrialsFor(sc); n > 0 {
			fmt.Fprintf(w, "    --trials %d\n", n)
		}
	}
}

// realExecutor runs a step with the packages that run scenarios.
type realExecutor struct{}

func (realExecutor) Execute(ctx context.Context, r StepRun) (string, error) {
	es := experiment.ScenarioSpec{Scenario: r.Scenario, File: r.File, OpenWorkload: r.Env.OpenWorkload, RunsDir: r.RunsDir, StateDir: r.StateDir,
		Out: r.Out, Err: r.Err, Status: r.Env.Status, Quiet: r.Env.Quiet, Version: r.Env.Version, Commit: r.Env.Commit,
		Targets: r.Env.Targets, Processes: r.Env.Processes}
	switch r.Step.Kind {
	case KindUPB:
		out, err := upb.Run(ctx, es)
		return dirOf(out != nil, func() string { return out.Dir }), err
	case KindSweep:
		out, err := sweep.Run(ctx, sweep.Spec{Scenario: r.Scenario, File: r.File, OpenWorkload: r.Env.OpenWorkload, RunsDir: r.RunsDir,
			StateDir: r.StateDir, Out: r.Out, Err: r.Err, Status: r.Env.Status, Quiet: r.Env.Quiet, Version: r.Env.Version,
			Commit: r.Env.Commit, Targets: r.Env.Targets, Step: stepParser(r.Step, r.Sets)})
		return dirOf(out != nil, func() string { return out.Dir }), err
	}
	if r.Scenario.Trials != nil {
		t := r.Scenario.Trials
		out, err := experiment.RunTrials(ctx, es, experiment.TrialsSpec{N: t.N, Seed: t.Seed, Mode: t.Mode})
		return dirOf(out != nil, func() string { return out.Dir }), err
	}
	out, err := experiment.RunScenario(ctx, es)
	return dirOf(out != nil, func() string { return out.Dir }), err
}

func dirOf(ok bool, dir func() string) string {
	if !ok {
		return ""
	}
	return dir()
}

// Manifest is manifest.json of a reproduction directory: which run
// directory each step wrote.
type Manifest struct {
	Paper   string         `json:"paper"`
	Scale   Scale          `json:"scale"`
	Started time.Time      `json:"started"`
	Version string         `json:"version,omitempty"`
	Commit  string         `json:"commit,omitempty"`
	Steps   []ManifestStep `json:"steps"`
}

// ManifestStep is one step as run.
type ManifestStep struct {
	ID     string   `json:"id"`
	Figure string   `json:"figure"`
	File   string   `json:"file"`
	Kind   Kind     `json:"kind"`
	Sets   []string `json:"sets,omitempty"`
	Dir    string   `json:"dir,omitempty"` // relative to the reproduction directory
	Error  string   `json:"error,omitempty"`
}

// ManifestFile and TablesFile are the reproduction directory's own files.
const (
	ManifestFile = "manifest.json"
	TablesFile   = "tables.md"
)

func (m *Manifest) write(dir string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ManifestFile), append(b, '\n'), 0o644)
}

func (m *Manifest) failed() int {
	n := 0
	for _, s := range m.Steps {
		if s.Error != "" {
			n++
		}
	}
	return n
}

// ReadManifest reads a reproduction directory's manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("%s is not a reproduction directory: %w", dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if _, err := Lookup(m.Paper); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return &m, nil
}
