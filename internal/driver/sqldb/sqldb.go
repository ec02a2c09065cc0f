// Package sqldb is faultbench's driver for replicated SQL databases, in two
// dialects that share everything but the connection and the error codes:
// PostgreSQL (pgx; target postgres-ha, properties postgres.*) and MariaDB
// Galera (go-sql-driver/mysql; target galera, properties galera.*).
//
// Records live in YCSB's JDBC binding table shape: one table per YCSB
// table (usertable), key column YCSB_KEY VARCHAR(255) PRIMARY KEY and one
// column per field (FIELD0..FIELDn-1, binary), created if missing. Every
// statement is prepared once per connection and reused, and its text is
// built once per operation kind, table and field list (the cache is
// dropped when a column is added). On PostgreSQL the YCSB operations go to
// pgx's pool directly (prepared and described once per connection by
// pgx's statement cache; a record is read from the row's raw bytes into
// one buffer), without database/sql, which started a goroutine for every
// query's rows and converted every argument; DDL and SQL transactions use
// database/sql (pgx's stdlib driver) beside it. On MariaDB every statement
// is a database/sql prepared statement.
//
// Reconnection after a failover: PostgreSQL connections use libpq's
// multi-host form with target_session_attrs=read-write, so a new
// connection finds whichever host is the primary now; Galera connections go
// to the first node of the list that accepts one. When an error says the
// connection's server is the wrong one (read-only standby, node out of the
// primary component, server shutting down) the idle connections are
// dropped so the next operations connect afresh.
//
// See docs/targets-postgres-ha.md and docs/targets-galera.md.
package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
)

// keyColumn is YCSB's JDBC key column.
const keyColumn = "ycsb_key"

// Driver is a SQL client shared by all workers of a run.
type Driver struct {
	d      Dialect
	db     *sql.DB
	pool   *pgxpool.Pool // PostgreSQL: the pool the YCSB operations use (db: DDL and SQL transactions)
	cfg    config
	fields []string // every field column, in order

	mu     sync.Mutex
	stmts  map[string]*sql.Stmt
	tables map[string]bool
	cols   map[string]bool     // table + "." + column known to exist
	extra  map[string][]string // table -> columns beyond FIELD0..n-1, sorted

	alterMu sync.Mutex // one ALTER TABLE at a time from this driver

	rewritten sync.Map // SQL transactions' statements: ? form -> $n form (PostgreSQL)

	texts   sync.Map      // opKey -> *opText: the statement of each operation kind, table and fields
	columns atomic.Uint64 // bumped when a table's columns change: every cached text is rebuilt
}

// opKey names the statement of one operation kind on one table with one
// field list (the names joined by ",", "" for every column).
type opKey struct {
	op     byte // 'r' read, 's' scan, 'u' update, 'i' insert, 'd' delete
	table  string
	fields string
}

// opText is a cached statement text, valid while the driver's column
// generation is still gen, for n fields (with the count, a list whose
// names hold commas, never valid, cannot match a valid list's key).
type opText struct {
	query string
	gen   uint64
	n     int
}

// text returns the statement for k, built by build after the fields were
// checked and the table and its columns ensured; a cached text skips all
// of that (columns only ever get added, and an addition drops the cache).
func (drv *Driver) text(ctx context.Context, k opKey, fields []string, build func() string) (string, error) {
	if v, ok := drv.texts.Load(k); ok {
		if t := v.(*opText); t.gen == drv.columns.Load() && t.n == len(fields) {
			return t.query, nil
		}
	}
	if err := drv.checkFields(fields); err != nil {
		return "", err
	}
	if err := drv.ensureColumns(ctx, k.table, fields); err != nil {
		return "", err
	}
	gen := drv.columns.Load() // before build: a column added meanwhile makes this entry stale
	q := build()
	drv.texts.Store(k, &opText{query: q, gen: gen, n: len(fields)})
	return q, nil
}

// fieldsKey is the fields part of an opKey.
func fieldsKey(fs []string) string {
	if len(fs) == 1 {
		return fs[0]
	}
	return strings.Join(fs, ",")
}

var _ driver.Driver = (*Driver)(nil)

// NewPostgres builds the PostgreSQL driver (a driver.Factory).
func NewPostgres(ctx context.Context, p *properties.Properties) (driver.Driver, error) {
	return open(ctx, Postgres, p)
}

