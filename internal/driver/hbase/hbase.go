// Package hbase is faultbench's HBase client: it drives HBase through
// HBase's Thrift2 gateway (THBaseService, the bindings in
// internal/hbasethrift), which runs the HBase Java client with its retry
// count, pause and operation timeout (the launcher's options
// hbase.client-retries, hbase.client-pause, hbase.client-operation-timeout
// and hbase.rpc-timeout; docs/targets.md). The gateway is a process beside
// the client, never on a database node.
//
// Records follow YCSB's HBase binding: one row per record keyed by the
// record's key, one column family (property hbase.family), one qualifier
// per field. A read or scan of all fields reads the whole family. HBase
// reads go to the region's primary, so every read is a strong read.
package hbase

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/hbasethrift"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
)

// Properties the driver reads. Every key starting with "hbase." is
// declared; an hbase.* key that neither this driver nor the launcher (whose
// option keys are declared by whoever set them) knows is an error.
const (
	// PropThrift is the Thrift2 gateway's host:port (required; set by
	// faultbench for a cluster it started).
	PropThrift = "hbase.thrift"
	// PropFamily is the column family (default family; the launcher's
	// option of the same name when faultbench started the cluster).
	PropFamily = "hbase.family"
	// PropTimeout bounds one request to the gateway, its HBase client's
	// retries included (default 60s, above the gateway's default operation
	// timeout of 30 s, so that the client's own answer arrives).
	PropTimeout = "hbase.timeout"
	// PropConnections is the number of connections to the gateway (default
	// 64); an operation waits for a free one.
	PropConnections = "hbase.connections"
	// PropDurability is the write-ahead-log durability of every write:
	// default (the table's: SYNC_WAL, hflushed to the DataNodes before
	// the write is acknowledged), sync_wal, fsync_wal, async_wal, or
	// skip_wal (no WAL at all: a region server's crash loses its
	// unflushed writes; the lost-write check's negative control).
	PropDurability = "hbase.durability"
)

// PropertyNames returns the driver's property keys, sorted.
func PropertyNames() []string {
	k := []string{PropThrift, PropFamily, PropTimeout, PropConnections, PropDurability}
	sort.Strings(k)
	return k
}

var durabilities = map[string]hbasethrift.TDurability{
	"default":   hbasethrift.TDurability_USE_DEFAULT,
	"skip_wal":  hbasethrift.TDurability_SKIP_WAL,
	"async_wal": hbasethrift.TDurability_ASYNC_WAL,
	"sync_wal":  hbasethrift.TDurability_SYNC_WAL,
	"fsync_wal": hbasethrift.TDurability_FSYNC_WAL,
}

// config is the validated driver configuration.
type config struct {
	addr        string
	family      string
	timeout     time.Duration
	conns       int
	durability  hbasethrift.TDurability
	durabilityS string
	gateway     map[string]string // GatewayClientKeys that are set
}

func parseConfig(p *properties.Properties) (config, error) {
	p.DeclarePrefix("hbase.")
	known := map[string]bool{}
	for _, k := range append(PropertyNames(), GatewayClientKeys...) {
		known[k] = true
	}
	for _, k := range p.Keys() {
		if strings.HasPrefix(k, "hbase.") && !known[k] && !p.DeclaredExactly(k) {
			return config{}, p.Error(k, "unknown hbase property (the hbase driver knows %s; launcher options go to `cluster up -o` or a scenario's target.options)",
				strings.Join(PropertyNames(), ", "))
		}
	}
	c := config{addr: strings.TrimSpace(p.String(PropThrift, "")), family: strings.TrimSpace(p.String(PropFamily, "family"))}
	if c.addr == "" {
		return config{}, fmt.Errorf("property %s is not set: start a cluster with `faultbench cluster up hbase`, or set -p %s=host:port (HBase's Thrift2 gateway)", PropThrift, PropThrift)
	}
	if c.family == "" {
		return config{}, p.Error(PropFamily, "empty column family")
	}
	var err error
	if c.timeout, err = p.Duration(PropTimeout, 60*time.Second, time.Millisecond); err != nil {
		return config{}, err
	}
	if c.timeout <= 0 {
		return config{}, p.Error(PropTimeout, "must be positive")
	}
	n, err := p.Int(PropConnections, 64)
	if err != nil {
		return config{}, err
	}
	if n < 1 || n > 4096 {
		return config{}, p.Error(PropConnections, "want 1 to 4096 connections, got %d", n)
	}
	c.conns = int(n)
	c.durabilityS = strings.ToLower(strings.TrimSpace(p.String(PropDurability, "default")))
	d, ok := durabilities[c.durabilityS]
	if !ok {
		return config{}, p.Error(PropDurability, "want default, sync_wal, fsync_wal, async_wal or skip_wal, got %q", c.durabilityS)
	}
	c.durability = d
	c.gateway = map[string]string{}
	for _, k := range GatewayClientKeys {
		if p.Has(k) {
			c.gateway[k] = p.String(k, "")
		}
	}
	return c, nil
}

