// Package bank is the bank checker: transfers between accounts must
// conserve the total, so every read of all accounts must sum to it (and,
// unless allowed, no balance may be negative). The history's transfers are
// operations of add micro-operations (-amount on one account, +amount on
// another); its reads are operations whose micro-operations all read a
// register (an account's balance); initial deposits are writes.
package bank

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
)

// Name is the checker's name in scenarios and `faultbench check`.
const Name = "bank"

// The anomaly names.
const (
	WrongTotal      = "wrong-total"
	NegativeBalance = "negative-balance"
)

// Options configure a check.
type Options struct {
	// Total is the sum every read must see; 0: the sum of the initial
	// deposits (the last acknowledged write of each account).
	Total int64
	// AllowNegative accepts negative balances.
	AllowNegative bool
	// Examples is how many anomalies of each name are explained (default 5).
	Examples int
}

type read struct {
	pos              int
	invoke, complete int64
	process          int
	accounts         []string
	balances         []int64
	missing          []string
}

type checker struct {
	opts     Options
	n        int
	deposits map[string]int64
	accounts map[string]bool
	reads    []read
}

func (c *checker) add(op *history.Op) error {
	pos := c.n
	c.n++
	if op.Outcome != history.OK || len(op.Mops) == 0 {
		return nil
	}
	allReads := true
	for _, m := range op.Mops {
		switch m.F {
		case history.Read:
			if m.IsList {
				return fmt.Errorf("operation %d reads %q as a list: the bank checker takes balance reads", pos, m.Key)
			}
		case history.Write:
			c.deposits[m.Key] = m.Value
			c.accounts[m.Key] = true
			allReads = false
		case history.Add:
			c.accounts[m.Key] = true
			allReads = false
		default:
			return fmt.Errorf("operation %d does %q on %q: the bank checker takes reads, deposits (w) and transfers (add)", pos, m.F, m.Key)
		}
	}
	if !allReads {
		return nil
	}
	r := read{pos: pos, invoke: op.Invoke, complete: op.Complete, process: op.Process}
	for _, m := range op.Mops {
		c.accounts[m.Key] = true
		if !m.HasValue {
			r.missing = append(r.missing, m.Key)
			continue
		}
		r.accounts = append(r.accounts, m.Key)
		r.balances = append(r.balances, m.Value)
	}
	c.reads = append(c.reads, r)
	return nil
}

// Check reads the history file at path and checks it.
func Check(ctx context.Context, path string, opts Options) (verdict.Verdict, error) {
	start := time.Now()
	c := &checker{opts: opts, deposits: map[string]int64{}, accounts: map[string]bool{}}
	torn, err := history.Each(ctx, path, c.add)
	if err != nil {
		return verdict.Verdict{}, fmt.Errorf("bank check: %w", err)
	}
	v, err := c.judge()
	if torn {
		v.Notes = append(v.Notes, "the history's torn last line was skipped")
	}
	v.ElapsedMs = float64(time.Since(start).Microseconds()) / 1000
	return v, err
}

// CheckOps checks a history held in memory.
func CheckOps(_ context.Context, ops []history.Op, opts Options) (verdict.Verdict, error) {
	c := &checker{opts: opts, deposits: map[string]int64{}, accounts: map[string]bool{}}
	for i := range ops {
		if err := ops[i].Validate(); err != nil {
			return verdict.Verdict{}, fmt.Errorf("operation %d: %w", i, err)
		}
		if err := c.add(&ops[i]); err != nil {
			return verdict.Verdict{}, err
		}
	}
	return c.judge()
}

func (c *checker) judge() (verdict.Verdict, error) {
	if c.opts.Examples < 0 {
		return verdict.Verdict{}, errors.New("bank: examples must not be negative")
	}
	keep := c.opts.Examples
	if keep == 0 {
		keep = 5
	}
	v := verdict.Verdict{Checker: Name, Operations: c.n, AnomalyCounts: map[string]int{WrongTotal: 0, NegativeBalance: 0},
		Forbidden: []string{WrongTotal, NegativeBalance}}
	if c.opts.AllowNegative {
		v.Forbidden = []string{WrongTotal}
	}
	total := c.opts.Total
	if total == 0 {
		if len(c.deposits) == 0 {
			return v, errors.New("bank: the history has no initial deposits (writes) and no total was given")
		}
		for _, d := range c.deposits {
			total += d
		}
	}
	judged, partial := 0, 0
	for _, r := range c.reads {
		if len(r.accounts)+len(r.missing) < len(c.accounts) {
			partial++ // not a read of all accounts
			continue
		}
		judged++
		sum := int64(0)
		for _, b := range r.balances {
			sum += b
		}
		desc := fmt.Sprintf("operation %d of the history (process %d, invoked %.6f s, completed %.6f s) read %s",
			r.pos, r.process, float64(r.invoke)/1e9, float64(r.complete)/1e9, balances(r))
		if sum != total || len(r.missing) > 0 {
			why := fmt.Sprintf("their sum is %d, not %d (%+d)", sum, total, sum-total)
			if len(r.missing) > 0 {
				why += fmt.Sprintf("; accounts without a balance: %s", strings.Join(r.missing, ", "))
			}
			v.Add(verdict.Anomaly{Name: WrongTotal, Ops: []int{r.pos}, TimeNs: r.complete, Explanation: WrongTotal + ": " + desc + ": " + why + "."}, keep)
		}
		for i, b := range r.balances {
			if b < 0 {
				v.Add(verdict.Anomaly{Name: NegativeBalance, Ops: []int{r.pos}, TimeNs: r.complete,
					Explanation: fmt.Sprintf("%s: %s: account %s is %d.", NegativeBalance, desc, r.accounts[i], b)}, keep)
				break
			}
		}
	}
	v.Measures = map[string]float64{"total": float64(total), "reads_judged_count": float64(judged), "partial_reads_count": float64(partial),
		"accounts_count": float64(len(c.accounts))}
	v.Judge()
	return v, nil
}

func balances(r read) string {
	parts := make([]string, 0, len(r.accounts)+len(r.missing))
	for i, a := range r.accounts {
		parts = append(parts, fmt.Sprintf("%s=%d", a, r.balances[i]))
	}
	for _, a := range r.missing {
		parts = append(parts, a+"=nil")
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}
