package sqldb

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/driver"
)

var _ driver.SQL = (*Driver)(nil)

// SQLDialect implements driver.SQL.
func (drv *Driver) SQLDialect() string {
	if drv.d == Postgres {
		return "postgres"
	}
	return "mysql"
}

// BeginSQL implements driver.SQL: one transaction on one pooled
// connection, in the isolation level of sqldb.isolation (PostgreSQL: BEGIN
// ISOLATION LEVEL ...; MariaDB: SET TRANSACTION ISOLATION LEVEL ... before
// START TRANSACTION), or the server's default when it is unset.
func (drv *Driver) BeginSQL(ctx context.Context) (driver.SQLTxn, error) {
	var opts *sql.TxOptions
	if l, ok := isolationLevel(drv.cfg.isolation); ok {
		opts = &sql.TxOptions{Isolation: l}
	}
	tx, err := drv.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, drv.fail("begin", false, err)
	}
	return &sqlTxn{drv: drv, tx: tx}, nil
}

// sqlTxn is a driver.SQLTxn. Statement errors are classified as reads: a
// connection lost before the commit rolls the transaction back, so only
// the commit's loss leaves the outcome unknown (Timeout).
type sqlTxn struct {
	drv *Driver
	tx  *sql.Tx
}

// query rewrites ? placeholders to PostgreSQL's $n (once per statement).
func (drv *Driver) query(q string) string {
	if drv.d != Postgres || !strings.Contains(q, "?") {
		return q
	}
	if v, ok := drv.rewritten.Load(q); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	drv.rewritten.Store(q, b.String())
	return b.String()
}

// Isolation returns the isolation level of the driver's SQL transactions
// (sqldb.isolation): read-committed, repeatable-read or serializable; ""
// when the server's default applies.
func (drv *Driver) Isolation() string { return drv.cfg.isolation }

func (t *sqlTxn) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := t.tx.ExecContext(ctx, t.drv.query(q), args...)
	if err != nil {
		return 0, t.drv.fail("sql", false, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, t.drv.fail("sql", false, err)
	}
	return n, nil
}

func (t *sqlTxn) Query(ctx context.Context, q string, args []any, row func(scan func(dest ...any) error) error) error {
	rows, err := t.tx.QueryContext(ctx, t.drv.query(q), args...)
	if err != nil {
		return t.drv.fail("sql", false, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return t.drv.fail("sql", false, err)
		}
	}
	if err := rows.Err(); err != nil {
		return t.drv.fail("sql", false, err)
	}
	return nil
}

func (t *sqlTxn) Commit(context.Context) error {
	if err := t.tx.Commit(); err != nil {
		return t.drv.fail("commit", true, err)
	}
	return nil
}

func (t *sqlTxn) Abort(context.Context) error {
	if err := t.tx.Rollback(); err != nil && err != sql.ErrTxDone {
		return t.drv.fail("rollback", false, err)
	}
	return nil
}
