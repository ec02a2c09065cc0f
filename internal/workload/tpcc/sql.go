package tpcc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/workload/program"
)

// SQLTx is one SQL transaction (program.SQLTx: the methods of
// driver.SQLTxn). Statements use ? for parameters.
type SQLTx = program.SQLTx

// BeginSQL begins an SQL transaction.
type BeginSQL = program.BeginSQL

// SQL dialects (DB.Dialect).
const (
	DialectPostgres = "postgres"
	DialectMySQL    = "mysql" // MariaDB Galera
)

// DB is the database a terminal's transactions run on (program.DB): a
// transactional key-value store (KV; the tables as key ranges with index
// records) or an SQL database (SQL; the standard nine-table schema) in
// Dialect. When SQL is set, the SQL schema is used.
type DB = program.DB

// sqlSchema is the standard schema of clause 1.3 with its primary keys
// and the two secondary indexes the transactions need (customers by last
// name; a customer's orders). Money is in cents and tax rates in
// 1/10000, as whole numbers, so that sums are exact (the clause asks for
// signed numerics of at least that precision). {TS} is the dialect's
// timestamp type. tpcc_meta holds the load's parameters.
var sqlSchema = []string{
	`CREATE TABLE warehouse (w_id INTEGER NOT NULL, w_name VARCHAR(10), w_street_1 VARCHAR(20), w_street_2 VARCHAR(20),
	w_city VARCHAR(20), w_state CHAR(2), w_zip CHAR(9), w_tax INTEGER, w_ytd BIGINT, PRIMARY KEY (w_id))`,
	`CREATE TABLE district (d_id SMALLINT NOT NULL, d_w_id INTEGER NOT NULL, d_name VARCHAR(10), d_street_1 VARCHAR(20),
	d_street_2 VARCHAR(20), d_city VARCHAR(20), d_state CHAR(2), d_zip CHAR(9), d_tax INTEGER, d_ytd BIGINT,
	d_next_o_id INTEGER, PRIMARY KEY (d_w_id, d_id))`,
	`CREATE TABLE customer (c_id INTEGER NOT NULL, c_d_id SMALLINT NOT NULL, c_w_id INTEGER NOT NULL, c_first VARCHAR(16),
	c_middle CHAR(2), c_last VARCHAR(16), c_street_1 VARCHAR(20), c_street_2 VARCHAR(20), c_city VARCHAR(20),
	c_state CHAR(2), c_zip CHAR(9), c_phone CHAR(16), c_since {TS}, c_credit CHAR(2), c_credit_lim BIGINT,
	c_discount INTEGER, c_balance BIGINT, c_ytd_payment BIGINT, c_payment_cnt INTEGER, c_delivery_cnt INTEGER,
	c_data VARCHAR(500), PRIMARY KEY (c_w_id, c_d_id, c_id))`,
	`CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first)`,
	`CREATE TABLE history (h_c_id INTEGER, h_c_d_id SMALLINT, h_c_w_id INTEGER, h_d_id SMALLINT, h_w_id INTEGER,
	h_date {TS}, h_amount BIGINT, h_data VARCHAR(24))`,
	`CREATE TABLE new_order (no_o_id INTEGER NOT NULL, no_d_id SMALLINT NOT NULL, no_w_id INTEGER NOT NULL,
	PRIMARY KEY (no_w_id, no_d_id, no_o_id))`,
	`CREATE TABLE orders (o_id INTEGER NOT NULL, o_d_id SMALLINT NOT NULL, o_w_id INTEGER NOT NULL, o_c_id INTEGER,
	o_entry_d {TS}, o_carrier_id SMALLINT, o_ol_cnt SMALLINT, o_all_local SMALLINT, PRIMARY KEY (o_w_id, o_d_id, o_id))`,
	`CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)`,
	`CREATE TABLE order_line (ol_o_id INTEGER NOT NULL, ol_d_id SMALLINT NOT NULL, ol_w_id INTEGER NOT NULL,
	ol_number SMALLINT NOT NULL, ol_i_id INTEGER, ol_supply_w_id INTEGER, ol_delivery_d {TS}, ol_quantity SMALLINT,
	ol_amount BIGINT, ol_dist_info CHAR(24), PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))`,
	`CREATE TABLE item (i_id INTEGER NOT NULL, i_im_id INTEGER, i_name VARCHAR(24), i_price BIGINT, i_data VARCHAR(50),
	PRIMARY KEY (i_id))`,
	`CREATE TABLE stock (s_i_id INTEGER NOT NULL, s_w_id INTEGER NOT NULL, s_quantity SMALLINT, s_dist_01 CHAR(24),
	s_dist_02 CHAR(24), s_dist_03 CHAR(24), s_dist_04 CHAR(24), s_dist_05 CHAR(24), s_dist_06 CHAR(24),
	s_dist_07 CHAR(24), s_dist_08 CHAR(24), s_dist_09 CHAR(24), s_dist_10 CHAR(24), s_ytd BIGINT,
	s_order_cnt INTEGER, s_remote_cnt INTEGER, s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id))`,
	`CREATE TABLE tpcc_meta (id INTEGER NOT NULL, warehouses BIGINT, items BIGINT, customers BIGINT, c_last BIGINT,
	c_id BIGINT, c_item BIGINT, PRIMARY KEY (id))`,
}

