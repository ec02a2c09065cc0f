// Package checkers runs a checker over a history file by name: the entry
// point of `faultbench check RUN_DIR --checker NAME` and of a scenario's
// checks (docs/checks.md).
package checkers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/check/bank"
	"github.com/faultbench/faultbench/internal/check/elle"
	"github.com/faultbench/faultbench/internal/check/linear"
	"github.com/faultbench/faultbench/internal/check/setvis"
	"github.com/faultbench/faultbench/internal/check/verdict"
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
	if _, err := os.Stat(historyPath); err != nil {
		return verdict.Verdict{}, fmt.Errorf("no history to check: %w", err)
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
