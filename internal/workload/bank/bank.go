// Package bank is the bank workload (workload=bank): transfers between a
// few accounts, which conserve the total, and reads of all accounts, every
// operation recorded in the run's history for the bank checker
// (internal/check/bank: every read of all accounts must sum to the total).
// A load phase creates the accounts, each with the same balance; those
// deposits are recorded too, and give the checker its total.
//
// A transfer reads both balances and writes both back changed by the
// amount, in one transaction: the client computes the new balances, so a
// database that lets two transfers overwrite each other's balances (a lost
// update) or shows a read half a transfer breaks the total. A transfer
// that would make the source negative takes no effect (recorded as fail).
// On an SQL target (postgres-ha, galera) an account is a row (k, balance
// BIGINT); on a target with key-value transactions (txkv) a record whose
// field balance holds it. A target with neither is refused
// (program.Requirer). docs/workloads.md and docs/checks.md describe it.
package bank

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
	"github.com/faultbench/faultbench/internal/workload/recorded"
)

// The properties the workload reads.
const (
	KeyAccounts    = "bank.accounts"       // accounts (default 5)
	KeyBalance     = "bank.balance"        // each account's initial balance (default 100)
	KeyMaxTransfer = "bank.maxtransfer"    // largest amount of a transfer (default 5)
	KeyReadProp    = "bank.readproportion" // share of reads of all accounts (default 0.3)
	KeyTable       = "bank.table"          // SQL table or key-value table (default bank)
)

// KeyCheckTotal is the bank checker's expected total as a run property;
// the workload sets it to Config.Total unless the run does.
const KeyCheckTotal = "check.bank.total"

// Field is the record field (key-value targets) and column (SQL) that
// holds a balance.
const Field = "balance"

// Name is the workload's name (workload=bank).
const Name = "bank"

// The operations, in OpNames order.
const (
	OpTransfer = iota
	OpRead
	OpLoad
)

// Kind is the bank workload as internal/workload registers it.
type Kind struct{}

// New builds the workload from p.
func (Kind) New(p *properties.Properties, seed int64) (program.Program, error) {
	p.Declare(KeyAccounts, KeyBalance, KeyMaxTransfer, KeyReadProp, KeyTable)
	var cfg Config
	ints := []struct {
		key string
		def int64
		dst *int64
	}{{KeyAccounts, 5, &cfg.Accounts}, {KeyBalance, 100, &cfg.Balance}, {KeyMaxTransfer, 5, &cfg.MaxTransfer}}
	for _, f := range ints {
		v, err := p.Int(f.key, f.def)
		if err != nil {
			return nil, err
		}
		*f.dst = v
	}
	var err error
	if cfg.ReadProportion, err = p.Float(KeyReadProp, 0.3); err != nil {
		return nil, err
	}
	cfg.Table = p.String(KeyTable, "bank")
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// the deposits are made in the load phase, whose operations a run
	// does not record: the bank checker gets the total from here, unless
	// the run sets it
	p.Declare(KeyCheckTotal)
	p.SetDefault(KeyCheckTotal, strconv.FormatInt(cfg.Total(), 10))
	return NewWorkload(cfg), nil
}

// Config is the workload's configuration.
type Config struct {
	// Accounts is the number of accounts: few, high contention.
	Accounts int64
	// Balance is each account's initial balance; the total is Accounts *
	// Balance.
	Balance int64
	// MaxTransfer is the largest amount of a transfer (each moves
	// 1..MaxTransfer).
	MaxTransfer int64
	// ReadProportion is the share of operations that read all accounts.
	ReadProportion float64
	// Table holds the accounts.
	Table string
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Accounts < 2 || c.Accounts > 10_000:
		return fmt.Errorf("%s must be 2..10000, got %d", KeyAccounts, c.Accounts)
	case c.Balance < 1 || c.Balance > 1<<40:
		return fmt.Errorf("%s must be 1..2^40, got %d", KeyBalance, c.Balance)
	case c.MaxTransfer < 1 || c.MaxTransfer > 1<<40:
		return fmt.Errorf("%s must be 1..2^40, got %d", KeyMaxTransfer, c.MaxTransfer)
	}
	return recorded.CheckMix(KeyReadProp, c.ReadProportion, 0, KeyTable, c.Table)
}

// Total is what every read of all accounts must sum to.
func (c Config) Total() int64 { return c.Accounts * c.Balance }

// Workload is a configured bank workload, shared by its terminals.
type Workload struct {
	cfg      Config
	rec      recorded.Recording
	table    *recorded.Table
	accounts []string
	loaded   atomic.Int64 // load operations handed out

	// split runs a transfer as two transactions, the debit and then the
	// credit: the test-only switch that breaks a transfer's atomicity
	// (export_test.go), so that the checker's negative control has
	// something to catch.
	split bool
}

