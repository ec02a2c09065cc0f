package txkv

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/client"
	"github.com/faultbench/faultbench/internal/txkv/clientproc"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// instance is one client library instance the load runs on: in this
// process (local) or in a client process of its own (proc, with
// txkv.client-process=true), which the crash-client fault kills with
// SIGKILL.
type instance interface {
	Name() string
	begin(ctx context.Context) (txnOps, error)
	status(ctx context.Context) (wire.ClusterStatus, error)
	persistence() wire.Persistence
	close(ctx context.Context) error
	// crash ends the instance as a client failure: it stops heartbeating
	// and abandons its flushes without unregistering.
	crash() client.CrashInfo
}

// txnOps is a transaction of an instance.
type txnOps interface {
	Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, bool, error)
	Scan(ctx context.Context, table, key string, count int, fields []string) ([]wire.Row, error)
	Write(ctx context.Context, table, key string, values map[string][]byte) error
	Delete(ctx context.Context, table, key string) error
	Commit(ctx context.Context) (uint64, error)
	Abort()
}

// local is an instance in this process.
type local struct{ c *client.Client }

func (l local) Name() string { return l.c.Name() }

func (l local) begin(ctx context.Context) (txnOps, error) {
	t, err := l.c.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return localTxn{t}, nil
}

func (l local) status(ctx context.Context) (wire.ClusterStatus, error) { return l.c.ClusterStatus(ctx) }
func (l local) persistence() wire.Persistence                          { return l.c.Config().Persistence }
func (l local) close(ctx context.Context) error                        { return l.c.Close(ctx) }
func (l local) crash() client.CrashInfo                                { return l.c.Crash() }

type localTxn struct{ t *client.Txn }

func (t localTxn) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, bool, error) {
	return t.t.Read(ctx, table, key, fields)
}

func (t localTxn) Scan(ctx context.Context, table, key string, count int, fields []string) ([]wire.Row, error) {
	return t.t.Scan(ctx, table, key, count, fields)
}

func (t localTxn) Write(_ context.Context, table, key string, values map[string][]byte) error {
	return t.t.Write(table, key, values)
}

func (t localTxn) Delete(_ context.Context, table, key string) error { return t.t.Delete(table, key) }
func (t localTxn) Commit(ctx context.Context) (uint64, error)        { return t.t.Commit(ctx) }
func (t localTxn) Abort()                                            { t.t.Abort() }

// proc is an instance in a client process.
type proc struct {
	p    *clientproc.Proc
	pers wire.Persistence
}

func (p proc) Name() string { return p.p.Name() }

func (p proc) begin(ctx context.Context) (txnOps, error) {
	t, err := p.p.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (p proc) status(ctx context.Context) (wire.ClusterStatus, error) {
	r, err := p.p.Info(ctx, true)
	return r.Status, err
}

func (p proc) persistence() wire.Persistence   { return p.pers }
func (p proc) close(ctx context.Context) error { return p.p.Close(ctx) }

// crash asks the child what it has committed and flushed, then kills it
// with SIGKILL (what it does between the two is not counted).
func (p proc) crash() client.CrashInfo {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	r, _ := p.p.Info(ctx, false)
	cancel()
	p.p.Kill()
	return client.CrashInfo{ID: r.ID, Name: p.p.Name(), TF: r.TF, Commits: r.Commits, Flushes: r.Flushes, Unflushed: r.Commits - r.Flushes}
}

// selfBinary is the faultbench executable a client process runs:
// $FAULTBENCH_SELF when set (tests), else this executable.
func selfBinary() (string, error) {
	if s := os.Getenv("FAULTBENCH_SELF"); s != "" {
		return s, nil
	}
	s, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locating the faultbench executable for a txkv client process: %w", err)
	}
	return s, nil
}

// startProc starts a client process named name.
func (d *Driver) startProc(ctx context.Context, name string, skipFlush bool) (proc, error) {
	self, err := selfBinary()
	if err != nil {
		return proc{}, err
	}
	var errOut io.Writer // discarded
	p, err := clientproc.Start(ctx, name, clientproc.Command(self, d.coordinator, name, skipFlush), errOut)
	if err != nil {
		return proc{}, err
	}
	r, err := p.Info(ctx, false)
	if err != nil {
		p.Kill()
		return proc{}, err
	}
	return proc{p: p, pers: r.Persistence}, nil
}
