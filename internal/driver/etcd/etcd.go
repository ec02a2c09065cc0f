// Package etcd is faultbench's driver for etcd (v3 API, go.etcd.io/etcd/client/v3).
//
// A record is one key, prefix + YCSB key, whose value holds all fields in a
// compact binary encoding (see encodeRecord). Read is one Get, Scan one
// range Get in key order, Insert one Put, Delete one Delete. Update merges
// the given fields into the record (YCSB semantics) with an optimistic
// read-modify-write: Get, then a Txn that writes only if the key's
// ModRevision is unchanged, retried a few times before giving up with a
// Conflict-class error. Errors are sorted into driver classes by classify.
//
// The driver also offers the optional ability Leader, which names the
// endpoint of the current raft leader.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
)

// Property keys read by New. They are documented in docs/targets-etcd.md.
const (
	// PropEndpoints is the comma-separated list of client addresses host:port (required).
	PropEndpoints = "etcd.endpoints"
	// PropDialTimeout bounds connecting at start-up and each connection
	// attempt (milliseconds or a Go duration; default 5s).
	PropDialTimeout = "etcd.dialtimeout"
	// PropSerializable makes reads and scans serializable (served by any
	// member, possibly stale) instead of linearizable (default false).
	PropSerializable = "etcd.serializable"
	// PropUpdate is the update mode: merge (default; YCSB semantics,
	// read-modify-write) or overwrite (one Put of the given fields).
	PropUpdate = "etcd.update"
	// PropPrefix is the key prefix for every table (default "/" + table + "/").
	PropPrefix = "etcd.prefix"
	// PropClients is the number of client connections, used round-robin (default 1).
	PropClients = "etcd.clients"
	// PropMaxRetries is the etcd client's retry limit for requests the
	// server did not process (0: the client's default, 100).
	PropMaxRetries = "etcd.maxretries"
	// PropFailFast makes requests fail at once with Unavailable when no member
	// is reachable, instead of waiting for one until the deadline (default true).
	PropFailFast = "etcd.failfast"
	// PropKeepalive is the gRPC keepalive interval and timeout: a connection
	// to a member that answers no ping within it is dropped and traffic moves
	// to the others (Go duration, at least 10s; default 0: off).
	PropKeepalive = "etcd.keepalive"
	// PropRequireLeader sends every request with clientv3.WithRequireLeader:
	// a member that has lost its leader (a partitioned minority) answers at
	// once with "no leader" (class unavailable), and the client's retry
	// moves a read to another member, instead of the request waiting at
	// that member until its deadline (default false: the etcd client's own
	// default, what an application that does not opt in sees;
	// docs/targets-etcd.md).
	PropRequireLeader = "etcd.requireleader"
)

// defaultMaxRetries is the etcd client's retry limit when
// MaxUnaryRetries is 0 (clientv3's defaultUnaryMaxRetries).
const defaultMaxRetries = 100

// mergeAttempts is how often a merge update tries its conditional write
// before reporting a Conflict.
const mergeAttempts = 5

// Driver is the etcd driver. It is safe for concurrent use.
type Driver struct {
	clients      []*clientv3.Client
	next         atomic.Uint64
	endpoints    []string
	serializable bool
	overwrite    bool
	prefix       string // "" means "/" + table + "/"
	// requireLeader wraps every request's context in
	// clientv3.WithRequireLeader (etcd.requireleader)
	requireLeader bool
	settings      map[string]string // ClientSettings
	names         fieldNames        // decoded records' field names

	closeOnce sync.Once
	closeErr  error
}

var _ driver.Driver = (*Driver)(nil)

// New builds an etcd driver from p (a driver.Factory). It declares every
// "etcd." property, validates them, connects, and checks that some member
// answers within etcd.dialtimeout.
func New(ctx context.Context, p *properties.Properties) (driver.Driver, error) {
	return NewDriver(ctx, p)
}

// PropertyNames returns the driver's property keys.
func PropertyNames() []string {
	return []string{PropEndpoints, PropDialTimeout, PropSerializable, PropUpdate, PropPrefix, PropClients, PropMaxRetries, PropFailFast, PropKeepalive, PropRequireLeader}
}

