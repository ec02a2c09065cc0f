package main

import "github.com/faultbench/faultbench/internal/experiment"

// exitAnomaly is the exit code of `run` and `scenario` with
// --fail-on-anomaly when a history checker found anomalies its model
// forbids (valid=false; an error wrapping experiment.ErrAnomalies):
// distinct from 1 (the run failed) and 2 (bad input), so that CI can tell
// a database that broke its promise from a run that did not work.
const exitAnomaly = 3

// failOnAnomaly returns err, or, when it is nil and the run in dir (or
// one of its trials) has a checker verdict false, an error wrapping
// experiment.ErrAnomalies.
func failOnAnomaly(dir string, err error) error {
	if err != nil || dir == "" {
		return err
	}
	return experiment.AnomaliesIn(dir)
}