// NewWorkload returns the workload for cfg (valid).
func NewWorkload(cfg Config) *Workload {
	w := &Workload{cfg: cfg, rec: recorded.NewRecording(),
		table: &recorded.Table{Workload: Name, Name: cfg.Table, Column: "BIGINT", Field: Field}}
	for i := range cfg.Accounts {
		w.accounts = append(w.accounts, "a"+strconv.FormatInt(i, 10))
	}
	return w
}

// OpNames implements program.Program.
func (w *Workload) OpNames() []string { return []string{"TRANSFER", "READ", "LOAD"} }

// SetRecorder implements program.Historian.
func (w *Workload) SetRecorder(r program.Recorder) { w.rec.SetRecorder(r) }

// LoadUnits implements program.Loader: one deposit per account.
func (w *Workload) LoadUnits() int64 { return w.cfg.Accounts }

// CheckDB implements program.Requirer: the workload needs transactions
// over several keys, SQL or key-value.
func (w *Workload) CheckDB(db program.DB) error { return recorded.RequireTxns(Name, db) }

// NewTerminal implements program.Program: worker id's terminal.
func (w *Workload) NewTerminal(id int, seed int64) program.Terminal {
	return &terminal{w: w, rng: rand.New(rand.NewPCG(uint64(seed), uint64(id))), proc: recorded.NewProcess(id)}
}

type terminal struct {
	w    *Workload
	rng  *rand.Rand
	proc recorded.Process

	op       int
	account  int64 // load: the account created
	from, to int
	amount   int64
}

// NextLoad implements program.LoadTerminal: the next account to create.
func (t *terminal) NextLoad() (int, bool) {
	n := t.w.loaded.Add(1) - 1
	if n >= t.w.cfg.Accounts {
		return 0, false
	}
	t.op, t.account = OpLoad, n
	return OpLoad, true
}

// Next implements program.Terminal: a read of all accounts or a transfer
// between two distinct accounts.
func (t *terminal) Next() (int, time.Duration) {
	if t.rng.Float64() < t.w.cfg.ReadProportion {
		t.op = OpRead
		return t.op, 0
	}
	t.op = OpTransfer
	n := int(t.w.cfg.Accounts)
	t.from = t.rng.IntN(n)
	t.to = (t.from + 1 + t.rng.IntN(n-1)) % n
	t.amount = 1 + t.rng.Int64N(t.w.cfg.MaxTransfer)
	return t.op, 0
}

// errInsufficient ends a transfer whose source holds less than the
// amount: it takes no effect.
var errInsufficient = recorded.Refusal("insufficient balance")

// Execute implements program.Terminal: it runs the operation Next or
// NextLoad picked and records it (recorded.Recording.Do: committed is ok;
// an error before the commit, or a commit refused as a conflict, is a
// failure; any other commit error leaves it unknown, and the terminal
// continues as a new process). A transfer refused for an insufficient
// balance is recorded as failed and returns nil (it did what a transfer
// must).
func (t *terminal) Execute(ctx context.Context, db program.DB) error {
	if err := t.w.CheckDB(db); err != nil {
		return err
	}
	if err := t.w.table.Ensure(ctx, db); err != nil {
		return err
	}
	s := store{w: t.w, db: db}
	var (
		op  history.Op
		run func() (bool, error)
	)
	switch t.op {
	case OpLoad:
		acct := t.w.accounts[t.account]
		op.Name = "deposit"
		op.Mops = []history.Mop{{F: history.Write, Key: acct, Value: t.w.cfg.Balance}}
		run = func() (bool, error) {
			return s.txn(ctx, func(tx txn) error { return tx.put(ctx, acct, t.w.cfg.Balance, false) })
		}
	case OpRead:
		op.Name = "read"
		run = func() (bool, error) {
			return s.txn(ctx, func(tx txn) error {
				var err error
				op.Mops, err = tx.readAll(ctx)
				return err
			})
		}
	case OpTransfer:
		from, to := t.w.accounts[t.from], t.w.accounts[t.to]
		op.Name = "transfer"
		op.Mops = []history.Mop{{F: history.Add, Key: from, Value: -t.amount}, {F: history.Add, Key: to, Value: t.amount}}
		run = func() (bool, error) {
			if t.w.split {
				return t.splitTransfer(ctx, s, from, to)
			}
			return s.txn(ctx, func(tx txn) error {
				if err := tx.add(ctx, from, -t.amount, true); err != nil {
					return err
				}
				return tx.add(ctx, to, t.amount, false)
			})
		}
	}
	err := t.w.rec.Do(&op, &t.proc, run)
	if errors.Is(err, errInsufficient) {
		return nil
	}
	return err
}

// splitTransfer is a transfer broken in two transactions (the test-only
// switch): the debit commits before the credit begins.
func (t *terminal) splitTransfer(ctx context.Context, s store, from, to string) (bool, error) {
	atCommit, err := s.txn(ctx, func(tx txn) error { return tx.add(ctx, from, -t.amount, true) })
	if err != nil {
		return atCommit, err
	}
	return s.txn(ctx, func(tx txn) error { return tx.add(ctx, to, t.amount, false) })
}

