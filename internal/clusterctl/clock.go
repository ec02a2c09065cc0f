package clusterctl

import (
	"fmt"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/targets"
)

// checkClock refuses clock faults (option launcher.OptClock, --clock-faults)
// where they cannot work: a kind whose nodes are Go programs (the target
// says why), nodes on other hosts, a machine without libfaketime.
func checkClock(t *targets.Target, spec launcher.Spec) error {
	if err := t.CheckClock(spec.Options); err != nil {
		return err
	}
	if !launcher.ClockWanted(spec.Options) {
		return nil
	}
	if len(spec.Hosts) > 0 {
		return fmt.Errorf("clock faults (option %s=%s, --clock-faults) act on nodes of this machine only, not on inventory hosts", launcher.OptClock, launcher.ClockFaketime)
	}
	_, err := launcher.FaketimeLibrary()
	return err
}

// clockEnv returns env itself, or, when opts ask for clock faults, an Env
// like it whose node programs start under libfaketime.
func clockEnv(env *launcher.Env, opts map[string]string) *launcher.Env {
	if !launcher.ClockWanted(opts) {
		return env
	}
	return env.WithClock()
}

// recordClock notes clock faults in c's options (the launcher keeps its
// own): a node started again, and the clock faults, find it there.
func recordClock(c *launcher.Cluster, opts map[string]string) {
	if !launcher.ClockWanted(opts) {
		return
	}
	if c.Options == nil {
		c.Options = map[string]string{}
	}
	c.Options[launcher.OptClock] = launcher.ClockFaketime
}
