// Package cassandra is faultbench's driver for Apache Cassandra, built on
// gocql, in the shape of YCSB's cassandra binding: keyspace ycsb, table
// usertable with the record key in y_id (text, the partition key) and one
// column per field (field0, field1, ... as blobs, plus the lost-write
// check's tag column). Reads select by key, scans read from the token of
// the start key on (WHERE token(y_id) >= token(?) LIMIT n, as YCSB does, so
// a scan's records are in token order, not key order), updates and inserts
// write the given columns, deletes remove the row. Reads and scans run at
// cassandra.readconsistency, writes at cassandra.writeconsistency.
//
// Errors are classified: Unavailable (the coordinator knows too few
// replicas are alive) is class unavailable and the write was not applied;
// ReadTimeout and WriteTimeout (the coordinator heard from too few
// replicas in time) are class timeout. A write that timed out may still
// be applied, on some replicas or, through hints and repair, on all: its
// outcome is unknown, and the error says so (*WriteTimeoutError). See
// docs/targets-cassandra.md.
package cassandra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/lwtag"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
)

// keyColumn is the primary key column of YCSB's usertable.
const keyColumn = "y_id"

// Driver is a Cassandra client shared by all workers of a run. Build it
// with New.
type Driver struct {
	s       *gocql.Session
	ks      string
	readCL  gocql.Consistency
	writeCL gocql.Consistency
	columns map[string]bool // field columns of the configured table
	all     []string        // the configured table's field columns, in order

	mu      sync.RWMutex
	queries map[string]string // statement cache: op + table + fields -> CQL

	scanBufs sync.Pool // *scanBuf

	settings map[string]string // the effective client settings (ClientSettings)
}

var _ driver.Driver = (*Driver)(nil)

// New builds the driver from properties (a driver.Factory): it connects,
// checks that the keyspace exists, and creates the table (or its missing
// columns) unless cassandra.createtable=false.
func New(ctx context.Context, p *properties.Properties) (driver.Driver, error) {
	cfg, err := parseConfig(p, lwtag.Field)
	if err != nil {
		return nil, err
	}
	cl := gocql.NewCluster(cfg.hosts...)
	cl.Port = cfg.port
	cl.ProtoVersion = 4
	cl.Timeout = cfg.timeout
	cl.ConnectTimeout = cfg.connectTimeout
	cl.NumConns = cfg.numConns
	cl.Consistency = cfg.readCL
	// no retries inside gocql: the runner's next operation is the retry,
	// so every failure stays visible in the measurement
	cl.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 0}
	// a node that comes back is used again within a second, not after
	// gocql's default of a minute
	cl.ReconnectInterval = time.Second
	cl.ReconnectionPolicy = &gocql.ConstantReconnectionPolicy{MaxRetries: 3, Interval: 500 * time.Millisecond}
	if cfg.tokenAware {
		cl.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	} else {
		cl.PoolConfig.HostSelectionPolicy = gocql.RoundRobinHostPolicy()
	}
	cl.Logger = log.New(io.Discard, "", 0)
	s, err := cl.CreateSession()
	if err != nil {
		return nil, outcome.Classified(classOf(err), "connect", fmt.Errorf("cassandra: connecting to %s (port %d): %w", strings.Join(cfg.hosts, ","), cfg.port, err))
	}
	d := &Driver{s: s, ks: cfg.keyspace, readCL: cfg.readCL, writeCL: cfg.writeCL,
		columns: map[string]bool{}, queries: map[string]string{}, settings: cfg.clientSettings()}
	if err := d.prepareTable(ctx, p, cfg); err != nil {
		s.Close()
		return nil, err
	}
	return d, nil
}

