package tpcc

import (
	"fmt"
	"time"
)

// The measurement rules of the TPC-C specification that a run's totals
// can be checked against (docs/tpcc.md, "Measurement rules").
var (
	// mixMinimum is each transaction type's minimum share of the committed
	// transactions (clause 5.2.3): New-Order has none, it is what remains.
	mixMinimum = [OpLoad]float64{0, 0.43, 0.04, 0.04, 0.04}
	// p90Limit is each type's 90th percentile response-time limit
	// (clause 5.2.5.4): 5 s, but 20 s for Stock-Level and, for Delivery,
	// whose deferred execution faultbench runs inside the terminal's
	// transaction, the deferred execution's 80 s.
	p90Limit = [OpLoad]time.Duration{5 * time.Second, 5 * time.Second, 5 * time.Second, 80 * time.Second, 20 * time.Second}
)

// CheckRules checks committed transaction counts and 90th percentile
// response times, per type (indexed like OpNames; a zero p90 is a type
// without successes and is not checked), against the mix minimums and
// response-time limits of the specification. It returns one sentence per
// broken rule, none when every rule holds; a run without committed
// transactions breaks none (there is nothing to judge).
func CheckRules(committed [OpLoad]int64, p90 [OpLoad]time.Duration) []string {
	var total int64
	for _, n := range committed {
		total += n
	}
	var out []string
	names := OpNames()
	for op := range OpLoad {
		if total > 0 && mixMinimum[op] > 0 {
			if share := float64(committed[op]) / float64(total); share < mixMinimum[op] {
				out = append(out, fmt.Sprintf("%s is %.2f %% of the committed transactions, below the minimum %.0f %% (clause 5.2.3)",
					names[op], share*100, mixMinimum[op]*100))
			}
		}
		if p90[op] > p90Limit[op] {
			out = append(out, fmt.Sprintf("%s 90th percentile response time %v, above the limit %v (clause 5.2.5.4)",
				names[op], p90[op].Round(time.Millisecond), p90Limit[op]))
		}
	}
	return out
}
