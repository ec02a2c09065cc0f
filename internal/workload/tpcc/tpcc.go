// Package tpcc is the TPC-C workload (TPC Benchmark C, Standard
// Specification 5.11) for faultbench, written from the specification: the
// nine tables as records with composite keys, the population rules of
// clause 4.3, and the five transactions of clause 2 with the standard mix
// (New-Order 45 %, Payment 43 %, Order-Status 4 %, Delivery 4 %,
// Stock-Level 4 %) and their rules. Each TPC-C transaction runs as one
// transaction of a transactional key-value interface (Txn: point reads,
// writes, deletes; no scans), so the spec's range accesses go through
// index records (see docs/tpcc.md).
//
// It is the workload of the CumuloNimbo failure evaluation (Azqueta-Alzúaz,
// Patiño-Martínez, Vianello, Jiménez-Peris, "Fault-tolerance Evaluation of
// a New SQL Database", EDCC 2018; docs/papers.md): tpmC and New-Order
// latency before, during and after a region server fails.
//
// Everything is deterministic from the seed: the population, the NURand C
// constants, each terminal's choices.
package tpcc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// Txn is one transaction of the database (program.Txn: the methods of
// driver.Txn; this package does not depend on drivers).
type Txn = program.Txn

// Begin begins a transaction.
type Begin = program.Begin

// The operation indexes: the five transactions and the load.
const (
	OpNewOrder = iota
	OpPayment
	OpOrderStatus
	OpDelivery
	OpStockLevel
	OpLoad
	numOps
)

// OpNames returns the operation names, index = the Op constants.
func OpNames() []string {
	return []string{"NEW-ORDER", "PAYMENT", "ORDER-STATUS", "DELIVERY", "STOCK-LEVEL", "LOAD"}
}

// Spec sizes (clause 1.2 and 4.3.3.1).
const (
	DistrictsPerWarehouse = 10
	SpecItems             = 100000
	SpecCustomers         = 3000 // per district, also the initial orders per district
	TerminalsPerWarehouse = 10
)

// Property keys, documented in docs/tpcc.md.
const (
	PropWarehouses = "tpcc.warehouses"
	PropThinkTimes = "tpcc.think-times"
	PropItems      = "tpcc.items"
	PropCustomers  = "tpcc.customers-per-district"
	PropRetries    = "tpcc.retries"
)

// PropertyNames returns the workload's property keys.
func PropertyNames() []string {
	return []string{PropWarehouses, PropThinkTimes, PropItems, PropCustomers, PropRetries}
}

// Config is the TPC-C database and terminal configuration.
type Config struct {
	Warehouses int
	// ThinkTimes adds the spec's keying and think times (clause 5.2.5)
	// before each transaction; off, terminals run back to back.
	ThinkTimes bool
	// Items and Customers (per district, also the initial orders per
	// district) scale the database down for tests; the spec's values are
	// SpecItems and SpecCustomers.
	Items, Customers int64
	// Retries is how often a transaction aborted by a conflict is run
	// again (with the same inputs) before its abort is reported; 0 reports
	// every abort.
	Retries int
	Seed    int64
}

// Validate checks c.
func (c Config) Validate() error {
	switch {
	case c.Warehouses < 1 || c.Warehouses > 100000:
		return fmt.Errorf("warehouses must be 1..100000, got %d", c.Warehouses)
	case c.Items < 100 || c.Items > SpecItems:
		return fmt.Errorf("items must be 100..%d, got %d", SpecItems, c.Items)
	case c.Customers < 30 || c.Customers > SpecCustomers:
		return fmt.Errorf("customers per district must be 30..%d, got %d", SpecCustomers, c.Customers)
	case c.Retries < 0 || c.Retries > 100:
		return fmt.Errorf("retries must be 0..100, got %d", c.Retries)
	}
	return nil
}

// FromProperties reads the Config from p (declaring its keys).
func FromProperties(p *properties.Properties, seed int64) (Config, error) {
	p.Declare(PropertyNames()...)
	c := Config{Seed: seed}
	w, err := p.Int(PropWarehouses, 1)
	if err != nil {
		return c, err
	}
	c.Warehouses = int(w)
	if c.ThinkTimes, err = p.Bool(PropThinkTimes, false); err != nil {
		return c, err
	}
	if c.Items, err = p.Int(PropItems, SpecItems); err != nil {
		return c, err
	}
	if c.Customers, err = p.Int(PropCustomers, SpecCustomers); err != nil {
		return c, err
	}
	r, err := p.Int(PropRetries, 0)
	if err != nil {
		return c, err
	}
	c.Retries = int(r)
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("tpcc: %w", err)
	}
	return c, nil
}

// Workload is a configured TPC-C workload shared by all terminals.
type Workload struct {
	cfg   Config
	units []loadUnit
	next  atomic.Int64 // next load unit

	metaMu sync.Mutex
	meta   *Meta // the loaded database's parameters, read once by the first transaction

	schemaMu   sync.Mutex
	schemaDone bool // the SQL schema was created (SQL load)

	rolledBack atomic.Int64
	retries    [OpLoad]atomic.Int64
}