// NewGalera builds the MariaDB Galera driver (a driver.Factory).
func NewGalera(ctx context.Context, p *properties.Properties) (driver.Driver, error) {
	// go-sql-driver/mysql prints every broken connection to stderr; the
	// driver reports them as classified errors instead
	_ = mysql.SetLogger(discardLogger{})
	return open(ctx, Galera, p)
}

func open(ctx context.Context, d Dialect, p *properties.Properties) (*Driver, error) {
	cfg, err := parseConfig(d, p)
	if err != nil {
		return nil, err
	}
	db, pool, err := d.open(cfg)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(cfg.poolSize)
	db.SetMaxIdleConns(cfg.poolSize)
	drv := &Driver{d: d, db: db, pool: pool, cfg: cfg, stmts: map[string]*sql.Stmt{}, tables: map[string]bool{}, cols: map[string]bool{}, extra: map[string][]string{}}
	for i := range cfg.fieldCount {
		drv.fields = append(drv.fields, cfg.fieldPrefix+strconv.Itoa(i))
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		if pool != nil {
			pool.Close()
		}
		return nil, outcome.Classified(outcome.Unavailable, "connect",
			fmt.Errorf("%s at %s: %w", d.name(), strings.Join(cfg.hosts, ","), err))
	}
	return drv, nil
}

// discardLogger silences go-sql-driver/mysql's own log.
type discardLogger struct{}

func (discardLogger) Print(...any) {}

// fail classifies err for op and drops idle connections when they point
// at the wrong server.
func (drv *Driver) fail(op string, write bool, err error) error {
	if err == nil {
		return nil
	}
	class, stale := drv.d.classify(err, write)
	if stale {
		if drv.pool != nil {
			drv.pool.Reset() // closes the idle connections now, the others when released
		}
		drv.db.SetMaxIdleConns(0) // closes the idle connections now
		drv.db.SetMaxIdleConns(drv.cfg.poolSize)
	}
	return outcome.Classified(class, op, err)
}

// ensureTable creates table if it is missing (once per table and driver).
// DDL runs one statement at a time from this driver, while the driver's
// other workers wait: on Galera a DDL statement (total order isolation)
// aborts the writes running beside it.
func (drv *Driver) ensureTable(ctx context.Context, table string) error {
	drv.mu.Lock()
	done := drv.tables[table]
	drv.mu.Unlock()
	if done {
		return nil
	}
	if !ident(table) {
		return outcome.Classified(outcome.Rejected, "table", fmt.Errorf("table name %q: want letters, digits and _", table))
	}
	drv.alterMu.Lock()
	defer drv.alterMu.Unlock()
	drv.mu.Lock()
	done = drv.tables[table]
	drv.mu.Unlock()
	if done {
		return nil
	}
	if drv.cfg.createTable {
		if _, err := drv.db.ExecContext(ctx, drv.d.createTable(table, drv.fields)); err != nil {
			return drv.fail("create table", true, err)
		}
	}
	existing, err := drv.existingColumns(ctx, table)
	if err != nil {
		return err
	}
	drv.mu.Lock()
	drv.tables[table] = true
	for _, f := range drv.fields {
		drv.cols[table+"."+f] = true
	}
	for _, f := range existing {
		if !drv.cols[table+"."+f] && !strings.EqualFold(f, keyColumn) {
			drv.cols[table+"."+f] = true
			drv.extra[table] = append(drv.extra[table], f)
		}
	}
	sort.Strings(drv.extra[table])
	drv.mu.Unlock()
	drv.columns.Add(1)
	return nil
}

// existingColumns lists table's columns, lower-case.
func (drv *Driver) existingColumns(ctx context.Context, table string) ([]string, error) {
	schema := "current_schema()"
	if drv.d == Galera {
		schema = "DATABASE()"
	}
	rows, err := drv.db.QueryContext(ctx, "SELECT column_name FROM information_schema.columns WHERE table_schema = "+
		schema+" AND table_name = "+drv.d.placeholder(1), table)
	if err != nil {
		return nil, drv.fail("columns", false, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, drv.fail("columns", false, err)
		}
		out = append(out, strings.ToLower(c))
	}
	if err := rows.Err(); err != nil {
		return nil, drv.fail("columns", false, err)
	}
	return out, nil
}

