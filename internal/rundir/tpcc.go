package rundir

import "github.com/faultbench/faultbench/internal/outcome"

// TPCC is a TPC-C run's headline figures in summary.json (docs/tpcc.md).
type TPCC struct {
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
}

// TPCCOf computes the TPC-C figures from a run's totals; transactions
// names the five transaction types.
func TPCCOf(t Totals, transactions []string, retries map[string]int64) *TPCC {
	out := &TPCC{Aborts: map[string]int64{}, Retries: retries}
	mins := t.RunTimeMs / 60000
	var ok int64
	for _, name := range transactions {
		s := t.PerOp[name]
		ok += s.OK
		out.Aborts[name] = s.Errors[outcome.Conflict.String()]
		if name == "NEW-ORDER" && mins > 0 {
			out.TpmC = float64(s.OK) / mins
		}
	}
	if mins > 0 {
		out.Tpm = float64(ok) / mins
	}
	return out
}