// sqlTables are the SQL schema's tables, in the order the load's rows are
// written.
var sqlTables = []string{TMeta, TItem, TWarehouse, TDistrict, TStock, TCustomer, THistory, TOrder, TNewOrder, TOrderLine}

// sqlDateColumns are the timestamp columns (the load's rows carry them as
// RFC 3339 text).
var sqlDateColumns = map[string]bool{"C_SINCE": true, "H_DATE": true, "O_ENTRY_D": true, "OL_DELIVERY_D": true}

// SchemaSQL returns the statements that drop any earlier TPC-C tables and
// create the schema in dialect.
func SchemaSQL(dialect string) []string {
	ts := "TIMESTAMP"
	if dialect == DialectMySQL {
		ts = "DATETIME(6)"
	}
	var out []string
	for i := len(sqlTables) - 1; i >= 0; i-- {
		out = append(out, "DROP TABLE IF EXISTS "+sqlTables[i])
	}
	for _, s := range sqlSchema {
		out = append(out, strings.ReplaceAll(s, "{TS}", ts))
	}
	return out
}

// ensureSchema creates the schema once per workload (the first load
// transaction of any worker; the others wait for it).
func (w *Workload) ensureSchema(ctx context.Context, db DB) error {
	w.schemaMu.Lock()
	defer w.schemaMu.Unlock()
	if w.schemaDone {
		return nil
	}
	for _, s := range SchemaSQL(db.Dialect) {
		tx, err := db.SQL(ctx)
		if err != nil {
			return fmt.Errorf("tpcc: creating the schema: %w", err)
		}
		if _, err := tx.Exec(ctx, s); err != nil {
			_ = tx.Abort(context.WithoutCancel(ctx))
			return fmt.Errorf("tpcc: creating the schema (%s): %w", strings.Fields(s)[2], err)
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("tpcc: creating the schema: %w", err)
		}
	}
	w.schemaDone = true
	return nil
}

// sqlLoadBegin adapts an SQL database to the load's Txn: each load
// transaction's rows are buffered per table and written at Commit with
// multi-row INSERTs, in one SQL transaction.
func sqlLoadBegin(db DB) Begin {
	return func(ctx context.Context) (Txn, error) {
		tx, err := db.SQL(ctx)
		if err != nil {
			return nil, err
		}
		return &sqlLoadTx{tx: tx, dialect: db.Dialect, rows: map[string][]row{}}, nil
	}
}

type sqlLoadTx struct {
	tx      SQLTx
	dialect string
	rows    map[string][]row
}

var errLoadOnly = errors.New("tpcc: the SQL load transaction only inserts")

func (l *sqlLoadTx) Read(context.Context, string, string, []string) (map[string][]byte, error) {
	return nil, errLoadOnly
}
func (l *sqlLoadTx) Update(context.Context, string, string, map[string][]byte) error {
	return errLoadOnly
}
func (l *sqlLoadTx) Delete(context.Context, string, string) error { return errLoadOnly }

