package main

import (
	"context"

	"github.com/faultbench/faultbench/internal/distrib"
	"github.com/faultbench/faultbench/internal/experiment"
)

// procFlags is what `run -p clients.process=true` needs besides the
// properties: the flags that cannot go with it.
type procFlags struct {
	hosts   bool // --clients, --listen or --workers given
	metrics bool // --metrics-addr given
}

// runClientProcesses runs a run phase whose client groups (clients=N) are
// N local `faultbench worker` processes of this binary, merged exactly by
// the distributed coordinator (docs/metrics.md, per-client spread).
func (a *app) runClientProcesses(ctx context.Context, c procFlags, spec distrib.Spec) error {
	if c.hosts {
		return usagef("-p clients.process=true and client hosts (--clients, --listen) both given: the client processes run on this machine; choose one")
	}
	if c.metrics {
		return usagef("--metrics-addr is not supported with -p clients.process=true yet")
	}
	bin, err := selfBinary()
	if err != nil {
		return err
	}
	spec.Binary, spec.Processes = bin, true
	_, err = distrib.Run(ctx, spec)
	return err
}

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
