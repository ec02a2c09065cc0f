package experiment

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/targets"
)

// PhaseArgs are what a YCSB-style command line (`faultbench load|run`)
// says about a phase's properties; PhaseProperties turns them into the
// properties and the phase.
type PhaseArgs struct {
	// Phase is the command's phase (load or run).
	Phase runner.Phase
	// Files are the -P property files, in order (later files win);
	// Overrides the -p key=value overrides (win over files).
	Files, Overrides []string
	// Threads (-threads) and Rate (-target, ops/s) set threadcount and
	// target when not nil, with a note when they override a file's value.
	Threads *int
	Rate    *float64
	// ForcePhase is YCSB's -t (run) or -load (load), "" when neither was
	// given: it wins over the command and over dotransactions.
	ForcePhase runner.Phase
	// Endpoints (--endpoints), when not nil, sets the target's EndpointKey.
	Endpoints *string
	// Notes receives the "note: ..." lines (what overrides what).
	Notes io.Writer
}

// PhaseProperties resolves a's properties for target t: the -P files,
// the -p overrides, -threads and -target, the phase (the command, YCSB's
// dotransactions, -t and -load, in that order of precedence) and
// --endpoints. A file, an override or --endpoints that is wrong is an
// *InvalidError (a non-boolean dotransactions a *properties.ValueError);
// nothing is checked against the workload or the driver yet (Prepare).
func PhaseProperties(t *targets.Target, a PhaseArgs) (*properties.Properties, runner.Phase, error) {
	phase := a.Phase
	notes := a.Notes
	if notes == nil {
		notes = io.Discard
	}
	p := properties.New()
	for _, f := range a.Files {
		if err := p.LoadFile(f); err != nil {
			return nil, phase, &InvalidError{Err: err} // a missing or unreadable -P file
		}
	}
	for _, o := range a.Overrides {
		if err := p.ParseOverride(o); err != nil {
			return nil, phase, &InvalidError{Err: err}
		}
	}
	override := func(flagName, key, value string) {
		if src, ok := p.SourceOf(key); ok && p.Map()[key] != value {
			fmt.Fprintf(notes, "note: -%s %s overrides %s=%s (%s)\n", flagName, value, key, p.Map()[key], src)
		}
		p.SetFrom(key, value, properties.Source{Origin: "-" + flagName})
	}
	if a.Threads != nil {
		override("threads", "threadcount", strconv.Itoa(*a.Threads))
	}
	if a.Rate != nil {
		override("target", "target", strconv.FormatFloat(*a.Rate, 'f', -1, 64))
	}
	// YCSB's dotransactions (set by its -t and -load) picks the phase
	if dt, ok := p.SourceOf("dotransactions"); ok && a.ForcePhase == "" {
		v, err := p.Bool("dotransactions", true)
		if err != nil {
			return nil, phase, err
		}
		if v != (phase == runner.Run) {
			phase = runner.Load
			if v {
				phase = runner.Run
			}
			fmt.Fprintf(notes, "note: dotransactions=%t (%s): running the %s phase\n", v, dt, phase)
		}
	}
	if a.ForcePhase != "" {
		phase = a.ForcePhase
	}
	p.Declare("dotransactions")
	if a.Endpoints != nil {
		eps := *a.Endpoints
		for _, e := range strings.Split(eps, ",") {
			if strings.TrimSpace(e) == "" {
				return nil, phase, &InvalidError{Err: fmt.Errorf("--endpoints %q: an empty address in the list (allowed: comma-separated addresses, e.g. http://10.0.0.5:2379,http://10.0.0.6:2379)", eps)}
			}
		}
		if src, ok := p.SourceOf(t.EndpointKey); ok && p.String(t.EndpointKey, "") != eps {
			return nil, phase, &InvalidError{Err: fmt.Errorf("--endpoints %s and %s=%s (%s) both given: choose one", eps, t.EndpointKey, p.String(t.EndpointKey, ""), src)}
		}
		p.SetFrom(t.EndpointKey, eps, properties.Source{Origin: "--endpoints"})
	}
	return p, phase, nil
}
