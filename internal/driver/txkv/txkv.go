// Package txkv is faultbench's driver for txkv, the transactional
// key-value store with the recovery middleware of Ahmad et al., Middleware
// 2013 (internal/txkv, docs/papers.md), through its client library.
//
// Every YCSB operation runs as a one-operation transaction: Read and Scan
// read the snapshot Begin hands out (no commit round trip), Update and
// Insert write the given fields, Delete removes the row. The driver also
// implements driver.Transactional, so multi-operation transactions
// (workloads/txn) run as one transaction each. An aborted transaction (a
// write-write conflict, first committer wins) is a Conflict-class error.
//
// One client library instance serves all worker goroutines of a run — the
// paper's one client node with many client threads. With
// txkv.client-process=true it runs in a client process of its own
// (internal/txkv/clientproc), which the crash-client fault kills with
// SIGKILL; by default it runs in this process and crash-client simulates
// the crash (client.Crash).
package txkv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/txkv/client"
)

// Property keys read by New, documented in docs/targets-txkv.md.
const (
	// PropCoordinator is the coordinator's address host:port (required;
	// set automatically for a cluster faultbench started).
	PropCoordinator = "txkv.coordinator"
	// PropCloseTimeout bounds how long Close waits for write-sets still
	// being flushed before it gives up unregistering (default 30s).
	PropCloseTimeout = "txkv.close-timeout"
	// PropName names the client in the coordinator's log (default host/pid).
	PropName = "txkv.client-name"
	// PropClientProcess runs the client library instance in a client
	// process of its own (`faultbench node txkv-client`), so that
	// crash-client is a real kill -9 (default false).
	PropClientProcess = "txkv.client-process"
)

// PropertyNames returns the driver's property keys.
func PropertyNames() []string {
	return []string{PropCoordinator, PropCloseTimeout, PropName, PropClientProcess}
}

// Driver is the txkv driver. It is safe for concurrent use.
type Driver struct {
	cur          atomic.Pointer[holder] // the instance the load runs on
	closeTimeout time.Duration
	procs        bool // instances are client processes
	coordinator  string
	name         string // the first instance's name; replacements add #N

	crashMu sync.Mutex // serialises CrashClient
	gen     int        // instances opened after the first (guarded by crashMu)
}

var (
	_ driver.Driver        = (*Driver)(nil)
	_ driver.Transactional = (*Driver)(nil)
	_ driver.ClientCrasher = (*Driver)(nil)
)

// launcherOptions are txkv.* keys that belong to the launcher.
var launcherOptions = []string{"txkv.persistence", "txkv.heartbeat", "txkv.session-timeout", "txkv.regions",
	"txkv.wal-sync-interval", "txkv.memstore-flush-size", "txkv.start-timeout", "txkv.servers-per-node"}

// New builds a txkv driver from p (a driver.Factory): it registers a
// client with the coordinator.
func New(ctx context.Context, p *properties.Properties) (driver.Driver, error) {
	return NewDriver(ctx, p)
}

// NewDriver is New returning the concrete type.
func NewDriver(ctx context.Context, p *properties.Properties) (*Driver, error) {
	p.DeclarePrefix("txkv.")
	for _, k := range p.Keys() {
		if !strings.HasPrefix(k, "txkv.") || contains(PropertyNames(), k) {
			continue
		}
		if contains(launcherOptions, k) {
			return nil, p.Error(k, "is a launcher option: give it to `cluster up -o %s=...` or a scenario's target.options", k)
		}
		return nil, p.Error(k, "unknown txkv driver property (known: %s)", strings.Join(PropertyNames(), ", "))
	}
	addr := strings.TrimSpace(p.String(PropCoordinator, ""))
	if addr == "" {
		return nil, p.Error(PropCoordinator, "required: the coordinator's address; start a cluster with `faultbench cluster up txkv`")
	}
	ct, err := p.Duration(PropCloseTimeout, 30*time.Second, time.Second)
	if err != nil {
		return nil, err
	}
	if ct <= 0 {
		return nil, p.Error(PropCloseTimeout, "must be positive")
	}
	procs, err := p.Bool(PropClientProcess, false)
	if err != nil {
		return nil, err
	}
	name := p.String(PropName, "")
	if name == "" {
		h, _ := os.Hostname()
		name = fmt.Sprintf("%s/%d", h, os.Getpid())
	}
	d := &Driver{closeTimeout: ct, coordinator: addr, name: name, procs: procs}
	in, err := d.open(ctx, name, false)
	if err != nil {
		return nil, err
	}
	d.set(in)
	return d, nil
}

// holder lets instances of both kinds share one atomic pointer.
type holder struct{ in instance }

func (d *Driver) set(in instance) { d.cur.Store(&holder{in}) }

// open registers a client library instance (in a client process with
// txkv.client-process=true).
func (d *Driver) open(ctx context.Context, name string, skipFlush bool) (instance, error) {
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var in instance
	var err error
	if d.procs {
		// a process start-up is slower than a registration on a loaded machine
		pctx, pcancel := context.WithTimeout(ctx, 60*time.Second)
		in, err = d.startProc(pctx, name, skipFlush)
		pcancel()
	} else {
		var cl *client.Client
		cl, err = client.Open(octx, client.Config{Coordinator: d.coordinator, Name: name, SkipFlush: skipFlush})
		if err == nil {
			in = local{cl}
		}
	}
	if err != nil {
		return nil, outcome.Classified(outcome.ClassOf(err), "connect", err)
	}
	return in, nil
}