// NewDriver is New returning the concrete type, for callers that want its
// optional abilities without a type assertion.
func NewDriver(ctx context.Context, p *properties.Properties) (*Driver, error) {
	p.DeclarePrefix("etcd.")
	known := map[string]bool{}
	for _, k := range PropertyNames() {
		known[k] = true
	}
	for _, k := range p.Keys() {
		if strings.HasPrefix(k, "etcd.") && !known[k] {
			return nil, p.Error(k, "unknown etcd driver property (known: %s; launcher options such as etcd.election-timeout go to `cluster up -o` or a scenario's target.options)", strings.Join(PropertyNames(), ", "))
		}
	}
	raw := p.String(PropEndpoints, "")
	var eps []string
	for _, e := range strings.Split(raw, ",") {
		if e = strings.TrimSpace(e); e != "" {
			eps = append(eps, e)
		}
	}
	if len(eps) == 0 {
		return nil, p.Error(PropEndpoints, "required: the client addresses (host:port, comma-separated) of an etcd cluster; "+
			"start a local one with `faultbench cluster up etcd` (it prints them) or set -p %s=127.0.0.1:2379", PropEndpoints)
	}
	for _, e := range eps {
		hp := e
		if i := strings.Index(hp, "://"); i >= 0 {
			hp = hp[i+3:]
		}
		if _, port, err := net.SplitHostPort(hp); err != nil || port == "" {
			return nil, p.Error(PropEndpoints, "%q is not host:port", e)
		}
	}
	dialTimeout, err := p.Duration(PropDialTimeout, 5*time.Second, time.Millisecond)
	if err != nil {
		return nil, err
	}
	if dialTimeout <= 0 {
		return nil, p.Error(PropDialTimeout, "must be positive")
	}
	serializable, err := p.Bool(PropSerializable, false)
	if err != nil {
		return nil, err
	}
	mode := p.String(PropUpdate, "merge")
	if mode != "merge" && mode != "overwrite" {
		return nil, p.Error(PropUpdate, "must be merge or overwrite")
	}
	prefix := p.String(PropPrefix, "")
	nClients, err := p.Int(PropClients, 1)
	if err != nil {
		return nil, err
	}
	if nClients < 1 || nClients > 64 {
		return nil, p.Error(PropClients, "must be between 1 and 64")
	}
	maxRetries, err := p.Int(PropMaxRetries, 0)
	if err != nil {
		return nil, err
	}
	if maxRetries < 0 || maxRetries > 1000 {
		return nil, p.Error(PropMaxRetries, "must be between 0 (client default) and 1000")
	}
	failFast, err := p.Bool(PropFailFast, true)
	if err != nil {
		return nil, err
	}
	keepalive, err := p.Duration(PropKeepalive, 0, time.Second)
	if err != nil {
		return nil, err
	}
	if keepalive != 0 && keepalive < 10*time.Second {
		return nil, p.Error(PropKeepalive, "must be 0 (off) or at least 10s (gRPC's minimum)")
	}
	requireLeader, err := p.Bool(PropRequireLeader, false)
	if err != nil {
		return nil, err
	}

	d := &Driver{endpoints: eps, serializable: serializable, overwrite: mode == "overwrite", prefix: prefix, requireLeader: requireLeader}
	retries := maxRetries
	if retries == 0 {
		retries = defaultMaxRetries
	}
	d.settings = map[string]string{
		PropRequireLeader: strconv.FormatBool(requireLeader),
		PropSerializable:  strconv.FormatBool(serializable),
		PropMaxRetries:    strconv.FormatInt(retries, 10),
		PropFailFast:      strconv.FormatBool(failFast),
		PropDialTimeout:   dialTimeout.String(),
		PropKeepalive:     keepalive.String(),
		PropClients:       strconv.FormatInt(nClients, 10),
		PropUpdate:        mode,
	}
	dialOpts := []grpc.DialOption{
		// Reconnect to a restarted member within a second, not gRPC's default of up to two minutes.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: dialTimeout,
		}),
	}
	if failFast {
		dialOpts = append(dialOpts, grpc.WithChainUnaryInterceptor(failFastInterceptor))
	}
	for range nClients {
		cli, err := clientv3.New(clientv3.Config{
			Endpoints:       eps,
			DialTimeout:     dialTimeout,
			Logger:          zap.NewNop(), // errors reach the runner classified; the client's retry warnings are noise
			MaxUnaryRetries: uint(maxRetries),
			DialOptions:     dialOpts,
			// keepalive 0 leaves it off
			DialKeepAliveTime:    keepalive,
			DialKeepAliveTimeout: keepalive,
			PermitWithoutStream:  keepalive > 0,
		})
		if err != nil {
			_ = d.Close()
			return nil, fmt.Errorf("etcd client for %s: %w", strings.Join(eps, ","), err)
		}
		d.clients = append(d.clients, cli)
	}
	// The client connects lazily; prove that some member answers.
	pctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if _, err := d.clients[0].Get(pctx, "/faultbench/probe", clientv3.WithSerializable(), clientv3.WithCountOnly()); err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("no etcd member answers at %s within %v (is a cluster running? `faultbench cluster up etcd` starts one): %w",
			strings.Join(eps, ","), dialTimeout, err)
	}
	return d, nil
}

