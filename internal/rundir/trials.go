package rundir

import "github.com/faultbench/faultbench/internal/stats"

// Trials is the trials section of the summary.json of a scenario run with
// trials (the parent directory; each trial is a run directory of its own
// under it, trial-01/ ...). The parent's other summary fields are those of
// the scenario (name, target, nodes, rate); readers that do not know this
// section still parse the file.
type Trials struct {
	N    int    `json:"n"`    // trials asked for
	Seed uint64 `json:"seed"` // the base seed each trial's seed derives from
	Mode string `json:"mode"` // fresh or reuse
	// Only is set when one trial was replayed (--trial K).
	Only int        `json:"only,omitempty"`
	Runs []TrialRun `json:"runs"`
	// Metrics holds each metric's distribution over the trials, by key
	// (throughput_ops, fault1_downtime_ms ...; docs/output.md).
	Metrics map[string]TrialMetric `json:"metrics"`
	// Resamples is the number of bootstrap resamples of the intervals.
	Resamples int `json:"resamples"`
}

// TrialRun is one trial as the parent records it.
type TrialRun struct {
	K    int    `json:"trial"`
	Seed uint64 `json:"seed"` // replays the trial: --trial K --seed <the parent's seed>
	Dir  string `json:"dir"`  // relative to the parent: trial-01
	// FaultAtMs are the fault times drawn for the trial, in schedule
	// order; Victims what each fault of the analysis did ("kill n2"), in
	// the faults' order (fault K of the metrics is Victims[K-1]).
	FaultAtMs []float64 `json:"fault_at_ms,omitempty"`
	Victims   []string  `json:"victims,omitempty"`
	Failed    bool      `json:"failed,omitempty"`
	Error     string    `json:"error,omitempty"`
}

// TrialMetric is one metric over the trials: its summary (n counts the
// trials that have a value) and each trial's value.
type TrialMetric struct {
	Label string `json:"label"` // the results table's row
	Unit  string `json:"unit,omitempty"`
	Fault int    `json:"fault,omitempty"` // 1-based fault of a per-fault metric
	stats.Summary
	Values []TrialValue `json:"values"`
	// Missing lists the trials without a value (n/a, never, still down at
	// the span's end, a failed trial).
	Missing []int `json:"missing_trials,omitempty"`
}

// TrialValue is one trial's value of a metric.
type TrialValue struct {
	K int     `json:"trial"`
	V float64 `json:"value"`
}

// TrialInfo is the trial section of one trial's own summary.json.
type TrialInfo struct {
	K         int       `json:"trial"`
	Of        int       `json:"of"`
	Seed      uint64    `json:"seed"`
	BaseSeed  uint64    `json:"base_seed"`
	FaultAtMs []float64 `json:"fault_at_ms,omitempty"`
}