// Insert buffers a row; the key-value back end's index tables are not
// part of the SQL schema (its indexes serve those lookups).
func (l *sqlLoadTx) Insert(_ context.Context, table, _ string, values map[string][]byte) error {
	switch table {
	case TCustomerName, TCustomerLastOrder, TDeliveryCursor:
		return nil
	case TMeta:
		values["ID"] = []byte("1")
	}
	l.rows[table] = append(l.rows[table], row(values))
	return nil
}

// maxParams bounds the parameters of one INSERT (PostgreSQL allows 65,535).
const maxParams = 30000

// Commit writes the buffered rows and commits. A load transaction is
// written again after a failure, so rows already there are skipped
// (ON CONFLICT DO NOTHING, INSERT IGNORE).
func (l *sqlLoadTx) Commit(ctx context.Context) error {
	for _, table := range sqlTables {
		rs := l.rows[table]
		if len(rs) == 0 {
			continue
		}
		cols := make([]string, 0, len(rs[0]))
		for c := range rs[0] {
			cols = append(cols, c)
		}
		sort.Strings(cols)
		per := max(1, maxParams/len(cols))
		for from := 0; from < len(rs); from += per {
			part := rs[from:min(from+per, len(rs))]
			q, args, err := l.insertSQL(table, cols, part)
			if err != nil {
				_ = l.tx.Abort(context.WithoutCancel(ctx))
				return err
			}
			if _, err := l.tx.Exec(ctx, q, args...); err != nil {
				_ = l.tx.Abort(context.WithoutCancel(ctx))
				return fmt.Errorf("tpcc: loading %s: %w", table, err)
			}
		}
	}
	return l.tx.Commit(ctx)
}

func (l *sqlLoadTx) insertSQL(table string, cols []string, rs []row) (string, []any, error) {
	var b strings.Builder
	if l.dialect == DialectMySQL {
		b.WriteString("INSERT IGNORE INTO ")
	} else {
		b.WriteString("INSERT INTO ")
	}
	b.WriteString(table + " (" + strings.ToLower(strings.Join(cols, ", ")) + ") VALUES ")
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	args := make([]any, 0, len(cols)*len(rs))
	for i, r := range rs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one)
		if len(r) != len(cols) {
			return "", nil, fmt.Errorf("tpcc: loading %s: rows with different columns", table)
		}
		for _, c := range cols {
			v, ok := r[c]
			if !ok {
				return "", nil, fmt.Errorf("tpcc: loading %s: a row without %s", table, c)
			}
			args = append(args, sqlValue(c, string(v)))
		}
	}
	if l.dialect != DialectMySQL {
		b.WriteString(" ON CONFLICT DO NOTHING")
	}
	return b.String(), args, nil
}

// sqlValue is a load row's value as an SQL parameter: empty is NULL (the
// carrier and delivery date of undelivered orders), timestamps are
// time.Time, everything else the text SQL converts to the column's type.
func sqlValue(col, v string) any {
	if v == "" {
		return nil
	}
	if sqlDateColumns[col] {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return t
		}
	}
	return v
}

func (l *sqlLoadTx) Abort(ctx context.Context) error { return l.tx.Abort(ctx) }

// readMetaSQL reads the load's parameters from the SQL schema.
func readMetaSQL(ctx context.Context, tx SQLTx) (*Meta, error) {
	var m *Meta
	err := tx.Query(ctx, "SELECT warehouses, items, customers, c_last, c_id, c_item FROM tpcc_meta WHERE id = 1", nil,
		func(scan func(...any) error) error {
			m = &Meta{}
			return scan(&m.warehouses, &m.items, &m.customer, &m.c.LoadLast, &m.c.LoadCID, &m.c.LoadItem)
		})
	if err != nil {
		return nil, fmt.Errorf("tpcc: reading the load's parameters (tpcc_meta; was the database loaded with -P workloads/tpcc?): %w", err)
	}
	if m == nil {
		return nil, ErrNotLoaded
	}
	return m, nil
}

// ReadMetaSQL reads the load's parameters from an SQL database.
func ReadMetaSQL(ctx context.Context, begin BeginSQL) (*Meta, error) {
	tx, err := begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Abort(context.WithoutCancel(ctx)) //nolint:errcheck // read-only
	return readMetaSQL(ctx, tx)
}
