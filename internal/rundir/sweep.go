package rundir

// SweepSummary is summary.json of a sweep directory (`faultbench sweep`):
// one row per step of a scalability benchmark (SB1 load steps, SB2
// capacity steps, SB3 both), each step's own run directory beside it.
// Written after every step, so a sweep stopped halfway leaves the steps
// it finished.
type SweepSummary struct {
	Sweep  string `json:"sweep"` // the scenario's name
	Type   string `json:"type"`  // sb1, sb2 or sb3
	Target string `json:"target"`
	File   string `json:"file"`
	// Workload is the YCSB workload file's name.
	Workload string      `json:"workload"`
	Steps    []SweepStep `json:"steps"`
	// Planned is the number of steps the sweep has.
	Planned int `json:"planned_steps_count"`
	// Failed says a step did not complete; Failures say which and why.
	Failed   bool     `json:"failed,omitempty"`
	Failures []string `json:"failures,omitempty"`
}

// SweepStep is one step of a sweep: its inputs and what it measured.
type SweepStep struct {
	Step    int    `json:"step"` // 1-based
	Dir     string `json:"dir"`  // the step's run directory, relative to the sweep directory
	Nodes   int    `json:"nodes"`
	Threads int    `json:"threads"`
	Clients int    `json:"clients"` // client groups (0: one per thread)
	Records int64  `json:"records"` // recordcount
	// RateSpec is the step's load.rate as written (500, 50%, max);
	// OfferedOps the open-loop rate it offered (0: closed loop).
	RateSpec    string  `json:"rate"`
	OfferedOps  float64 `json:"offered_ops"`
	AchievedOps float64 `json:"achieved_ops"` // successful operations per second over the measured run
	Errors      int64   `json:"errors_count"`
	// All and PerOp are the step's intended-start latency percentiles, µs.
	All   Latency            `json:"latency_us"`
	PerOp map[string]Latency `json:"per_op_latency_us"`
	// ClientThroughputCV is the coefficient of variation of the client
	// groups' throughput (-1: fewer than two clients); ClientP99CV that of
	// their p99 latency.
	ClientThroughputCV float64 `json:"client_throughput_cv"`
	ClientP99CV        float64 `json:"client_p99_latency_cv"`
	// Error is why the step failed ("" when it completed).
	Error string `json:"error,omitempty"`
	// A metastable sweep's cell: the retry policy (runner.retry), the
	// trigger's name, and the step's metastability verdict (recovered,
	// metastable, unknown; docs/metrics.md) with its reason and the time
	// to recover, ms after the trigger's end (recovered only).
	Retry           string   `json:"retry,omitempty"`
	Trigger         string   `json:"trigger,omitempty"`
	Verdict         string   `json:"verdict,omitempty"`
	VerdictReason   string   `json:"verdict_reason,omitempty"`
	TimeToRecoverMs *float64 `json:"time_to_recover_ms,omitempty"`
}
