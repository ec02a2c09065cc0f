package experiment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/histcheck"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/workload"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// checkWorkloadChecks refuses a scenario's check that belongs to a
// workload other than the one the scenario runs (wl), unless it is a
// history checker (histcheck.Names), which judges any workload's history;
// and history checkers for a workload that records no history. The checks
// no workload owns (lost-writes) the scenario package validates.
func checkWorkloadChecks(reg *workload.Registry, file string, checks []string, wl *workload.Workload) error {
	for i, name := range checks {
		if owner, ok := reg.CheckOwner(name); ok && owner.Name != wl.Name() && !histcheck.IsChecker(name) {
			return fmt.Errorf("%s: field checks[%d]: %s is a check of the %s workload; this scenario runs the %s workload", file, i, name, owner.Name, wl.Name())
		}
	}
	return checkHistoryPossible(file, checks, wl)
}

// runHistoryChecks runs the scenario's history checkers (those the
// workload does not own) on the run directory's history.jsonl, after the
// measured phase and the merge of the client processes' histories: each
// verdict goes to summary.json's checks.<checker> and checks_passed (valid
// true passes; false and unknown do not), a checker that could not judge
// to its errors, and the checking is a phase of events.jsonl.
func (r *scenarioRun) runHistoryChecks(ctx context.Context) {
	names := HistoryCheckNames(r.sc.Checks, r.prep.Workload)
	if len(names) == 0 {
		return
	}
	if ctx.Err() != nil {
		for _, n := range names {
			r.sum.ChecksSkipped = append(r.sum.ChecksSkipped, n+": skipped, the run was interrupted before the check")
		}
		return
	}
	evs := r.run.Events
	evs.Emit(event.PhaseStart, "", "check")
	res := RunHistoryChecks(ctx, r.run.Dir, names, r.prep.Settings.CheckOptions, r.s.Err)
	var lines []string
	for _, n := range names {
		v, ok := res.Verdicts[n]
		if !ok {
			r.sum.Checks[n] = false
			continue
		}
		if r.sum.Verdicts == nil {
			r.sum.Verdicts = map[string]verdict.Verdict{}
		}
		r.sum.Verdicts[n] = v
		r.sum.Checks[n] = v.Valid == verdict.True
		lines = append(lines, v.Line())
		if v.Valid == verdict.False {
			r.sum.Errors = append(r.sum.Errors, v.Line())
		}
	}
	r.sum.Errors = append(r.sum.Errors, res.Errors...)
	evs.Emit(event.PhaseEnd, "", "check: "+strings.Join(append(lines, res.Errors...), "; "))
}

// runWorkloadChecks runs the checks of the scenario's workload that the
// scenario names, in the scenario's order, after the measured phase.
func (r *scenarioRun) runWorkloadChecks(ctx context.Context) {
	own := map[string]program.Check{}
	for _, c := range r.prep.Workload.Entry().Checks() {
		own[c.Name] = c
	}
	for _, name := range r.sc.Checks {
		c, ok := own[name]
		if !ok {
			continue
		}
		if ctx.Err() != nil {
			r.sum.ChecksSkipped = append(r.sum.ChecksSkipped, name+": skipped, the run was interrupted before the check")
			continue
		}
		r.runCheck(ctx, c)
	}
}

// runCheck runs one workload check against the measured run's driver:
// its verdict goes to summary.json's checks_passed, a failure's text (or
// the error that kept the check from being made) to its errors, and the
// check is a phase of events.jsonl.
func (r *scenarioRun) runCheck(ctx context.Context, c program.Check) {
	fmt.Fprintf(r.s.Err, "checking %s ...\n", c.Doc)
	evs := r.run.Events
	evs.Emit(event.PhaseStart, "", "check")
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = program.DefaultCheckTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		v   program.Verdict
		err error
	)
	switch {
	case c.History != nil && r.outcome == nil:
		err = errors.New("no measured run: no history to judge")
	case c.History != nil:
		v, err = c.History(cctx, r.prep.Workload.Program(), runner.ProgramDB(r.prep.Driver),
			program.HistoryFile{Path: r.run.Path(history.FileName), Start: r.outcome.Result.Start})
	default:
		v, err = c.Run(cctx, r.prep.Workload.Program(), runner.ProgramDB(r.prep.Driver))
	}
	if err != nil {
		evs.Emit(event.PhaseEnd, "", "check: "+err.Error())
		r.sum.Errors = append(r.sum.Errors, c.Name+": "+err.Error())
		r.sum.Checks[c.Name] = false
		return
	}
	evs.Emit(event.PhaseEnd, "", "check: "+v.Text)
	fmt.Fprintf(r.s.Err, "%s: %s\n", c.Name, v.Text)
	if !v.OK {
		r.sum.Errors = append(r.sum.Errors, c.Name+": "+v.Text)
	}
	r.sum.Checks[c.Name] = v.OK
}

// perOperationLostWrites is the lost-write check's per-operation mode, run
// after its final-state check when the run recorded a CoreWorkload history:
// every key the history wrote is read back into the history (final reads),
// and histcheck.LostWrites judges every acknowledged write against its
// key's final state. The verdict goes to summary.json's checks.lost-writes
// (and so to the terminal's summary, report.WriteScenarioSummary);
// checks_passed.lost-writes is true only when both modes pass.
func (r *scenarioRun) perOperationLostWrites(ctx context.Context) {
	if r.prep.Workload.Program() != nil || !RecordsHistory(r.prep.Workload, r.prep.Settings) || r.outcome == nil {
		return
	}
	path := r.run.Path(history.FileName)
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	n, err := appendFinalReads(cctx, r.prep.Driver, r.prep.Workload.Table(), path, r.outcome.Result.Start)
	cancel()
	if err != nil {
		r.sum.Errors = append(r.sum.Errors, fmt.Sprintf("lost-writes (per operation): reading %d keys back into the history: %v", n, err))
	}
	v, err := histcheck.LostWrites(ctx, path)
	if err != nil {
		r.sum.Errors = append(r.sum.Errors, "lost-writes (per operation): "+err.Error())
		r.sum.Checks["lost-writes"] = false
		return
	}
	if r.sum.Verdicts == nil {
		r.sum.Verdicts = map[string]verdict.Verdict{}
	}
	r.sum.Verdicts[histcheck.LostWritesName] = v
	r.sum.Checks["lost-writes"] = r.sum.Checks["lost-writes"] && v.Valid == verdict.True
	if v.Valid == verdict.False {
		r.sum.Errors = append(r.sum.Errors, v.Line())
	}
}
