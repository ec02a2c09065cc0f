// Package redis is faultbench's driver for Redis, standalone or Redis
// Cluster. Standalone mode speaks RESP2 itself over one connection per
// concurrent worker (resp.go: one write and one read per operation, no
// per-checkout health check), so that the client costs the server's
// machine little more than redis-benchmark does; cluster mode is built on
// go-redis (slot map, MOVED/ASK). A record is a hash (field → value) at its key;
// every table has a sorted-set index _index:{table} holding the record keys
// (all with score 0, so the set is ordered by key) that Scan reads with
// ZRANGEBYLEX. With redis.wait > 0 every write is followed by WAIT on the
// same connection of the key's master and is acknowledged only when enough
// replicas have it.
//
// See docs/targets-redis.md for the properties, the error classes and the
// limits of what Redis promises.
package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
)

// Driver is a Redis client shared by all workers of a run. Build it with New.
type Driver struct {
	conns   *respPool               // standalone mode (resp.go); nil in cluster mode
	c       goredis.UniversalClient // cluster mode; nil in standalone mode
	cluster *goredis.ClusterClient  // nil in standalone mode
	wait    int
	waitTO  time.Duration
	reload  *reloader // nil in standalone mode
	index   atomic.Pointer[indexName]
	addr    string // the server used in standalone mode, or the seed list
	// settings are the effective client settings (ClientSettings)
	settings map[string]string
}

var _ driver.Driver = (*Driver)(nil)

// indexName caches the index key of the last table used, so that the
// per-operation path does not build the string every time.
type indexName struct{ table, key string }

// New builds the driver from properties (a driver.Factory). It connects and
// checks that the server matches redis.mode before returning.
func New(ctx context.Context, p *properties.Properties) (driver.Driver, error) {
	cfg, err := parseConfig(p)
	if err != nil {
		return nil, err
	}
	ctx, cancel := boundCtx(ctx, 10*time.Second)
	defer cancel()
	d := &Driver{wait: cfg.wait, waitTO: cfg.waitTimeout, settings: cfg.clientSettings()}
	if cfg.mode == ModeCluster {
		d.cluster = goredis.NewClusterClient(clusterOptions(cfg))
		d.c = d.cluster
		d.reload = &reloader{cl: d.cluster}
		d.addr = strings.Join(cfg.addrs, ",")
		if err := d.checkCluster(ctx, cfg); err != nil {
			_ = d.Close()
			return nil, err
		}
		return d, nil
	}
	addr := cfg.addrs[0]
	if len(cfg.addrs) > 1 {
		if addr, err = findPrimary(ctx, cfg); err != nil {
			return nil, err
		}
	}
	d.addr = addr
	d.conns = newRespPool(poolConfig{
		addr: addr, password: cfg.password, size: cfg.poolSize, dialTimeout: cfg.dialTimeout,
		readTimeout: cfg.readTimeout, writeTimeout: cfg.writeTimeout, maxRetries: cfg.maxRetries,
	})
	if err := d.checkStandalone(ctx, cfg); err != nil {
		d.conns.close()
		return nil, err
	}
	return d, nil
}