// instance returns the client library instance the load currently runs on
// (another one after CrashClient).
func (d *Driver) instance() instance { return d.cur.Load().in }

// ClientName returns the name of the client library instance the load
// currently runs on (another one after CrashClient).
func (d *Driver) ClientName() string { return d.instance().Name() }

// ClientProcesses reports whether the driver's client instances run in
// client processes (txkv.client-process).
func (d *Driver) ClientProcesses() bool { return d.procs }

// Version implements the optional version report of env.json.
func (d *Driver) Version(context.Context) (string, error) {
	v := "txkv (faultbench), persistence " + string(d.instance().persistence())
	if d.procs {
		v += ", client processes"
	}
	return v, nil
}

// classify sorts client errors into driver classes.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var class outcome.Class
	switch {
	case errors.Is(err, client.ErrAborted):
		class = outcome.Conflict
	case errors.Is(err, client.ErrUnknownOutcome), errors.Is(err, context.DeadlineExceeded):
		class = outcome.Timeout
	case errors.Is(err, client.ErrNotCommitted), errors.Is(err, client.ErrClosed):
		class = outcome.Unavailable
	case errors.Is(err, outcome.ErrNotFound):
		class = outcome.NotFound
	default:
		class = outcome.GenericClass(err)
	}
	return outcome.Classified(class, op, err)
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Begin implements driver.Transactional.
func (d *Driver) Begin(ctx context.Context) (driver.Txn, error) {
	t, err := d.instance().begin(ctx)
	if err != nil {
		return nil, classify("begin", err)
	}
	return &txn{t: t}, nil
}

type txn struct{ t txnOps }

func (t *txn) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	m, ok, err := t.t.Read(ctx, table, key, fields)
	if err != nil {
		return nil, classify("read", err)
	}
	if !ok {
		return nil, classify("read", fmt.Errorf("%s: %w", key, outcome.ErrNotFound))
	}
	return m, nil
}

func (t *txn) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	return classify("update", t.t.Write(ctx, table, key, values))
}

func (t *txn) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	return classify("insert", t.t.Write(ctx, table, key, values))
}

func (t *txn) Delete(ctx context.Context, table, key string) error {
	return classify("delete", t.t.Delete(ctx, table, key))
}

func (t *txn) Commit(ctx context.Context) error {
	_, err := t.t.Commit(ctx)
	return classify("commit", err)
}

func (t *txn) Abort(context.Context) error {
	t.t.Abort()
	return nil
}

// Read implements driver.Driver as a read-only transaction.
func (d *Driver) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	t, err := d.Begin(ctx)
	if err != nil {
		return nil, err
	}
	// ended at once: an open transaction holds version garbage collection back
	defer t.Abort(ctx) //nolint:errcheck // read-only, never fails
	return t.Read(ctx, table, key, fields)
}

// ReadStrong is the lost-write check's read (check.StrongReader): a new
// read-only transaction, whose start timestamp the coordinator hands out
// after every commit it acknowledged, so it is Read.
func (d *Driver) ReadStrong(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	return d.Read(ctx, table, key, fields)
}

// strongReader is the check's optional ability (check.StrongReader).
var _ interface {
	ReadStrong(ctx context.Context, table, key string, fields []string) (map[string][]byte, error)
} = (*Driver)(nil)

// Scan implements driver.Driver as a read-only transaction.
func (d *Driver) Scan(ctx context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	t, err := d.instance().begin(ctx)
	if err != nil {
		return nil, classify("scan", err)
	}
	defer t.Abort() // read-only; an open transaction holds version garbage collection back
	rows, err := t.Scan(ctx, table, startKey, count, fields)
	if err != nil {
		return nil, classify("scan", err)
	}
	out := make([]map[string][]byte, len(rows))
	for i, r := range rows {
		m := make(map[string][]byte, len(r.Fields))
		for _, f := range r.Fields {
			m[f.Name] = f.Value
		}
		out[i] = m
	}
	return out, nil
}

func (d *Driver) write(ctx context.Context, op string, do func(txnOps) error) error {
	t, err := d.instance().begin(ctx)
	if err != nil {
		return classify(op, err)
	}
	if err := do(t); err != nil {
		t.Abort()
		return classify(op, err)
	}
	_, err = t.Commit(ctx)
	return classify(op, err)
}

// Update implements driver.Driver as a one-write transaction.
func (d *Driver) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	return d.write(ctx, "update", func(t txnOps) error { return t.Write(ctx, table, key, values) })
}

// Insert implements driver.Driver as a one-write transaction.
func (d *Driver) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	return d.write(ctx, "insert", func(t txnOps) error { return t.Write(ctx, table, key, values) })
}

// Delete implements driver.Driver as a one-delete transaction.
func (d *Driver) Delete(ctx context.Context, table, key string) error {
	return d.write(ctx, "delete", func(t txnOps) error { return t.Delete(ctx, table, key) })
}

// Close waits for pending flushes (txkv.close-timeout) and unregisters.
func (d *Driver) Close() error {
	d.crashMu.Lock() // not halfway through a crash
	defer d.crashMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), d.closeTimeout)
	defer cancel()
	return d.instance().close(ctx)
}
