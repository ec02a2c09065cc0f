// Package histcheck runs a checker over a run's operation history by name
// (docs/checks.md): the one package `faultbench check RUN_DIR --checker
// NAME` calls, and the entry point a scenario's checks can use. The
// checkers themselves live below internal/check.
package histcheck

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/check/bank"
	"github.com/faultbench/faultbench/internal/check/elle"
	"github.com/faultbench/faultbench/internal/check/linear"
	"github.com/faultbench/faultbench/internal/check/setvis"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/runfile"
)

// Options are every checker's settings; each checker reads its own.
type Options struct {
	// Model is the isolation checker's consistency model (default
	// serializable).
	Model string
	// OutDir is where checkers write files (linearizable: drawings of
	// failed keys); empty: nothing is written.
	OutDir string
	// KeyTimeout is the linearizable checker's time limit per key
	// (default 10 s).
	KeyTimeout time.Duration
	// Total and AllowNegative are the bank checker's (docs/checks.md).
	Total         int64
	AllowNegative bool
}

// Validate checks the options.
func (o Options) Validate() error {
	if o.Model != "" {
		if _, err := elle.ModelNamed(o.Model); err != nil {
			return err
		}
	}
	if o.KeyTimeout < 0 {
		return errors.New("key timeout must not be negative")
	}
	return nil
}

// Names lists the checkers.
func Names() []string {
	return []string{elle.Name, linear.Name, bank.Name, setvis.Name}
}

// Check runs the checker called name over the history file at
// historyPath.
func Check(ctx context.Context, historyPath, name string, opts Options) (verdict.Verdict, error) {
	if err := opts.Validate(); err != nil {
		return verdict.Verdict{}, err
	}
	if !runfile.Exists(historyPath) {
		return verdict.Verdict{}, fmt.Errorf("no history to check: %s: %w", historyPath, fs.ErrNotExist)
	}
	switch name {
	case elle.Name:
		return elle.Check(ctx, historyPath, elle.Options{Model: opts.Model})
	case linear.Name:
		return linear.Check(ctx, historyPath, linear.Options{OutDir: opts.OutDir, KeyTimeout: opts.KeyTimeout})
	case bank.Name:
		return bank.Check(ctx, historyPath, bank.Options{Total: opts.Total, AllowNegative: opts.AllowNegative})
	case setvis.Name:
		return setvis.Check(ctx, historyPath, setvis.Options{})
	}
	return verdict.Verdict{}, fmt.Errorf("unknown checker %q (want one of %s)", name, strings.Join(Names(), ", "))
}

// ErrNoHistory says a run directory has no history.jsonl.
var ErrNoHistory = errors.New("no " + history.FileName + ": only a run of a workload made for checking records one (docs/checks.md)")

// Result is a checker's verdict over a run directory or history file, as
// `faultbench check` shows it.
type Result struct {
	Verdict verdict.Verdict
	// File is where the verdict was written as JSON (a run directory's
	// checks/<checker>.json); empty for a history file.
	File string
}

// Failed reports whether the checker found an anomaly its model forbids.
func (r Result) Failed() bool { return r.Verdict.Valid == verdict.False }

// Text is the verdict for a terminal: its line, each explained anomaly and
// the notes.
func (r Result) Text() string {
	var b strings.Builder
	b.WriteString(r.Verdict.Line())
	b.WriteString("\n")
	for _, an := range r.Verdict.Anomalies {
		fmt.Fprintf(&b, "\n%s\n", an.Explanation)
	}
	for _, n := range r.Verdict.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, f := range r.Verdict.Files {
		fmt.Fprintf(&b, "drawn: %s\n", f)
	}
	return b.String()
}

// CheckPath runs the checker called name over path: a run directory (its
// history.jsonl; the verdict is written to checks/<name>.json there, with
// any drawings) or a history file. opts.OutDir is set for a run directory.
func CheckPath(ctx context.Context, path, name string, opts Options) (Result, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Result{}, fmt.Errorf("%s: no such run directory or history file", path)
	}
	hist, outDir := path, ""
	if st.IsDir() {
		hist = filepath.Join(path, history.FileName)
		if !runfile.Exists(hist) {
			return Result{}, fmt.Errorf("%s: %w", path, ErrNoHistory)
		}
		outDir = filepath.Join(path, "checks")
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			return Result{}, fmt.Errorf("creating %s: %w", outDir, err)
		}
		opts.OutDir = outDir
	}
	v, err := Check(ctx, hist, name, opts)
	if err != nil {
		return Result{}, err
	}
	res := Result{Verdict: v}
	if outDir != "" {
		b, err := v.JSON()
		if err != nil {
			return res, err
		}
		res.File = filepath.Join(outDir, name+".json")
		if err := os.WriteFile(res.File, append(b, '\n'), 0o644); err != nil {
			return res, fmt.Errorf("writing the verdict: %w", err)
		}
	}
	return res, nil
}

// IsChecker reports whether name is a checker's name.
func IsChecker(name string) bool {
	for _, n := range Names() {
		if n == name {
			return true
		}
	}
	return false
}