// conn is one connection to the gateway (a thrift client is not safe for
// concurrent use: each operation holds one).
type conn struct {
	trans  thrift.TTransport
	client *hbasethrift.THBaseServiceClient
}

// Driver is an HBase client over the Thrift2 gateway, safe for concurrent
// use: a pool of connections, each used by one operation at a time.
type Driver struct {
	cfg  config
	pool chan *conn // idle connections; nil entries are slots to dial
}

// New builds the driver and checks that the gateway answers.
func New(ctx context.Context, p *properties.Properties) (driver.Driver, error) {
	cfg, err := parseConfig(p)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, pool: make(chan *conn, cfg.conns)}
	for range cfg.conns {
		d.pool <- nil
	}
	c, err := d.get(ctx)
	if err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("hbase: %w", err)
	}
	d.put(c, nil)
	return d, nil
}

// get takes a connection from the pool, dialling one for an empty slot.
func (d *Driver) get(ctx context.Context) (*conn, error) {
	var c *conn
	select {
	case c = <-d.pool:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if c != nil {
		return c, nil
	}
	conf := &thrift.TConfiguration{ConnectTimeout: 5 * time.Second, SocketTimeout: d.cfg.timeout}
	trans := thrift.NewTBufferedTransport(thrift.NewTSocketConf(d.cfg.addr, conf), 32<<10)
	if err := trans.Open(); err != nil {
		d.pool <- nil
		return nil, fmt.Errorf("connecting to the thrift gateway %s: %w", d.cfg.addr, err)
	}
	proto := thrift.NewTBinaryProtocolConf(trans, conf)
	return &conn{trans: trans, client: hbasethrift.NewTHBaseServiceClient(thrift.NewTStandardClient(proto, proto))}, nil
}

// put returns c to the pool; after a transport error (the stream may be
// out of step) it is closed and its slot dialled anew next time.
func (d *Driver) put(c *conn, err error) {
	var te thrift.TTransportException
	var pe thrift.TProtocolException
	var ae thrift.TApplicationException
	if err != nil && (errors.As(err, &te) || errors.As(err, &pe) || errors.As(err, &ae) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		_ = c.trans.Close()
		d.pool <- nil
		return
	}
	d.pool <- c
}

// do runs one operation on a pooled connection and classifies its error.
func (d *Driver) do(ctx context.Context, op string, f func(ctx context.Context, c *hbasethrift.THBaseServiceClient) error) error {
	c, err := d.get(ctx)
	if err != nil {
		return classify(op, err)
	}
	err = f(ctx, c.client)
	d.put(c, err)
	return classify(op, err)
}

// columns returns the columns to read: the family's fields, or the whole
// family when fields is nil.
func (d *Driver) columns(fields []string) []*hbasethrift.TColumn {
	fam := []byte(d.cfg.family)
	if len(fields) == 0 {
		return []*hbasethrift.TColumn{{Family: fam}}
	}
	out := make([]*hbasethrift.TColumn, len(fields))
	for i, f := range fields {
		out[i] = &hbasethrift.TColumn{Family: fam, Qualifier: []byte(f)}
	}
	return out
}

// record turns a result into field → value (the family's qualifiers).
func (d *Driver) record(r *hbasethrift.TResult_) map[string][]byte {
	out := make(map[string][]byte, len(r.ColumnValues))
	for _, cv := range r.ColumnValues {
		if string(cv.Family) == d.cfg.family {
			out[string(cv.Qualifier)] = cv.Value
		}
	}
	return out
}

// Read implements driver.Driver: a Get of the row (from the region's
// primary: HBase's default STRONG consistency).
func (d *Driver) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	var rec map[string][]byte
	err := d.do(ctx, "read", func(ctx context.Context, c *hbasethrift.THBaseServiceClient) error {
		r, err := c.Get(ctx, []byte(table), &hbasethrift.TGet{Row: []byte(key), Columns: d.columns(fields)})
		if err != nil {
			return err
		}
		if r == nil || len(r.ColumnValues) == 0 {
			return fmt.Errorf("key %q: %w", key, outcome.ErrNotFound)
		}
		rec = d.record(r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// ReadStrong is the lost-write check's read (check.StrongReader): every
// HBase read is served by the region's one primary, so it is Read with
// STRONG consistency asked for explicitly.
func (d *Driver) ReadStrong(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	var rec map[string][]byte
	strong := hbasethrift.TConsistency_STRONG
	err := d.do(ctx, "read", func(ctx context.Context, c *hbasethrift.THBaseServiceClient) error {
		r, err := c.Get(ctx, []byte(table), &hbasethrift.TGet{Row: []byte(key), Columns: d.columns(fields), Consistency: &strong})
		if err != nil {
			return err
		}
		if r == nil || len(r.ColumnValues) == 0 {
			return fmt.Errorf("key %q: %w", key, outcome.ErrNotFound)
		}
		rec = d.record(r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// Scan implements driver.Driver as YCSB's binding does: up to count rows
// from startKey on, in key order.
func (d *Driver) Scan(ctx context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	if count <= 0 {
		return nil, nil
	}
	var out []map[string][]byte
	err := d.do(ctx, "scan", func(ctx context.Context, c *hbasethrift.THBaseServiceClient) error {
		caching := int32(min(count, 1000))
		// NewTScan's MaxVersions is 1: a TScan literal would ask for 0
		// versions and read nothing
		scan := hbasethrift.NewTScan()
		scan.StartRow, scan.Columns, scan.Caching = []byte(startKey), d.columns(fields), &caching
		rs, err := c.GetScannerResults(ctx, []byte(table), scan, int32(count))
		if err != nil {
			return err
		}
		out = make([]map[string][]byte, 0, len(rs))
		for _, r := range rs {
			out = append(out, d.record(r))
		}
		return nil
	})
	return out, err
}

// write puts values into the row at key.
func (d *Driver) write(ctx context.Context, op, table, key string, values map[string][]byte) error {
	fam := []byte(d.cfg.family)
	names := make([]string, 0, len(values))
	for f := range values {
		names = append(names, f)
	}
	sort.Strings(names)
	cvs := make([]*hbasethrift.TColumnValue, len(names))
	for i, f := range names {
		cvs[i] = &hbasethrift.TColumnValue{Family: fam, Qualifier: []byte(f), Value: values[f]}
	}
	put := &hbasethrift.TPut{Row: []byte(key), ColumnValues: cvs}
	if d.cfg.durability != hbasethrift.TDurability_USE_DEFAULT {
		dur := d.cfg.durability
		put.Durability = &dur
	}
	return d.do(ctx, op, func(ctx context.Context, c *hbasethrift.THBaseServiceClient) error {
		return c.Put(ctx, []byte(table), put)
	})
}

// Update implements driver.Driver: a Put of the given fields.
func (d *Driver) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	return d.write(ctx, "update", table, key, values)
}

// Insert implements driver.Driver: a Put of every field.
func (d *Driver) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	return d.write(ctx, "insert", table, key, values)
}

// Delete implements driver.Driver: a Delete of the row.
func (d *Driver) Delete(ctx context.Context, table, key string) error {
	return d.do(ctx, "delete", func(ctx context.Context, c *hbasethrift.THBaseServiceClient) error {
		del := hbasethrift.NewTDelete() // its default delete type, as HBase's Delete of a row
		del.Row = []byte(key)
		return c.DeleteSingle(ctx, []byte(table), del)
	})
}

// Close closes every idle connection.
func (d *Driver) Close() error {
	for {
		select {
		case c := <-d.pool:
			if c != nil {
				_ = c.trans.Close()
			}
		default:
			return nil
		}
	}
}

// GatewayClientKeys are the launcher options that configure the gateway's
// HBase client (retries, pause, operation and RPC timeout). faultbench sets
// them as properties when it connects the driver to a cluster it started,
// so that ClientSettings reports them; the driver does not change them.
var GatewayClientKeys = []string{"hbase.client-retries", "hbase.client-pause", "hbase.client-operation-timeout", "hbase.rpc-timeout"}

// ClientSettings is the optional ability that reports the client settings
// which decide failover figures, for env.json's client_settings: the
// driver's own and the gateway's HBase client settings.
func (d *Driver) ClientSettings() map[string]string {
	out := map[string]string{PropTimeout: d.cfg.timeout.String(), PropConnections: strconv.Itoa(d.cfg.conns),
		PropDurability: d.cfg.durabilityS}
	for k, v := range d.cfg.gateway {
		out[k] = v
	}
	return out
}