// allColumns returns every field column of table: FIELD0..n-1, then the
// columns added later, sorted.
func (drv *Driver) allColumns(table string) []string {
	drv.mu.Lock()
	defer drv.mu.Unlock()
	return append(append([]string(nil), drv.fields...), drv.extra[table]...)
}

// ensureColumns adds the columns of fields that table lacks (as binary
// columns, ALTER TABLE ... ADD COLUMN IF NOT EXISTS): writes may carry
// fields beyond FIELD0..n-1, e.g. the lost-writes check's tag field.
func (drv *Driver) ensureColumns(ctx context.Context, table string, fields []string) error {
	if err := drv.ensureTable(ctx, table); err != nil {
		return err
	}
	for _, f := range fields {
		drv.mu.Lock()
		known := drv.cols[table+"."+f]
		drv.mu.Unlock()
		if known {
			continue
		}
		if err := drv.addColumn(ctx, table, f); err != nil {
			return err
		}
	}
	return nil
}

func (drv *Driver) addColumn(ctx context.Context, table, f string) error {
	drv.alterMu.Lock()
	defer drv.alterMu.Unlock()
	drv.mu.Lock()
	known := drv.cols[table+"."+f]
	drv.mu.Unlock()
	if known {
		return nil
	}
	if _, err := drv.db.ExecContext(ctx, drv.d.addColumn(table, f)); err != nil {
		return drv.fail("add column", true, err)
	}
	drv.mu.Lock()
	drv.cols[table+"."+f] = true
	drv.extra[table] = append(drv.extra[table], f)
	sort.Strings(drv.extra[table])
	drv.mu.Unlock()
	drv.columns.Add(1)
	return nil
}

// scanRecord reads the current row of rows into a record: every column
// but the key, NULL columns (fields never written) left out. The columns
// are scanned as the driver's own bytes (sql.RawBytes) and copied into one
// buffer, not one slice per column.
func scanRecord(rows *sql.Rows, cols []string) (key string, rec map[string][]byte, err error) {
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return "", nil, err
	}
	n := 0
	for _, v := range vals {
		n += len(v)
	}
	buf := make([]byte, 0, n)
	rec = make(map[string][]byte, len(cols))
	for i, c := range cols {
		switch {
		case strings.EqualFold(c, keyColumn):
			key = string(vals[i])
		case vals[i] != nil:
			start := len(buf)
			buf = append(buf, vals[i]...)
			rec[strings.ToLower(c)] = buf[start:len(buf):len(buf)]
		}
	}
	return key, rec, nil
}

// selectList is the column list of a read: the key and the fields, or
// every field column of the table (those added after the table was
// created, e.g. the lost-writes tag, included) when fields is nil. The
// list is explicit, never *: PostgreSQL refuses to run a statement
// prepared with * after a column was added ("cached plan must not change
// result type"); a new column gives a new statement instead.
func (drv *Driver) selectList(table string, fields []string) string {
	if len(fields) == 0 {
		fields = drv.allColumns(table)
	}
	return keyColumn + ", " + strings.Join(fields, ", ")
}

// stmt returns the prepared statement for query, preparing it once.
func (drv *Driver) stmt(ctx context.Context, table, query string) (*sql.Stmt, error) {
	if err := drv.ensureTable(ctx, table); err != nil {
		return nil, err
	}
	drv.mu.Lock()
	s := drv.stmts[query]
	drv.mu.Unlock()
	if s != nil {
		return s, nil
	}
	s, err := drv.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, drv.fail("prepare", false, err)
	}
	drv.mu.Lock()
	if old := drv.stmts[query]; old != nil {
		s.Close()
		s = old
	} else {
		drv.stmts[query] = s
	}
	drv.mu.Unlock()
	return s, nil
}

// checkFields checks field names.
func (drv *Driver) checkFields(fields []string) error {
	for _, f := range fields {
		if !ident(f) {
			return outcome.Classified(outcome.Rejected, "fields", fmt.Errorf("field name %q: want letters, digits and _", f))
		}
	}
	return nil
}

// sortedFields returns the keys of values, sorted, after checking them.
func sortedFields(values map[string][]byte) ([]string, error) {
	fs := make([]string, 0, len(values))
	for f := range values {
		if !ident(f) {
			return nil, outcome.Classified(outcome.Rejected, "fields", fmt.Errorf("field name %q: want letters, digits and _", f))
		}
		fs = append(fs, f)
	}
	sort.Strings(fs)
	return fs, nil
}

