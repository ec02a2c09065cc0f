package scenario

import (
	"fmt"
	"slices"
)

// Sweep is the `sweep:` section of a scenario: a scalability benchmark
// that `faultbench sweep` runs as a sequence of workload runs, one per
// step, each on a freshly started and loaded cluster (docs/sweeps.md). The
// types are those of the scalability study (Kuhlenkamp, Klems, Röss,
// "Benchmarking Scalability and Elasticity of Distributed Database
// Systems", PVLDB 2014):
//
//   - sb1: the load changes between runs, the capacity (target.nodes) does not;
//   - sb2: the capacity (cluster size) changes between runs, the load does not;
//   - sb3: capacity and load change proportionally.
//
// A scenario with this section has no fault schedule: a scalability
// benchmark measures before and after a change of capacity, not during it.
type Sweep struct {
	// Type is sb1, sb2 or sb3.
	Type string `yaml:"type"`
	// Rates are SB1's load steps: ops/s (500) or a percentage of each
	// step's calibrated capacity (50%).
	Rates []Rate `yaml:"rates,omitempty"`
	// Nodes are SB2's and SB3's cluster sizes, one step each; each step's
	// size replaces target.nodes.
	Nodes []int `yaml:"nodes,omitempty"`
	// RatePerNode is SB3's offered load per node (ops/s): a step with n
	// nodes offers n × rate_per_node (replacing load.rate).
	RatePerNode float64 `yaml:"rate_per_node,omitempty"`
	// ThreadsPerNode, when set (SB3), scales load.threads with the cluster
	// size: n × threads_per_node threads.
	ThreadsPerNode int `yaml:"threads_per_node,omitempty"`
	// ClientsPerNode, when set (SB3), scales load.clients with the cluster
	// size: n × clients_per_node client groups (the study added YCSB
	// servers with the nodes).
	ClientsPerNode int `yaml:"clients_per_node,omitempty"`
	// RecordsPerNode, when set (SB2, SB3), scales the data with the cluster
	// size: recordcount = n × records_per_node (the study loaded 10 million
	// records × the cluster size).
	RecordsPerNode int64 `yaml:"records_per_node,omitempty"`
	// Retries are a metastable sweep's client retry policies
	// (runner.retry: none, immediate, backoff, budget), one map each.
	Retries []string `yaml:"retries,omitempty"`
	// Triggers are a metastable sweep's trigger strengths, weakest first:
	// each a name and the --set assignments that make it (a spike's
	// factor and duration, a pause's resume time).
	Triggers []SweepTrigger `yaml:"triggers,omitempty"`
	// Pause is how long to wait between steps (after one cluster stopped,
	// before the next starts), e.g. for the machine to settle.
	Pause Duration `yaml:"pause,omitempty"`
}

// SweepTrigger is one trigger strength of a metastable sweep.
type SweepTrigger struct {
	Name string   `yaml:"name"`
	Set  []string `yaml:"set"` // path=value, as --set takes them
}

// The sweep types.
const (
	SweepSB1 = "sb1"
	SweepSB2 = "sb2"
	SweepSB3 = "sb3"
	// SweepMetastable is the recovery map of metastable failures: every
	// retry policy × trigger × load (rates), each a scenario run judged
	// by the metastability verdict (docs/sweeps.md).
	SweepMetastable = "metastable"
)

// retryPolicies are runner.retry's values (internal/runner).
var retryPolicies = []string{"none", "immediate", "backoff", "budget"}

// MaxSweepSteps bounds the number of steps of a sweep.
const MaxSweepSteps = 50