// New builds the workload.
func New(cfg Config) (*Workload, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &Workload{cfg: cfg}
	w.units = plan(cfg)
	return w, nil
}

// Config returns the configuration.
func (w *Workload) Config() Config { return w.cfg }

// OpNames returns the operation names (see the Op constants).
func (w *Workload) OpNames() []string { return OpNames() }

// LoadUnits returns the number of load transactions.
func (w *Workload) LoadUnits() int64 { return int64(len(w.units)) }

// RolledBack returns the New-Orders rolled back on an unused item so far.
func (w *Workload) RolledBack() int64 { return w.rolledBack.Load() }

// Retries returns the conflict retries so far per transaction name.
func (w *Workload) Retries() map[string]int64 {
	out := map[string]int64{}
	for i := range w.retries {
		out[OpNames()[i]] = w.retries[i].Load()
	}
	return out
}

// Meta is the load's parameters (the row TMeta holds).
type Meta struct {
	warehouses      int64
	items, customer int64
	c               Constants
}

// loadMeta reads the database's parameters once.
func (w *Workload) loadMeta(ctx context.Context, db DB) (*Meta, error) {
	w.metaMu.Lock()
	defer w.metaMu.Unlock()
	if w.meta != nil {
		return w.meta, nil
	}
	var (
		m   *Meta
		err error
	)
	if db.SQL != nil {
		m, err = ReadMetaSQL(ctx, db.SQL)
	} else {
		var tx Txn
		if tx, err = db.KV(ctx); err != nil {
			return nil, err
		}
		m, err = ReadMeta(ctx, tx)
		_ = tx.Abort(context.WithoutCancel(ctx))
	}
	if err != nil {
		return nil, err
	}
	if m.warehouses < int64(w.cfg.Warehouses) || m.items != w.cfg.Items || m.customer != w.cfg.Customers {
		return nil, fmt.Errorf("tpcc: the database was loaded with %d warehouses, %d items, %d customers per district; this run asks for %d, %d, %d (load again, or set %s)",
			m.warehouses, m.items, m.customer, w.cfg.Warehouses, w.cfg.Items, w.cfg.Customers, PropWarehouses)
	}
	m.c = m.c.WithRun(w.cfg.Seed)
	w.meta = m
	return m, nil
}

// errNoTransactions says the driver can run no TPC-C transaction.
var errNoTransactions = fmt.Errorf("%w (the tpcc workload needs one, e.g. txkv, postgres-ha, galera)", program.ErrNoTransactions)

// ErrNotLoaded says the database holds no TPC-C population.
var ErrNotLoaded = errors.New("tpcc: no TPC-C database found (run `faultbench load` with the tpcc workload first)")

// ReadMeta reads the load's parameters from a transaction or driver.
func ReadMeta(ctx context.Context, tx interface {
	Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error)
}) (*Meta, error) {
	r, err := tx.Read(ctx, TMeta, metaKey, nil)
	if err != nil {
		if isNotFound(err) {
			return nil, ErrNotLoaded
		}
		return nil, fmt.Errorf("tpcc: reading the load's parameters: %w", err)
	}
	v, err := row(r).ints("warehouses", "items", "customers", "c_last", "c_id", "c_item")
	if err != nil {
		return nil, fmt.Errorf("tpcc: the load's parameters: %w", err)
	}
	return &Meta{warehouses: v[0], items: v[1], customer: v[2], c: Constants{LoadLast: v[3], LoadCID: v[4], LoadItem: v[5]}}, nil
}

// Warehouses returns the number of warehouses a loaded database holds.
func (m *Meta) Warehouses() int64 { return m.warehouses }

// Terminal is one worker: a home warehouse and district (terminal id
// modulo the warehouses and districts), its own random stream, the
// transaction it picked last.
type Terminal struct {
	w      *Workload
	id     int
	wID    int64 // home warehouse
	dID    int64 // the terminal's district (Stock-Level)
	r      *rand.Rand
	src    *rand.PCG // r's source, for retries
	op     int
	unit   int64
	think  time.Duration // think time owed after the previous transaction
	histNo int64
}

// NewTerminal returns terminal id's state; seed is the run's seed.
func (w *Workload) NewTerminal(id int, seed int64) *Terminal {
	W := int64(w.cfg.Warehouses)
	src := newPCG(seed, streamOf(0x7E, int64(id)))
	return &Terminal{
		w: w, id: id,
		wID: int64(id)%W + 1,
		dID: (int64(id)/W)%DistrictsPerWarehouse + 1,
		r:   rand.New(src), src: src,
	}
}

