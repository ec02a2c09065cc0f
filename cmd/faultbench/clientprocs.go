package main

import (
	"context"

	"github.com/faultbench/faultbench/internal/distrib"
	"github.com/faultbench/faultbench/internal/experiment"
)

// processRunner runs a scenario's measured phase whose client groups are
// processes (load.client_processes): workers of this binary.
func processRunner() experiment.ProcessRunner {
	return func(ctx context.Context, j experiment.ProcessJob) (*experiment.Outcome, error) {
		bin, err := selfBinary()
		if err != nil {
			return nil, err
		}
		return distrib.Execute(bin)(ctx, j)
	}
}