// Read implements driver.Driver. Fields never written (NULL) are left
// out of the record; fields nil reads every column.
func (drv *Driver) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	q, err := drv.text(ctx, opKey{'r', table, fieldsKey(fields)}, fields, func() string {
		return "SELECT " + drv.selectList(table, fields) + " FROM " + table + " WHERE " + keyColumn + " = " + drv.d.placeholder(1)
	})
	if err != nil {
		return nil, err
	}
	if drv.pool != nil {
		rows, err := drv.pool.Query(ctx, q, key)
		if err != nil {
			return nil, drv.fail("read", false, err)
		}
		defer rows.Close()
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return nil, drv.fail("read", false, err)
			}
			return nil, outcome.Classified(outcome.NotFound, "read", fmt.Errorf("key %q: %w", key, outcome.ErrNotFound))
		}
		rec, err := pgRecord(rows)
		if err != nil {
			return nil, drv.fail("read", false, err)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, drv.fail("read", false, err)
		}
		return rec, nil
	}
	s, err := drv.stmt(ctx, table, q)
	if err != nil {
		return nil, err
	}
	rows, err := s.QueryContext(ctx, key)
	if err != nil {
		return nil, drv.fail("read", false, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, drv.fail("read", false, err)
		}
		return nil, outcome.Classified(outcome.NotFound, "read", fmt.Errorf("key %q: %w", key, outcome.ErrNotFound))
	}
	cols, err := rows.Columns()
	if err != nil {
		return nil, drv.fail("read", false, err)
	}
	_, rec, err := scanRecord(rows, cols)
	if err != nil {
		return nil, drv.fail("read", false, err)
	}
	return rec, nil
}

// pgRecord reads the current row of a pgx result into a record (every
// column but the key; NULL columns left out), copying the row's raw bytes
// into one buffer: bytea in binary format and text columns are their
// bytes. A column of another type or format takes pgRecordValues's path.
func pgRecord(rows pgx.Rows) (map[string][]byte, error) {
	fds := rows.FieldDescriptions()
	raw := rows.RawValues()
	n := 0
	for i, fd := range fds {
		switch {
		case fd.DataTypeOID == pgtype.ByteaOID && fd.Format == pgx.BinaryFormatCode,
			fd.DataTypeOID == pgtype.VarcharOID, fd.DataTypeOID == pgtype.TextOID, fd.DataTypeOID == pgtype.BPCharOID:
			n += len(raw[i])
		default:
			return pgRecordValues(rows)
		}
	}
	buf := make([]byte, 0, n)
	rec := make(map[string][]byte, len(fds))
	for i, fd := range fds {
		if raw[i] == nil || strings.EqualFold(fd.Name, keyColumn) {
			continue
		}
		start := len(buf)
		buf = append(buf, raw[i]...)
		rec[strings.ToLower(fd.Name)] = buf[start:len(buf):len(buf)]
	}
	return rec, nil
}

// pgRecordValues is pgRecord for columns of other types: their decoded
// values, byte strings as they are, others in their text form (as
// database/sql's conversion into []byte gave them).
func pgRecordValues(rows pgx.Rows) (map[string][]byte, error) {
	vals, err := rows.Values()
	if err != nil {
		return nil, err
	}
	fds := rows.FieldDescriptions()
	rec := make(map[string][]byte, len(fds))
	for i, fd := range fds {
		if vals[i] == nil || strings.EqualFold(fd.Name, keyColumn) {
			continue
		}
		var b []byte
		switch v := vals[i].(type) {
		case []byte:
			b = v
		case string:
			b = []byte(v)
		default:
			b = fmt.Append(nil, v)
		}
		rec[strings.ToLower(fd.Name)] = b
	}
	return rec, nil
}

