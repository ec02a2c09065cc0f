package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/rundir"
)

// exitAnomaly is the exit code of `run` and `scenario` with
// --fail-on-anomaly when a history checker found anomalies its model
// forbids (valid=false): distinct from 1 (the run failed) and 2 (bad
// input), so that CI can tell a database that broke its promise from a
// run that did not work.
const exitAnomaly = 3

// anomalyError says which checkers of which runs found anomalies.
type anomalyError struct{ failed []string }

func (e anomalyError) Error() string {
	return "anomalies found (--fail-on-anomaly): " + strings.Join(e.failed, "; ")
}

// anomalies lists the checkers whose verdict is false, as "checker
// (dir)" when dir is set.
func anomalies(dir string, vs map[string]verdict.Verdict) []string {
	var out []string
	for _, v := range vs {
		if v.Valid == verdict.False {
			s := v.Line()
			if dir != "" {
				s += " (" + dir + ")"
			}
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// anomaliesIn reads the verdicts of summary.json in dir and, for a run
// with trials, of every trial's.
func anomaliesIn(dir string) ([]string, error) {
	paths, _ := filepath.Glob(filepath.Join(dir, "trial-*", "summary.json"))
	paths = append(paths, filepath.Join(dir, "summary.json"))
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		var sum rundir.Summary
		if err := json.Unmarshal(b, &sum); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, anomalies(filepath.Dir(p), sum.Verdicts)...)
	}
	return out, nil
}

// failOnAnomaly returns err, or, when it is nil and the run in dir has a
// checker verdict false, the anomalyError (exit code exitAnomaly).
func failOnAnomaly(dir string, err error) error {
	if err != nil || dir == "" {
		return err
	}
	failed, rerr := anomaliesIn(dir)
	if rerr != nil {
		return rerr
	}
	if len(failed) > 0 {
		return anomalyError{failed: failed}
	}
	return nil
}
