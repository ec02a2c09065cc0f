package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/histcheck"
)

const checkExamples = `  faultbench check history.jsonl --checker isolation --model snapshot-isolation
  faultbench check history.jsonl --checker linearizable --fail-on-anomaly
  faultbench check history.jsonl --checker bank --total 1000`

// checkCmd implements `check RUN_DIR|HISTORY --checker NAME`.
func (a *app) checkCmd(ctx context.Context, args []string) error {
	fs := a.newFlags("check", "check RUN_DIR|HISTORY_FILE --checker NAME [flags]\n\nChecks the operation history of a run (RUN_DIR/history.jsonl, or a history\nfile) with one checker: isolation (Elle-style, against a consistency model),\nlinearizable (per-key register, porcupine), bank (the total is conserved) or\nset (every acknowledged insert stays visible). Prints the verdict (valid:\ntrue, false or unknown) and the anomalies explained, and writes it to\nRUN_DIR/checks/NAME.json (drawings of failed keys next to it).\nSee docs/checks.md.", checkExamples)
	name := fs.String("checker", "", "the checker: `name` ("+strings.Join(histcheck.Names(), ", ")+")")
	model := fs.String("model", "", "isolation: the consistency `model` (read-committed, repeatable-read, snapshot-isolation, serializable, strict-serializable; default serializable)")
	keyTimeout := fs.Duration("key-timeout", 0, "linearizable: the time limit per key (default 10s); an undecided key makes the verdict unknown")
	total := fs.Int64("total", 0, "bank: the total every read must see (default: the sum of the initial deposits)")
	allowNeg := fs.Bool("allow-negative", false, "bank: accept negative balances")
	failOn := fs.Bool("fail-on-anomaly", false, "exit 3 when the verdict is false (for CI), as run and scenario do")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		return usagef("check needs one RUN_DIR or history file, got %d arguments", len(pos))
	case *name == "":
		return usagef("check needs --checker (one of %s)", strings.Join(histcheck.Names(), ", "))
	}
	opts := histcheck.Options{Model: *model, KeyTimeout: *keyTimeout, Total: *total, AllowNegative: *allowNeg}
	if err := opts.Validate(); err != nil {
		return usagef("%v", err)
	}
	if !histcheck.IsChecker(*name) {
		return usagef("unknown checker %q (want one of %s)", *name, strings.Join(histcheck.Names(), ", "))
	}
	if _, err := os.Stat(pos[0]); err != nil {
		return usagef("%s: no such run directory or history file", pos[0])
	}
	res, err := histcheck.CheckPath(ctx, pos[0], *name, opts)
	if err != nil {
		return err
	}
	fmt.Fprint(a.stdout, res.Text())
	if res.File != "" {
		fmt.Fprintf(a.stdout, "verdict: %s\n", res.File)
	}
	if *failOn && res.Failed() {
		return fmt.Errorf("anomalies found (--fail-on-anomaly): %w", experiment.ErrAnomalies)
	}
	return nil
}