// store runs the workload's transactions on SQL or key-value ones.
type store struct {
	w  *Workload
	db program.DB
}

// txn is one transaction of the store.
type txn interface {
	// get returns an account's balance (not found: outcome.ErrNotFound).
	get(ctx context.Context, acct string) (int64, error)
	// put sets an account's balance; exists says it was read first.
	put(ctx context.Context, acct string, balance int64, exists bool) error
	// readAll reads every account, in the workload's order.
	readAll(ctx context.Context) ([]history.Mop, error)
	add(ctx context.Context, acct string, delta int64, debit bool) error
}

// txn runs f in one transaction and commits; atCommit says whether err
// came from the commit.
func (s store) txn(ctx context.Context, f func(txn) error) (atCommit bool, err error) {
	if s.db.SQL != nil {
		return recorded.RunSQL(ctx, s.db, func(tx program.SQLTx) error { return f(sqlTxn{w: s.w, tx: tx, dialect: s.db.Dialect}) })
	}
	return recorded.RunKV(ctx, s.db, func(tx program.Txn) error { return f(kvTxn{w: s.w, tx: tx}) })
}

// addTo reads acct and writes it back changed by delta (the client
// computes the balance); a debit below zero is errInsufficient.
func addTo(ctx context.Context, tx txn, acct string, delta int64, debit bool) error {
	b, err := tx.get(ctx, acct)
	if err != nil {
		return err
	}
	if debit && b+delta < 0 {
		return errInsufficient
	}
	return tx.put(ctx, acct, b+delta, true)
}

type sqlTxn struct {
	w       *Workload
	tx      program.SQLTx
	dialect string
}

func (t sqlTxn) get(ctx context.Context, acct string) (int64, error) {
	var (
		b     int64
		found bool
	)
	err := t.tx.Query(ctx, t.w.table.Select(), []any{acct}, func(scan func(...any) error) error {
		found = true
		return scan(&b)
	})
	if err == nil && !found {
		err = outcome.Classified(outcome.NotFound, Name, fmt.Errorf("account %s: %w", acct, outcome.ErrNotFound))
	}
	return b, err
}

func (t sqlTxn) put(ctx context.Context, acct string, balance int64, exists bool) error {
	if exists {
		_, err := t.tx.Exec(ctx, "UPDATE "+t.w.cfg.Table+" SET "+Field+" = ? WHERE k = ?", balance, acct)
		return err
	}
	_, err := t.tx.Exec(ctx, t.w.table.Upsert(t.dialect, false), acct, balance)
	return err
}

func (t sqlTxn) readAll(ctx context.Context) ([]history.Mop, error) {
	got := map[string]int64{}
	err := t.tx.Query(ctx, "SELECT k, "+Field+" FROM "+t.w.cfg.Table, nil, func(scan func(...any) error) error {
		var (
			k string
			b int64
		)
		if err := scan(&k, &b); err != nil {
			return err
		}
		got[k] = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t.w.mops(got), nil
}

func (t sqlTxn) add(ctx context.Context, acct string, delta int64, debit bool) error {
	return addTo(ctx, t, acct, delta, debit)
}

// mops is a read of all accounts as micro-operations: an account missing
// from got has no value.
func (w *Workload) mops(got map[string]int64) []history.Mop {
	out := make([]history.Mop, len(w.accounts))
	for i, a := range w.accounts {
		b, ok := got[a]
		out[i] = history.Mop{F: history.Read, Key: a, Value: b, HasValue: ok}
	}
	return out
}

type kvTxn struct {
	w  *Workload
	tx program.Txn
}

func (t kvTxn) get(ctx context.Context, acct string) (int64, error) {
	rec, err := t.tx.Read(ctx, t.w.cfg.Table, acct, []string{Field})
	if err != nil {
		return 0, err
	}
	b, err := strconv.ParseInt(string(rec[Field]), 10, 64)
	if err != nil {
		return 0, outcome.Classified(outcome.Other, Name, fmt.Errorf("account %s holds %q, not a balance", acct, rec[Field]))
	}
	return b, nil
}

func (t kvTxn) put(ctx context.Context, acct string, balance int64, exists bool) error {
	rec := map[string][]byte{Field: []byte(strconv.FormatInt(balance, 10))}
	if exists {
		return t.tx.Update(ctx, t.w.cfg.Table, acct, rec)
	}
	return t.tx.Insert(ctx, t.w.cfg.Table, acct, rec)
}

func (t kvTxn) readAll(ctx context.Context) ([]history.Mop, error) {
	got := map[string]int64{}
	for _, a := range t.w.accounts {
		b, err := t.get(ctx, a)
		switch {
		case errors.Is(err, outcome.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			got[a] = b
		}
	}
	return t.w.mops(got), nil
}

func (t kvTxn) add(ctx context.Context, acct string, delta int64, debit bool) error {
	return addTo(ctx, t, acct, delta, debit)
}