// prepareTable checks the keyspace and creates the table or its missing
// field columns.
func (d *Driver) prepareTable(ctx context.Context, p *properties.Properties, cfg config) error {
	ctx, cancel := boundCtx(ctx, time.Minute)
	defer cancel()
	km, err := d.s.KeyspaceMetadata(cfg.keyspace)
	if errors.Is(err, gocql.ErrKeyspaceDoesNotExist) {
		return p.Error(PropKeyspace, "keyspace %s does not exist: `faultbench cluster up cassandra` creates it (option %s), or create it with CQL", cfg.keyspace, PropKeyspace)
	}
	if err != nil {
		return fmt.Errorf("cassandra: reading the schema of keyspace %s: %w", cfg.keyspace, err)
	}
	tm := km.Tables[cfg.table]
	var missing []string
	if tm == nil {
		if !cfg.createTable {
			return p.Error(PropCreateTable, "table %s.%s does not exist and %s is false", cfg.keyspace, cfg.table, PropCreateTable)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s.%s (%s text PRIMARY KEY", cfg.keyspace, cfg.table, keyColumn)
		for _, f := range cfg.fields {
			fmt.Fprintf(&b, ", %s blob", f)
		}
		b.WriteString(")")
		if err := d.schemaChange(ctx, b.String()); err != nil {
			return err
		}
	} else {
		if _, ok := tm.Columns[keyColumn]; !ok || len(tm.PartitionKey) != 1 || tm.PartitionKey[0].Name != keyColumn {
			return fmt.Errorf("cassandra: table %s.%s exists but its partition key is not %s (YCSB's shape: %s text PRIMARY KEY, field columns)", cfg.keyspace, cfg.table, keyColumn, keyColumn)
		}
		for _, f := range cfg.fields {
			if _, ok := tm.Columns[strings.ToLower(f)]; !ok {
				missing = append(missing, f)
			}
		}
	}
	if len(missing) > 0 {
		if !cfg.createTable {
			return p.Error(PropCreateTable, "table %s.%s lacks columns %s and %s is false", cfg.keyspace, cfg.table, strings.Join(missing, ", "), PropCreateTable)
		}
		for _, f := range missing {
			if err := d.schemaChange(ctx, fmt.Sprintf("ALTER TABLE %s.%s ADD %s blob", cfg.keyspace, cfg.table, f)); err != nil {
				return err
			}
		}
	}
	for _, f := range cfg.fields {
		d.columns[strings.ToLower(f)] = true
		d.all = append(d.all, f)
	}
	return nil
}

// schemaChange runs a DDL statement at consistency ALL's coordinator and
// waits until every node agrees on the schema.
func (d *Driver) schemaChange(ctx context.Context, stmt string) error {
	if err := d.s.Query(stmt).WithContext(ctx).Exec(); err != nil {
		return fmt.Errorf("cassandra: %s: %w", stmt, err)
	}
	if err := d.s.AwaitSchemaAgreement(ctx); err != nil {
		return fmt.Errorf("cassandra: waiting for schema agreement after %s: %w", stmt, err)
	}
	return nil
}

// boundCtx gives ctx a deadline of d when it has none.
func boundCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// Close implements driver.Driver.
func (d *Driver) Close() error {
	d.s.Close()
	return nil
}

// checkNames rejects field names that are not plain identifiers (they are
// written into CQL text).
func checkNames(op string, names []string) error {
	for _, f := range names {
		if !isIdent(f) || strings.EqualFold(f, keyColumn) {
			return outcome.Classified(outcome.Rejected, op, fmt.Errorf("cassandra: %q is not a usable column name", f))
		}
	}
	return nil
}

// isIdent is identRE's test without the regular expression (it ran for
// every field of every write): a letter, then at most 47 letters, digits
// or underscores.
func isIdent(s string) bool {
	if len(s) == 0 || len(s) > 48 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '_'):
		default:
			return false
		}
	}
	return true
}

// stmt returns the CQL of op on table with cols, built once per shape.
func (d *Driver) stmt(op, table string, cols []string) string {
	// the cache key in a buffer on the stack: looking it up allocates nothing
	var kb [256]byte
	k := append(kb[:0], op...)
	k = append(k, 0)
	k = append(k, table...)
	for _, c := range cols {
		k = append(k, 0)
		k = append(k, c...)
	}
	d.mu.RLock()
	q, ok := d.queries[string(k)]
	d.mu.RUnlock()
	if ok {
		return q
	}
	key := string(k)
	var b strings.Builder
	switch op {
	case "read", "scan":
		b.WriteString("SELECT ")
		b.WriteString(strings.Join(cols, ", "))
		fmt.Fprintf(&b, " FROM %s.%s WHERE ", d.ks, table)
		if op == "read" {
			b.WriteString(keyColumn + " = ?")
		} else {
			fmt.Fprintf(&b, "token(%s) >= token(?) LIMIT ?", keyColumn)
		}
	case "update":
		fmt.Fprintf(&b, "UPDATE %s.%s SET ", d.ks, table)
		for i, c := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c + " = ?")
		}
		b.WriteString(" WHERE " + keyColumn + " = ?")
	case "insert":
		fmt.Fprintf(&b, "INSERT INTO %s.%s (%s", d.ks, table, keyColumn)
		for _, c := range cols {
			b.WriteString(", " + c)
		}
		b.WriteString(") VALUES (?" + strings.Repeat(", ?", len(cols)) + ")")
	case "delete":
		fmt.Fprintf(&b, "DELETE FROM %s.%s WHERE %s = ?", d.ks, table, keyColumn)
	}
	q = b.String()
	d.mu.Lock()
	d.queries[key] = q
	d.mu.Unlock()
	return q
}

// readColumns returns the columns to select for fields (nil: every field
// column of the table).
func (d *Driver) readColumns(op string, fields []string) ([]string, error) {
	if fields == nil {
		return d.all, nil
	}
	if err := checkNames(op, fields); err != nil {
		return nil, err
	}
	return fields, nil
}