// boundCtx gives ctx a deadline of d when it has none.
func boundCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// timeoutOpt maps "none" (0) to go-redis's -1 (no socket deadline beyond
// the context's, with ContextTimeoutEnabled).
func timeoutOpt(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

func retriesOpt(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

func clientOptions(cfg config, addr string) *goredis.Options {
	return &goredis.Options{
		Addr:                  addr,
		Password:              cfg.password,
		DialTimeout:           cfg.dialTimeout,
		DialerRetries:         1,
		ReadTimeout:           timeoutOpt(cfg.readTimeout),
		WriteTimeout:          timeoutOpt(cfg.writeTimeout),
		ContextTimeoutEnabled: true,
		MaxRetries:            retriesOpt(cfg.maxRetries),
		PoolSize:              cfg.poolSize,
		DisableIdentity:       true,
		// RESP2, as redis-benchmark speaks: with RESP3 go-redis checks every
		// connection for push notifications before each command, an extra
		// syscall per operation that a benchmark client must not pay.
		Protocol: 2,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
}

func clusterOptions(cfg config) *goredis.ClusterOptions {
	redirects := cfg.maxRedirects
	if redirects == 0 {
		redirects = -1 // go-redis: -1 is none, 0 is its default
	}
	return &goredis.ClusterOptions{
		Addrs:                 cfg.addrs,
		Password:              cfg.password,
		MaxRedirects:          redirects,
		MaxRetries:            retriesOpt(cfg.maxRetries),
		DialTimeout:           cfg.dialTimeout,
		DialerRetries:         1,
		ReadTimeout:           timeoutOpt(cfg.readTimeout),
		WriteTimeout:          timeoutOpt(cfg.writeTimeout),
		ContextTimeoutEnabled: true,
		PoolSize:              cfg.poolSize,
		DisableIdentity:       true,
		// RESP2, as redis-benchmark speaks: with RESP3 go-redis checks every
		// connection for push notifications before each command, an extra
		// syscall per operation that a benchmark client must not pay.
		Protocol: 2,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
}

// hint is appended to connection errors at start-up.
const hint = "is the server running? start one with `faultbench cluster up redis-cluster` (or `redis`), or set -p " + PropAddr

// findPrimary returns the address among cfg.addrs whose ROLE is master.
func findPrimary(ctx context.Context, cfg config) (string, error) {
	var primaries, problems []string
	for _, a := range cfg.addrs {
		o := clientOptions(cfg, a)
		o.PoolSize = 1
		cl := goredis.NewClient(o)
		v, err := cl.Do(ctx, "role").Slice()
		_ = cl.Close()
		if err != nil {
			problems = append(problems, a+": "+err.Error())
			continue
		}
		if len(v) > 0 && v[0] == "master" {
			primaries = append(primaries, a)
		}
	}
	switch len(primaries) {
	case 1:
		return primaries[0], nil
	case 0:
		msg := "no address is a primary"
		if len(problems) > 0 {
			msg += " (" + strings.Join(problems, "; ") + "; " + hint + ")"
		}
		return "", fmt.Errorf("%s %s: %s", PropAddr, strings.Join(cfg.addrs, ","), msg)
	}
	return "", fmt.Errorf("%s %s: several primaries (%s); in standalone mode give the primary's address, or set %s=%s for a Redis Cluster",
		PropAddr, strings.Join(cfg.addrs, ","), strings.Join(primaries, ", "), PropMode, ModeCluster)
}

func (d *Driver) checkStandalone(ctx context.Context, cfg config) error {
	r := request{kind: reqInfo} // the default sections include cluster and replication
	var out reply
	err := d.conns.exec(ctx, &r, &out)
	info := out.text
	if err != nil {
		return fmt.Errorf("connecting to redis at %s: %w (%s)", d.addr, err, hint)
	}
	if infoField(info, "cluster_enabled") == "1" {
		return fmt.Errorf("%s is a Redis Cluster node: set -p %s=%s", d.addr, PropMode, ModeCluster)
	}
	if role := infoField(info, "role"); role != "master" {
		return fmt.Errorf("%s is a %s, not a primary: point %s at the primary", d.addr, role, PropAddr)
	}
	if cfg.wait > 0 {
		n, _ := strconv.Atoi(infoField(info, "connected_slaves"))
		if n < cfg.wait {
			return fmt.Errorf("%s=%d but %s has %d connected replica(s): every write would fail", PropWait, cfg.wait, d.addr, n)
		}
	}
	return nil
}

func (d *Driver) checkCluster(ctx context.Context, cfg config) error {
	info, err := d.cluster.ClusterInfo(ctx).Result()
	if err != nil {
		if goredis.HasErrorPrefix(err, "This instance has cluster support disabled") {
			return fmt.Errorf("%s is not a Redis Cluster: set -p %s=%s", d.addr, PropMode, ModeStandalone)
		}
		return fmt.Errorf("connecting to redis cluster at %s: %w (%s)", d.addr, err, hint)
	}
	if st := infoField(info, "cluster_state"); st != "ok" {
		return fmt.Errorf("redis cluster at %s reports cluster_state:%s", d.addr, st)
	}
	if cfg.wait > 0 {
		return d.cluster.ForEachMaster(ctx, func(ctx context.Context, m *goredis.Client) error {
			repl, err := m.Info(ctx, "replication").Result()
			if err != nil {
				return fmt.Errorf("INFO replication on %s: %w", m.Options().Addr, err)
			}
			if n, _ := strconv.Atoi(infoField(repl, "connected_slaves")); n < cfg.wait {
				return fmt.Errorf("%s=%d but master %s has %d connected replica(s): every write would fail", PropWait, cfg.wait, m.Options().Addr, n)
			}
			return nil
		})
	}
	return nil
}

// infoField returns field's value in an INFO reply.
func infoField(info, field string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), ":"); ok && k == field {
			return v
		}
	}
	return ""
}

// Close releases the connections.
func (d *Driver) Close() error {
	if d.reload != nil {
		d.reload.close()
	}
	if d.conns != nil {
		d.conns.close()
		return nil
	}
	return d.c.Close()
}

// IndexKey returns the key of table's sorted-set index: _index:{table}. The
// braces make it a Redis Cluster hash tag, so the whole index lives in one
// slot.
func IndexKey(table string) string { return "_index:{" + table + "}" }

func (d *Driver) indexKey(table string) string {
	if n := d.index.Load(); n != nil && n.table == table {
		return n.key
	}
	n := &indexName{table: table, key: IndexKey(table)}
	d.index.Store(n)
	return n.key
}

// hset builds HSET key f1 v1 ... as one command (one argument slice, no
// copies of the values).
func hset(ctx context.Context, key string, values map[string][]byte) *goredis.IntCmd {
	args := make([]any, 0, 2+2*len(values))
	args = append(args, "hset", key)
	for f, v := range values {
		args = append(args, f, v)
	}
	return goredis.NewIntCmd(ctx, args...)
}

// Read reads the record at key: HGETALL, or HMGET when fields are given.
// A missing key (no field found) returns an error wrapping outcome.ErrNotFound.
func (d *Driver) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	if d.conns != nil {
		return d.readStandalone(ctx, key, fields)
	}
	if len(fields) == 0 {
		m, err := d.c.HGetAll(ctx, key).Result()
		if err != nil {
			return nil, d.fail("read", err)
		}
		if len(m) == 0 {
			return nil, notFound(key)
		}
		return record(m), nil
	}
	vals, err := d.c.HMGet(ctx, key, fields...).Result()
	if err != nil {
		return nil, d.fail("read", err)
	}
	r := recordOf(fields, vals)
	if r == nil {
		return nil, notFound(key)
	}
	return r, nil
}