// failFastInterceptor overrides the etcd client's WaitForReady(true): with no
// member reachable a request fails at once with codes.Unavailable (which the
// client's own retry logic still retries for reads) instead of waiting for
// a connection until its deadline.
func failFastInterceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return invoker(ctx, method, req, reply, cc, append(opts, grpc.WaitForReady(false))...)
}

// ClientSettings is the optional ability that reports the client settings
// which decide failover figures (retries, timeouts, consistency, leader
// requirement) as their effective values, defaults included, by property
// key; a run records them in env.json's client_settings.
func (d *Driver) ClientSettings() map[string]string {
	out := make(map[string]string, len(d.settings))
	for k, v := range d.settings {
		out[k] = v
	}
	return out
}

// rctx is the context a request is sent with: ctx, marked to require a
// leader with etcd.requireleader.
func (d *Driver) rctx(ctx context.Context) context.Context {
	if d.requireLeader {
		return clientv3.WithRequireLeader(ctx)
	}
	return ctx
}

func (d *Driver) cli() *clientv3.Client {
	if len(d.clients) == 1 {
		return d.clients[0]
	}
	return d.clients[d.next.Add(1)%uint64(len(d.clients))]
}

func (d *Driver) tablePrefix(table string) string {
	if d.prefix != "" {
		return d.prefix
	}
	return "/" + table + "/"
}

// key is the etcd key of a record: its table's prefix and the record's
// key, made in one concatenation.
func (d *Driver) key(table, key string) string {
	if d.prefix != "" {
		return d.prefix + key
	}
	return "/" + table + "/" + key
}

func (d *Driver) readOpts(more ...clientv3.OpOption) []clientv3.OpOption {
	if d.serializable {
		more = append(more, clientv3.WithSerializable())
	}
	return more
}

// Read implements driver.Driver.
func (d *Driver) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	k := d.key(table, key)
	resp, err := d.cli().Get(d.rctx(ctx), k, d.readOpts()...)
	if err != nil {
		return nil, classify("read", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, classify("read", fmt.Errorf("key %q: %w", k, outcome.ErrNotFound))
	}
	rec, err := decodeRecordNames(resp.Kvs[0].Value, fields, &d.names)
	if err != nil {
		return nil, classify("read", fmt.Errorf("key %q: %w", k, err))
	}
	return rec, nil
}

// ReadStrong is Read as a linearizable read whatever etcd.serializable
// says: it goes through the leader and a quorum, so it returns every write
// acknowledged before it. The lost-write check reads back with it
// (check.StrongReader).
func (d *Driver) ReadStrong(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	k := d.key(table, key)
	resp, err := d.cli().Get(d.rctx(ctx), k)
	if err != nil {
		return nil, classify("read", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, classify("read", fmt.Errorf("key %q: %w", k, outcome.ErrNotFound))
	}
	rec, err := decodeRecordNames(resp.Kvs[0].Value, fields, &d.names)
	if err != nil {
		return nil, classify("read", fmt.Errorf("key %q: %w", k, err))
	}
	return rec, nil
}

// strongReader is the check's optional ability (check.StrongReader).
var _ interface {
	ReadStrong(ctx context.Context, table, key string, fields []string) (map[string][]byte, error)
} = (*Driver)(nil)

// Scan implements driver.Driver: one range read from startKey to the end of
// the table's prefix, at most count keys, in key order.
func (d *Driver) Scan(ctx context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	if count <= 0 {
		return nil, nil
	}
	prefix := d.tablePrefix(table)
	resp, err := d.cli().Get(d.rctx(ctx), prefix+startKey,
		d.readOpts(clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)), clientv3.WithLimit(int64(count)))...)
	if err != nil {
		return nil, classify("scan", err)
	}
	out := make([]map[string][]byte, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		rec, err := decodeRecordNames(kv.Value, fields, &d.names)
		if err != nil {
			return nil, classify("scan", fmt.Errorf("key %q: %w", kv.Key, err))
		}
		out = append(out, rec)
	}
	return out, nil
}