// Scan implements driver.Driver.
func (drv *Driver) Scan(ctx context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	q, err := drv.text(ctx, opKey{'s', table, fieldsKey(fields)}, fields, func() string {
		return "SELECT " + drv.selectList(table, fields) + " FROM " + table + " WHERE " + keyColumn + " >= " +
			drv.d.placeholder(1) + " ORDER BY " + keyColumn + " LIMIT " + drv.d.placeholder(2)
	})
	if err != nil {
		return nil, err
	}
	var out []map[string][]byte
	if drv.pool != nil {
		rows, err := drv.pool.Query(ctx, q, startKey, count)
		if err != nil {
			return nil, drv.fail("scan", false, err)
		}
		defer rows.Close()
		for rows.Next() {
			rec, err := pgRecord(rows)
			if err != nil {
				return nil, drv.fail("scan", false, err)
			}
			out = append(out, rec)
		}
		if err := rows.Err(); err != nil {
			return nil, drv.fail("scan", false, err)
		}
		return out, nil
	}
	s, err := drv.stmt(ctx, table, q)
	if err != nil {
		return nil, err
	}
	rows, err := s.QueryContext(ctx, startKey, count)
	if err != nil {
		return nil, drv.fail("scan", false, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, drv.fail("scan", false, err)
	}
	for rows.Next() {
		_, rec, err := scanRecord(rows, cols)
		if err != nil {
			return nil, drv.fail("scan", false, err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, drv.fail("scan", false, err)
	}
	return out, nil
}

// exec runs a write statement q on table and returns the rows it
// affected (-1 when the server did not say).
func (drv *Driver) exec(ctx context.Context, op, table, q string, args ...any) (int64, error) {
	if drv.pool != nil {
		tag, err := drv.pool.Exec(ctx, q, args...)
		if err != nil {
			return 0, drv.fail(op, true, err)
		}
		return tag.RowsAffected(), nil
	}
	s, err := drv.stmt(ctx, table, q)
	if err != nil {
		return 0, err
	}
	res, err := s.ExecContext(ctx, args...)
	if err != nil {
		return 0, drv.fail(op, true, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return -1, nil // not reported: taken as found
	}
	return n, nil
}

// Update implements driver.Driver. Updating a missing key fails with
// outcome.ErrNotFound.
func (drv *Driver) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	fs, err := sortedFields(values)
	if err != nil {
		return err
	}
	if len(fs) == 0 {
		return nil
	}
	q, err := drv.text(ctx, opKey{'u', table, fieldsKey(fs)}, fs, func() string {
		set := make([]string, len(fs))
		for i, f := range fs {
			set[i] = f + " = " + drv.d.placeholder(i+1)
		}
		return "UPDATE " + table + " SET " + strings.Join(set, ", ") + " WHERE " + keyColumn + " = " + drv.d.placeholder(len(fs)+1)
	})
	if err != nil {
		return err
	}
	args := make([]any, len(fs)+1)
	for i, f := range fs {
		args[i] = values[f]
	}
	args[len(fs)] = key
	n, err := drv.exec(ctx, "update", table, q, args...)
	if err != nil {
		return err
	}
	if n == 0 {
		return outcome.Classified(outcome.NotFound, "update", fmt.Errorf("key %q: %w", key, outcome.ErrNotFound))
	}
	return nil
}

// Insert implements driver.Driver. Inserting an existing key is Rejected.
func (drv *Driver) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	fs, err := sortedFields(values)
	if err != nil {
		return err
	}
	q, err := drv.text(ctx, opKey{'i', table, fieldsKey(fs)}, fs, func() string {
		ph := []string{drv.d.placeholder(1)}
		for i := range fs {
			ph = append(ph, drv.d.placeholder(i+2))
		}
		return "INSERT INTO " + table + " (" + strings.Join(append([]string{keyColumn}, fs...), ", ") + ") VALUES (" + strings.Join(ph, ", ") + ")"
	})
	if err != nil {
		return err
	}
	args := make([]any, len(fs)+1)
	args[0] = key
	for i, f := range fs {
		args[i+1] = values[f]
	}
	_, err = drv.exec(ctx, "insert", table, q, args...)
	return err
}

// Delete implements driver.Driver.
func (drv *Driver) Delete(ctx context.Context, table, key string) error {
	q, err := drv.text(ctx, opKey{'d', table, ""}, nil, func() string {
		return "DELETE FROM " + table + " WHERE " + keyColumn + " = " + drv.d.placeholder(1)
	})
	if err != nil {
		return err
	}
	_, err = drv.exec(ctx, "delete", table, q, key)
	return err
}

// Close implements driver.Driver.
func (drv *Driver) Close() error {
	drv.mu.Lock()
	for _, s := range drv.stmts {
		s.Close()
	}
	drv.stmts = map[string]*sql.Stmt{}
	drv.mu.Unlock()
	err := drv.db.Close()
	if drv.pool != nil {
		drv.pool.Close()
	}
	return err
}