// ReadStrong is the lost-write check's read (check.StrongReader): the
// driver never reads from replicas (standalone mode talks to the primary
// it found, cluster mode routes every command to the key's master), so it
// is Read, stated here so that the check knows its reads are the primary's.
func (d *Driver) ReadStrong(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	return d.Read(ctx, table, key, fields)
}

// strongReader is the check's optional ability (check.StrongReader).
var _ interface {
	ReadStrong(ctx context.Context, table, key string, fields []string) (map[string][]byte, error)
} = (*Driver)(nil)

func notFound(key string) error {
	return outcome.Classified(outcome.NotFound, "read", fmt.Errorf("key %s: %w", key, outcome.ErrNotFound))
}

// record copies a go-redis hash into a record, all values in one buffer.
func record(m map[string]string) map[string][]byte {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	buf := make([]byte, 0, n)
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		s := len(buf)
		buf = append(buf, v...)
		out[k] = buf[s:len(buf):len(buf)]
	}
	return out
}

// recordOf builds a record from HMGET's reply; nil when no field exists.
func recordOf(fields []string, vals []any) map[string][]byte {
	n, found := 0, 0
	for _, v := range vals {
		if s, ok := v.(string); ok {
			n += len(s)
			found++
		}
	}
	if found == 0 {
		return nil
	}
	buf := make([]byte, 0, n)
	out := make(map[string][]byte, found)
	for i, v := range vals {
		s, ok := v.(string)
		if !ok || i >= len(fields) {
			continue
		}
		st := len(buf)
		buf = append(buf, s...)
		out[fields[i]] = buf[st:len(buf):len(buf)]
	}
	return out
}

