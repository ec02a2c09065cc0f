package tpcc

import (
	"context"
	"errors"
	"time"

	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// Kind is the TPC-C workload as internal/workload registers it (the value
// tpcc of the workload property): it builds the workload from the tpcc.*
// properties and owns the consistency check.
type Kind struct{}

// New builds the workload from p (declaring its keys) for the run's seed.
func (Kind) New(p *properties.Properties, seed int64) (program.Program, error) {
	cfg, err := FromProperties(p, seed)
	if err != nil {
		return nil, err
	}
	w, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return prog{w}, nil
}

// CheckConsistency is the name of the consistency check in a scenario's
// checks: and in summary.json's checks_passed.
const CheckConsistency = "tpcc-consistency"

// Checks returns the consistency check (conditions 1-4, Consistency and
// ConsistencySQL).
func (Kind) Checks() []program.Check {
	return []program.Check{{
		Name:    CheckConsistency,
		Doc:     "the TPC-C consistency conditions 1-4",
		Timeout: 5 * time.Minute,
		Run:     checkConsistency,
	}}
}

// checkConsistency runs the consistency check after a scenario's measured
// phase: with SQL aggregates on an SQL target, else by reading and
// scanning through the driver. txkv's snapshots trail the last commits by
// a flush report, so a violation is looked at again a few times, 2 s
// apart, before it is reported: a real violation stays, a snapshot lag
// does not.
func checkConsistency(ctx context.Context, _ program.Program, db program.DB) (program.Verdict, error) {
	var (
		res *ConsistencyResult
		err error
	)
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
		}
		switch r, ok := db.Driver.(ScanReader); {
		case db.SQL != nil:
			res, err = ConsistencySQL(ctx, db.SQL)
		case ok:
			res, err = Consistency(ctx, r, 8)
		default:
			return program.Verdict{}, errors.New("the target's driver can neither scan nor run SQL")
		}
		if err == nil && res.OK() || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return program.Verdict{}, err
	}
	return program.Verdict{OK: res.OK(), Text: res.String()}, nil
}

// prog is the Workload as a program.Program with its load phase and its
// figures.
type prog struct{ *Workload }

func (p prog) NewTerminal(id int, seed int64) program.Terminal {
	return p.Workload.NewTerminal(id, seed)
}

// CheckDB refuses a database with neither SQL nor key-value transactions.
func (prog) CheckDB(db program.DB) error {
	if db.KV == nil && db.SQL == nil {
		return errNoTransactions
	}
	return nil
}

// Figures is TPC-C's part of summary.json, under the key "tpcc"
// (docs/tpcc.md).
type Figures struct {
	// TpmC is New-Order transactions committed per minute of the measured
	// period (rolled-back New-Orders count, as the spec's completed
	// business transactions).
	TpmC float64 `json:"tpmC"`
	// Tpm is transactions of all five types committed per minute.
	Tpm float64 `json:"tpm_total"`
	// Aborts counts per transaction type the transactions that ended
	// aborted (class conflict) after their retries.
	Aborts map[string]int64 `json:"aborts"`
	// Retries counts per type the conflict aborts that were retried
	// (tpcc.retries > 0).
	Retries map[string]int64 `json:"retries,omitempty"`
	// RuleViolations lists the specification's measurement rules the run
	// broke (CheckRules: mix minimums of the committed transactions, 90th
	// percentile response-time limits); TpmCFlagged is then true: the tpmC
	// is not a TPC-C result.
	RuleViolations []string `json:"rule_violations,omitempty"`
	TpmCFlagged    bool     `json:"tpmC_flagged,omitempty"`
}

// FiguresOf computes the TPC-C figures from a run phase's totals; retries
// are the conflict retries per type.
func FiguresOf(t program.Totals, retries map[string]int64) *Figures {
	out := &Figures{Aborts: map[string]int64{}, Retries: retries}
	mins := t.RunTimeMs / 60000
	var ok int64
	var committed [OpLoad]int64
	var p90 [OpLoad]time.Duration
	for op, name := range OpNames()[:OpLoad] {
		s := t.PerOp[name]
		ok += s.OK
		committed[op] = s.OK
		p90[op] = time.Duration(s.P90Us * float64(time.Microsecond))
		out.Aborts[name] = s.Errors[outcome.Conflict.String()]
		if name == "NEW-ORDER" && mins > 0 {
			out.TpmC = float64(s.OK) / mins
		}
	}
	if mins > 0 {
		out.Tpm = float64(ok) / mins
	}
	out.RuleViolations = CheckRules(committed, p90)
	out.TpmCFlagged = len(out.RuleViolations) > 0
	return out
}

// tpmCName is the headline figure's name: flagged when the run broke a
// measurement rule (summary.json tpcc.rule_violations says which).
func tpmCName(f *Figures) string {
	if f.TpmCFlagged {
		return "tpmC (measurement rules broken: tpcc.rule_violations)"
	}
	return "tpmC"
}

// SummaryKey is the key of summary.json that holds Figures.
const SummaryKey = "tpcc"

// Summarize returns the figures of a run phase: tpmC and tpm as headline
// figures, and Figures under the key "tpcc".
func (p prog) Summarize(t program.Totals) program.Summary {
	f := FiguresOf(t, p.Retries())
	return program.Summary{Key: SummaryKey, Data: f, Figures: []program.Figure{
		{Group: "TPC-C", Name: tpmCName(f), Value: f.TpmC},
		{Group: "TPC-C", Name: "tpm (all five)", Value: f.Tpm},
	}}
}