// Insert implements driver.Driver with one Put (an existing record is replaced).
func (d *Driver) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	_, err := d.cli().Put(d.rctx(ctx), d.key(table, key), string(encodeRecord(values)))
	return classify("insert", err)
}

// Update implements driver.Driver. In merge mode (the default) the given
// fields replace those of the stored record and other fields are kept; a
// missing record is created with the given fields. The write is a Txn
// conditional on the ModRevision that was read; when another writer got in
// between, the Txn's else branch returns the newer record and the merge is
// tried again, up to 5 times, then the update fails with a Conflict-class
// error. In overwrite mode the update is one Put of the given fields.
func (d *Driver) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	k := d.key(table, key)
	cli := d.cli()
	ctx = d.rctx(ctx)
	if d.overwrite {
		_, err := cli.Put(ctx, k, string(encodeRecord(values)))
		return classify("update", err)
	}
	resp, err := cli.Get(ctx, k, d.readOpts()...)
	if err != nil {
		return classify("update", err)
	}
	var cur []byte
	var rev int64 // ModRevision 0: the key does not exist
	if len(resp.Kvs) > 0 {
		cur, rev = resp.Kvs[0].Value, resp.Kvs[0].ModRevision
	}
	for range mergeAttempts {
		merged, err := mergeRecord(cur, values)
		if err != nil {
			return classify("update", fmt.Errorf("key %q: %w", k, err))
		}
		tr, err := cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", rev)).
			Then(clientv3.OpPut(k, string(merged))).
			Else(clientv3.OpGet(k)).
			Commit()
		if err != nil {
			return classify("update", err)
		}
		if tr.Succeeded {
			return nil
		}
		cur, rev = nil, 0
		if rr := tr.Responses[0].GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
			cur, rev = rr.Kvs[0].Value, rr.Kvs[0].ModRevision
		}
	}
	return outcome.Classified(outcome.Conflict, "update",
		fmt.Errorf("key %q was changed by other writers during %d merge attempts", k, mergeAttempts))
}

// Delete implements driver.Driver. Deleting a missing record is not an error.
func (d *Driver) Delete(ctx context.Context, table, key string) error {
	_, err := d.cli().Delete(d.rctx(ctx), d.key(table, key))
	return classify("delete", err)
}

// Close implements driver.Driver. Operations after Close fail (class
// Other, the client is closed); closing again returns the first result.
func (d *Driver) Close() error {
	d.closeOnce.Do(func() {
		var errs []error
		for _, c := range d.clients {
			if err := c.Close(); err != nil && !errors.Is(err, context.Canceled) {
				errs = append(errs, err)
			}
		}
		d.closeErr = errors.Join(errs...)
	})
	return d.closeErr
}

// Leader is an optional ability (discovered by type assertion to
// interface{ Leader(context.Context) (string, error) }): it returns the
// endpoint, as given in etcd.endpoints, of the member that is currently the
// raft leader. It asks every endpoint for its status concurrently and
// returns the one that reports itself as leader; an error means no
// answering member is the leader (none answers, no leader is elected, or
// the leader is not among the endpoints). Give ctx a deadline.
func (d *Driver) Leader(ctx context.Context) (string, error) {
	type answer struct {
		ep       string
		self, ld uint64
		err      error
	}
	answers := make([]answer, len(d.endpoints))
	var wg sync.WaitGroup
	cli := d.cli()
	for i, ep := range d.endpoints {
		wg.Go(func() {
			resp, err := cli.Status(ctx, ep)
			if err != nil {
				answers[i] = answer{ep: ep, err: err}
				return
			}
			answers[i] = answer{ep: ep, self: resp.Header.MemberId, ld: resp.Leader}
		})
	}
	wg.Wait()
	var seen []string
	for _, a := range answers {
		if a.err == nil && a.ld != 0 && a.self == a.ld {
			return a.ep, nil
		}
		if a.err != nil {
			seen = append(seen, fmt.Sprintf("%s: %v", a.ep, a.err))
		} else {
			seen = append(seen, fmt.Sprintf("%s: member %x sees leader %x", a.ep, a.self, a.ld))
		}
	}
	if err := ctx.Err(); err != nil {
		return "", classify("leader", fmt.Errorf("finding the leader among %s: %w", strings.Join(d.endpoints, ","), err))
	}
	return "", outcome.Classified(outcome.Unavailable, "leader", fmt.Errorf("no endpoint is the leader (%s)", strings.Join(seen, "; ")))
}