// Scan reads up to count records in key order starting at startKey: the
// keys come from the table's index (ZRANGEBYLEX [startKey +), the records
// from one pipeline of HGETALL (or HMGET). Keys deleted between the two
// steps are skipped.
func (d *Driver) Scan(ctx context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	if count <= 0 {
		return nil, nil
	}
	if d.conns != nil {
		return d.scanStandalone(ctx, table, startKey, count, fields)
	}
	keys, err := d.c.ZRangeByLex(ctx, d.indexKey(table), &goredis.ZRangeBy{Min: "[" + startKey, Max: "+", Count: int64(count)}).Result()
	if err != nil {
		return nil, d.fail("scan", err)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	pipe := d.c.Pipeline()
	var all []*goredis.MapStringStringCmd
	var some []*goredis.SliceCmd
	if len(fields) == 0 {
		all = make([]*goredis.MapStringStringCmd, len(keys))
		for i, k := range keys {
			all[i] = pipe.HGetAll(ctx, k)
		}
	} else {
		some = make([]*goredis.SliceCmd, len(keys))
		for i, k := range keys {
			some[i] = pipe.HMGet(ctx, k, fields...)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, d.fail("scan", err)
	}
	out := make([]map[string][]byte, 0, len(keys))
	for _, c := range all {
		if m := c.Val(); len(m) > 0 {
			out = append(out, record(m))
		}
	}
	for _, c := range some {
		if r := recordOf(fields, c.Val()); r != nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// Update sets the given fields of the record at key (HSET; other fields
// keep their values).
func (d *Driver) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	if len(values) == 0 {
		return nil
	}
	if d.conns != nil {
		r := request{kind: reqUpdate, key: key, values: values}
		return d.writeStandalone(ctx, "update", table, &r)
	}
	cmd := hset(ctx, key, values)
	if d.wait > 0 {
		return d.writeWait(ctx, "update", key, cmd, nil)
	}
	if err := d.c.Process(ctx, cmd); err != nil {
		return d.fail("update", err)
	}
	return nil
}

// Insert writes the record at key (HSET) and adds key to the table's index
// (ZADD _index:{table} 0 key).
func (d *Driver) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	if len(values) == 0 {
		return outcome.Classified(outcome.Other, "insert", errors.New("a record needs at least one field"))
	}
	if d.conns != nil {
		r := request{kind: reqInsert, key: key, values: values}
		return d.writeStandalone(ctx, "insert", table, &r)
	}
	cmd := hset(ctx, key, values)
	idx := goredis.NewIntCmd(ctx, "zadd", d.indexKey(table), 0, key)
	if d.wait > 0 {
		return d.writeWait(ctx, "insert", key, cmd, idx)
	}
	pipe := d.c.Pipeline()
	_ = pipe.Process(ctx, cmd)
	_ = pipe.Process(ctx, idx)
	if _, err := pipe.Exec(ctx); err != nil {
		return d.fail("insert", err)
	}
	return nil
}

// Delete removes the record at key (DEL) and its index entry (ZREM).
func (d *Driver) Delete(ctx context.Context, table, key string) error {
	if d.conns != nil {
		r := request{kind: reqDelete, key: key}
		return d.writeStandalone(ctx, "delete", table, &r)
	}
	cmd := goredis.NewIntCmd(ctx, "del", key)
	idx := goredis.NewIntCmd(ctx, "zrem", d.indexKey(table), key)
	if d.wait > 0 {
		return d.writeWait(ctx, "delete", key, cmd, idx)
	}
	pipe := d.c.Pipeline()
	_ = pipe.Process(ctx, cmd)
	_ = pipe.Process(ctx, idx)
	if _, err := pipe.Exec(ctx); err != nil {
		return d.fail("delete", err)
	}
	return nil
}

// writeWait runs the write cmd followed by WAIT on one connection to the
// master of key (in cluster mode the node client from MasterForKey, so a
// MOVED reply is not followed: it fails the operation, class Unavailable,
// and the slot map is reloaded for the next one), then the index command idx (if any). In standalone mode
// idx shares the pipeline (and so the WAIT); in cluster mode the index lives
// on another node and is written after the acknowledged record, without
// WAIT.
func (d *Driver) writeWait(ctx context.Context, op, key string, cmd, idx *goredis.IntCmd) error {
	var pipe goredis.Pipeliner
	if d.cluster == nil {
		pipe = d.c.Pipeline()
	} else {
		node, err := d.cluster.MasterForKey(ctx, key)
		if err != nil {
			return d.fail(op, err)
		}
		pipe = node.Pipeline()
	}
	_ = pipe.Process(ctx, cmd)
	if idx != nil && d.cluster == nil {
		_ = pipe.Process(ctx, idx)
	}
	w := goredis.NewIntCmd(ctx, "wait", d.wait, d.waitTO.Milliseconds())
	_ = pipe.Process(ctx, w)
	if _, err := pipe.Exec(ctx); err != nil {
		return d.fail(op, err)
	}
	if got := w.Val(); got < int64(d.wait) {
		return outcome.Classified(outcome.Timeout, op, &WaitError{Wanted: d.wait, Acked: int(got), Timeout: d.waitTO})
	}
	if idx != nil && d.cluster != nil {
		if err := d.c.Process(ctx, idx); err != nil {
			return d.fail(op, err)
		}
	}
	return nil
}

// fail classifies err. In cluster mode an error that may come from a
// stale slot map (a dead or unreachable master) also starts a slot map
// reload: go-redis reloads on MOVED by itself, but not when the master it
// believes in refuses connections or stops answering.
func (d *Driver) fail(op string, err error) error {
	class := Classify(err)
	if d.reload != nil && (class == outcome.Unavailable || class == outcome.Timeout) {
		d.reload.trigger()
	}
	return outcome.Classified(class, op, err)
}

// reloader refreshes a cluster client's slot map in the background, at
// most one reload at a time and one start per reloadCooldown. The reload
// goes through ForEachMaster, which reloads the map with the given context
// (bounded by reloadTimeout) before it calls the no-op function; go-redis's
// own lazy reload has no deadline but the sockets', which are off by default.
type reloader struct {
	cl   *goredis.ClusterClient
	busy atomic.Bool
	last atomic.Int64 // start of the last reload, unix ns

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

const (
	reloadCooldown = 100 * time.Millisecond
	reloadTimeout  = time.Second
)

func (r *reloader) trigger() {
	now := time.Now().UnixNano()
	if now-r.last.Load() < int64(reloadCooldown) || !r.busy.CompareAndSwap(false, true) {
		return
	}
	r.last.Store(now)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.busy.Store(false)
		return
	}
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer r.busy.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), reloadTimeout)
		defer cancel()
		_ = r.cl.ForEachMaster(ctx, func(context.Context, *goredis.Client) error { return nil })
	}()
}