// NextLoad picks the next load transaction; false once the load is done.
func (t *Terminal) NextLoad() (int, bool) {
	n := t.w.next.Add(1) - 1
	if n >= int64(len(t.w.units)) {
		return 0, false
	}
	t.op, t.unit = OpLoad, n
	return OpLoad, true
}

// keying and mean think times per transaction (clause 5.2.5.7).
var (
	keyingTime = [5]time.Duration{18 * time.Second, 3 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second}
	thinkMean  = [5]time.Duration{12 * time.Second, 12 * time.Second, 10 * time.Second, 5 * time.Second, 5 * time.Second}
)

// Next picks the next transaction by the standard mix and returns it
// with the pause before it (think time of the previous one plus the
// keying time of this one, with think times on; else 0).
func (t *Terminal) Next() (int, time.Duration) {
	t.op = pickMix(t.r.IntN(100))
	if !t.w.cfg.ThinkTimes {
		return t.op, 0
	}
	pause := t.think + keyingTime[t.op]
	t.think = thinkTime(t.r.ExpFloat64(), thinkMean[t.op])
	return t.op, pause
}

// thinkTime is the negative exponential think time of mean mean from a
// standard exponential variate x, truncated at 10 times its mean (clause
// 5.2.5.4).
func thinkTime(x float64, mean time.Duration) time.Duration {
	th := time.Duration(x * float64(mean))
	if th > 10*mean {
		th = 10 * mean
	}
	return th
}

// pickMix maps a uniform number in [0, 100) to the standard mix: 45 %
// New-Order, 43 % Payment, 4 % each of Order-Status, Delivery and
// Stock-Level (the spec's minimum percentages, clause 5.2.3, with
// New-Order taking the rest).
func pickMix(n int) int {
	switch {
	case n < 45:
		return OpNewOrder
	case n < 88:
		return OpPayment
	case n < 92:
		return OpOrderStatus
	case n < 96:
		return OpDelivery
	}
	return OpStockLevel
}

// Execute runs the operation Next or NextLoad picked, as one transaction.
// An aborted transaction returns the commit's error (class conflict);
// a New-Order rolled back on an unused item (clause 2.4.2.3) is a
// completed business transaction and returns nil.
func (t *Terminal) Execute(ctx context.Context, db DB) error {
	if db.KV == nil && db.SQL == nil {
		return errNoTransactions
	}
	if t.op == OpLoad {
		if db.SQL != nil {
			if err := t.w.ensureSchema(ctx, db); err != nil {
				return err
			}
			return t.w.runUnit(ctx, sqlLoadBegin(db), t.w.units[t.unit])
		}
		return t.w.runUnit(ctx, db.KV, t.w.units[t.unit])
	}
	m, err := t.w.loadMeta(ctx, db)
	if err != nil {
		return err
	}
	// the inputs are drawn from the terminal's stream inside the
	// transaction: a retry replays them from a copy of the stream's state
	state, err := t.src.MarshalBinary()
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		if db.SQL != nil {
			err = t.onceSQL(ctx, db, m)
		} else {
			err = t.once(ctx, db.KV, m)
		}
		if err == nil || attempt >= t.w.cfg.Retries || outcome.ClassOf(err) != outcome.Conflict || ctx.Err() != nil {
			return err
		}
		t.w.retries[t.op].Add(1)
		if uerr := t.src.UnmarshalBinary(state); uerr != nil {
			return uerr
		}
		// back off a little: the conflicting commit may not be visible to
		// the next snapshot yet
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt+1) * 5 * time.Millisecond):
		}
	}
}

// once runs the picked transaction once.
func (t *Terminal) once(ctx context.Context, begin Begin, m *Meta) error {
	tx, err := begin(ctx)
	if err != nil {
		return err
	}
	return t.run(ctx, tx, &txCtx{ctx: ctx, tx: tx, m: m, t: t})
}

// ender ends a transaction of either back end.
type ender interface {
	Commit(ctx context.Context) error
	Abort(ctx context.Context) error
}

// programs are the five transaction bodies of one back end, each run
// inside the transaction the caller began.
type programs interface {
	newOrder() error
	payment() error
	orderStatus() error
	delivery() error
	stockLevel() error
}

// run runs the picked transaction's body p inside tx and ends tx: an
// error aborts it (the spec's 1 % New-Order rollback counts as rolled
// back, not failed), success commits it.
func (t *Terminal) run(ctx context.Context, tx ender, p programs) error {
	var err error
	switch t.op {
	case OpNewOrder:
		err = p.newOrder()
	case OpPayment:
		err = p.payment()
	case OpOrderStatus:
		err = p.orderStatus()
	case OpDelivery:
		err = p.delivery()
	case OpStockLevel:
		err = p.stockLevel()
	}
	if err != nil {
		_ = tx.Abort(context.WithoutCancel(ctx))
		if errors.Is(err, errRollback) {
			t.w.rolledBack.Add(1)
			return nil
		}
		return err
	}
	return tx.Commit(ctx)
}