// scanRow reads one row of cols into a record; null columns are left out.
func (d *Driver) scanRow(iter *gocql.Iter, cols []string) (map[string][]byte, bool) {
	sb, _ := d.scanBufs.Get().(*scanBuf)
	if sb == nil || len(sb.vals) != len(cols) {
		sb = newScanBuf(len(cols))
	}
	defer d.scanBufs.Put(sb)
	// gocql appends a blob to the slice it scans into: cleared, every
	// record gets memory of its own (else the rows of a scan would share it)
	clear(sb.vals)
	if !iter.Scan(sb.dest...) {
		return nil, false
	}
	rec := make(map[string][]byte, len(cols))
	for i, v := range sb.vals {
		if v != nil {
			rec[cols[i]] = v
		}
	}
	return rec, true
}

// scanBuf is what a row is scanned into, kept for the next row (gocql
// unmarshals each value into a new byte slice, which the record keeps).
type scanBuf struct {
	vals [][]byte
	dest []any // &vals[i]
}

func newScanBuf(n int) *scanBuf {
	sb := &scanBuf{vals: make([][]byte, n), dest: make([]any, n)}
	for i := range sb.vals {
		sb.dest[i] = &sb.vals[i]
	}
	return sb
}

// Read implements driver.Driver: the row at key at the read consistency
// level; outcome.ErrNotFound when there is none.
func (d *Driver) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	return d.readAt(ctx, table, key, fields, d.readCL)
}

// readAt reads the row at key at consistency level cl.
func (d *Driver) readAt(ctx context.Context, table, key string, fields []string, cl gocql.Consistency) (map[string][]byte, error) {
	cols, err := d.readColumns("read", fields)
	if err != nil {
		return nil, err
	}
	iter := d.s.Query(d.stmt("read", table, cols), key).Consistency(cl).WithContext(ctx).Iter()
	rec, ok := d.scanRow(iter, cols)
	if err := iter.Close(); err != nil {
		return nil, classify("read", err)
	}
	if !ok {
		return nil, outcome.Classified(outcome.NotFound, "read", fmt.Errorf("cassandra: key %q: %w", key, outcome.ErrNotFound))
	}
	return rec, nil
}

// ReadStrong is the lost-write check's read (check.StrongReader): the row
// at consistency ALL, so the newest value any replica holds wins whatever
// the run's read level; when a replica is down (ALL is unavailable) it
// reads at QUORUM, which still overlaps every write acknowledged at QUORUM
// or ALL.
func (d *Driver) ReadStrong(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	rec, err := d.readAt(ctx, table, key, fields, gocql.All)
	if outcome.ClassOf(err) == outcome.Unavailable {
		return d.readAt(ctx, table, key, fields, gocql.Quorum)
	}
	return rec, err
}

// strongReader is the check's optional ability (check.StrongReader).
var _ interface {
	ReadStrong(ctx context.Context, table, key string, fields []string) (map[string][]byte, error)
} = (*Driver)(nil)

// Scan implements driver.Driver the way YCSB's binding does: up to count
// rows from the token of startKey on (token order).
func (d *Driver) Scan(ctx context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	cols, err := d.readColumns("scan", fields)
	if err != nil {
		return nil, err
	}
	if count <= 0 {
		return nil, nil
	}
	iter := d.s.Query(d.stmt("scan", table, cols), startKey, count).Consistency(d.readCL).WithContext(ctx).Iter()
	out := make([]map[string][]byte, 0, count)
	for {
		rec, ok := d.scanRow(iter, cols)
		if !ok {
			break
		}
		out = append(out, rec)
	}
	if err := iter.Close(); err != nil {
		return nil, classify("scan", err)
	}
	return out, nil
}

// sortedFields returns the field names of values in order and their values
// as arguments.
func sortedFields(op string, values map[string][]byte) ([]string, []any, error) {
	cols := make([]string, 0, len(values))
	for f := range values {
		cols = append(cols, f)
	}
	sort.Strings(cols)
	if err := checkNames(op, cols); err != nil {
		return nil, nil, err
	}
	args := make([]any, len(cols), len(cols)+1)
	for i, c := range cols {
		args[i] = values[c]
	}
	return cols, args, nil
}

// Update implements driver.Driver: UPDATE of the given columns (an upsert,
// as in Cassandra and YCSB).
func (d *Driver) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	if len(values) == 0 {
		return nil
	}
	cols, args, err := sortedFields("update", values)
	if err != nil {
		return err
	}
	args = append(args, key)
	return classify("update", d.s.Query(d.stmt("update", table, cols), args...).Consistency(d.writeCL).WithContext(ctx).Exec())
}

// Insert implements driver.Driver.
func (d *Driver) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	cols, vals, err := sortedFields("insert", values)
	if err != nil {
		return err
	}
	args := append([]any{key}, vals...)
	return classify("insert", d.s.Query(d.stmt("insert", table, cols), args...).Consistency(d.writeCL).WithContext(ctx).Exec())
}

// Delete implements driver.Driver.
func (d *Driver) Delete(ctx context.Context, table, key string) error {
	return classify("delete", d.s.Query(d.stmt("delete", table, nil), key).Consistency(d.writeCL).WithContext(ctx).Exec())
}