// close waits for a running reload to end.
func (r *reloader) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.wg.Wait()
}

// WaitError reports a write that fewer replicas than redis.wait
// acknowledged within redis.waittimeout. The write was applied on the
// master and may or may not survive a failover: its outcome is unknown,
// which is why it is of class Timeout.
type WaitError struct {
	Wanted, Acked int
	Timeout       time.Duration
}

func (e *WaitError) Error() string {
	return "WAIT: " + strconv.Itoa(e.Acked) + " of " + strconv.Itoa(e.Wanted) + " replicas acknowledged the write within " + e.Timeout.String()
}

// Classify sorts an error from go-redis (or the driver) into a class:
//
//   - Timeout: the context deadline or a socket timeout passed, no pooled
//     connection became free in time, or WAIT got too few replicas
//     (*WaitError): the write may or may not have happened.
//   - Unavailable: nothing could take the request: connection refused,
//     reset or closed (EOF), and the server replies CLUSTERDOWN, LOADING,
//     TRYAGAIN, MASTERDOWN, NOREPLICAS (min-replicas-to-write unmet), BUSY,
//     and MOVED/ASK left after the redirects were used up (a failover in
//     progress).
//   - Rejected: the server refused the request itself: READONLY (a write
//     to a replica), OOM, max clients reached, NOAUTH/WRONGPASS, NOPERM.
//   - Other: any other server error, and anything unrecognised.
func Classify(err error) outcome.Class {
	if err == nil {
		return outcome.OK
	}
	var we *WaitError
	var se ServerError
	switch {
	case errors.As(err, &se):
		return se.class()
	case errors.As(err, &we),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, goredis.ErrPoolTimeout):
		return outcome.Timeout
	}
	var rerr goredis.Error
	if errors.As(err, &rerr) {
		return serverClass(err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return outcome.Unavailable
	}
	return outcome.GenericClass(err)
}

// serverClass classifies an error reply of the server.
func serverClass(err error) outcome.Class {
	switch {
	case goredis.IsReadOnlyError(err), goredis.IsOOMError(err), goredis.IsMaxClientsError(err),
		goredis.IsAuthError(err), goredis.IsPermissionError(err):
		return outcome.Rejected
	case goredis.IsClusterDownError(err), goredis.IsLoadingError(err), goredis.IsTryAgainError(err),
		goredis.IsMasterDownError(err), goredis.IsNoReplicasError(err), goredis.HasErrorPrefix(err, "BUSY "):
		return outcome.Unavailable
	}
	if _, ok := goredis.IsMovedError(err); ok {
		return outcome.Unavailable
	}
	if _, ok := goredis.IsAskError(err); ok {
		return outcome.Unavailable
	}
	return outcome.Other
}

// LogWriter adapts an io.Writer to go-redis's logger interface, for
// goredis.SetLogger (process-wide, so main decides): go-redis otherwise
// prints every failed dial to stderr, which during a crash fault means
// thousands of lines on the terminal.
type LogWriter struct{ W io.Writer }

// Printf implements go-redis's internal.Logging.
func (l LogWriter) Printf(_ context.Context, format string, v ...any) {
	s := fmt.Sprintf(format, v...)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	_, _ = io.WriteString(l.W, "go-redis: "+s)
}