// validate checks the section against its type and the rest of the scenario.
func (w *Sweep) validate(s *Scenario) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: "sweep." + field, Msg: fmt.Sprintf(format, args...)})
	}
	steps := 0
	switch w.Type {
	case SweepSB1:
		steps = len(w.Rates)
		if len(w.Rates) == 0 {
			bad("rates", "sb1 needs the load steps, e.g. [500, 1000, 2000] (ops/s) or [25%%, 50%%, 100%%]")
		}
		if len(w.Nodes) > 0 {
			bad("nodes", "sb1 keeps the capacity fixed: set target.nodes, not sweep.nodes")
		}
		if w.RatePerNode != 0 || w.ThreadsPerNode != 0 || w.ClientsPerNode != 0 || w.RecordsPerNode != 0 {
			bad("rate_per_node", "rate_per_node, threads_per_node, clients_per_node and records_per_node scale with the cluster size: sb3 (or sb2 for records_per_node) only")
		}
		for i, r := range w.Rates {
			if r.IsZero() {
				bad(fmt.Sprintf("rates[%d]", i), "0: allowed ops/s > 0 or a percentage")
			}
		}
	case SweepSB2, SweepSB3:
		steps = len(w.Nodes)
		if len(w.Nodes) == 0 {
			bad("nodes", "%s needs the cluster sizes, e.g. [1, 2, 3]", w.Type)
		}
		for i, n := range w.Nodes {
			if n < 1 || n > 64 {
				bad(fmt.Sprintf("nodes[%d]", i), "%d: allowed 1..64", n)
			}
		}
		if len(w.Rates) > 0 {
			bad("rates", "%s takes its load from %s; rates are sb1's steps", w.Type, map[string]string{SweepSB2: "load.rate (fixed)", SweepSB3: "rate_per_node"}[w.Type])
		}
		if w.Type == SweepSB2 && (w.RatePerNode != 0 || w.ThreadsPerNode != 0 || w.ClientsPerNode != 0) {
			bad("rate_per_node", "sb2 keeps the load fixed (load.rate, load.threads); scaling the load with the nodes is sb3")
		}
		if w.Type == SweepSB3 && !(w.RatePerNode > 0) {
			bad("rate_per_node", "sb3 needs the offered load per node in ops/s (> 0)")
		}
	case SweepMetastable:
		steps = len(w.Rates) * max(len(w.Retries), 1) * len(w.Triggers)
		if len(w.Rates) == 0 {
			bad("rates", "a metastable sweep needs the loads, e.g. [50%%, 75%%, 90%%]")
		}
		if len(w.Triggers) == 0 {
			bad("triggers", "a metastable sweep needs the trigger strengths, e.g. [{name: x2 5s, set: [workload.properties.runner.spike.factor=2, workload.properties.runner.spike.duration=5s]}]")
		}
		for i, r := range w.Retries {
			if !slices.Contains(retryPolicies, r) {
				bad(fmt.Sprintf("retries[%d]", i), "%q: allowed %v", r, retryPolicies)
			}
		}
		names := map[string]bool{}
		for i, tr := range w.Triggers {
			if tr.Name == "" || names[tr.Name] {
				bad(fmt.Sprintf("triggers[%d].name", i), "%q: every trigger needs a name of its own", tr.Name)
			}
			names[tr.Name] = true
		}
		if len(w.Nodes) > 0 || w.RatePerNode != 0 || w.ThreadsPerNode != 0 || w.ClientsPerNode != 0 || w.RecordsPerNode != 0 {
			bad("nodes", "a metastable sweep keeps the cluster fixed: set target.nodes")
		}
	default:
		bad("type", "%q: allowed sb1 (load steps, fixed capacity), sb2 (capacity steps, fixed load), sb3 (both, proportionally), metastable (retry policies × triggers × loads)", w.Type)
	}
	if w.Type != SweepMetastable && (len(w.Retries) > 0 || len(w.Triggers) > 0) {
		bad("triggers", "retries and triggers are a metastable sweep's")
	}
	if steps > MaxSweepSteps {
		bad("type", "%d steps: at most %d", steps, MaxSweepSteps)
	}
	if w.ThreadsPerNode < 0 || w.ThreadsPerNode > MaxThreads {
		bad("threads_per_node", "%d: allowed 1..%d", w.ThreadsPerNode, MaxThreads)
	}
	if w.ClientsPerNode < 0 {
		bad("clients_per_node", "%d: must not be negative", w.ClientsPerNode)
	}
	if w.ClientsPerNode > 0 {
		tpn := w.ThreadsPerNode
		if tpn == 0 && s.Load.Threads > 0 && len(w.Nodes) > 0 {
			tpn = s.Load.Threads / slices.Max(w.Nodes) // load.threads is fixed: every step must have enough
		}
		if tpn > 0 && w.ClientsPerNode > tpn {
			bad("clients_per_node", "%d: more client groups than threads per node (%d)", w.ClientsPerNode, tpn)
		}
	}
	if w.RecordsPerNode < 0 {
		bad("records_per_node", "%d: must not be negative", w.RecordsPerNode)
	}
	if w.RatePerNode < 0 {
		bad("rate_per_node", "%g: must not be negative", w.RatePerNode)
	}
	if w.Pause.D() < 0 {
		bad("pause", "%v: must not be negative", w.Pause.D())
	}
	if len(s.Target.Endpoints) > 0 {
		errs = append(errs, &FieldError{Field: "target.endpoints", Msg: "a sweep starts a fresh cluster for every step; remove endpoints"})
	}
	if w.Type != SweepMetastable && (len(s.Schedule.Steps) > 0 || s.Schedule.Failover != nil) {
		errs = append(errs, &FieldError{Field: "schedule", Msg: "a scalability sweep measures between changes, not during them: remove the schedule (elasticity under faults is a scenario of its own)"})
	}
	if s.UPB != nil {
		errs = append(errs, &FieldError{Field: "upb", Msg: "a scenario is either a sweep or a UPB run, not both"})
	}
	return errs
}
