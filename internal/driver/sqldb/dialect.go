package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/faultbench/faultbench/internal/outcome"
)

// Dialect is the SQL database a Driver talks to.
type Dialect int

// The dialects.
const (
	// Postgres is PostgreSQL through pgx; properties postgres.*.
	Postgres Dialect = iota + 1
	// Galera is MariaDB Galera through go-sql-driver/mysql; properties galera.*.
	Galera
)

func (d Dialect) prefix() string {
	if d == Postgres {
		return "postgres."
	}
	return "galera."
}

func (d Dialect) name() string {
	if d == Postgres {
		return "postgres"
	}
	return "galera"
}

func (d Dialect) kind() string {
	if d == Postgres {
		return "postgres-ha"
	}
	return "galera"
}

func (d Dialect) defaultDB() string { return "faultbench" }

func (d Dialect) defaultUser() string {
	if d == Postgres {
		return "postgres"
	}
	return "faultbench"
}

// placeholder returns the i-th (1-based) bind parameter.
func (d Dialect) placeholder(i int) string {
	if d == Postgres {
		return "$" + strconv.Itoa(i)
	}
	return "?"
}

// createTable is YCSB's JDBC binding table: YCSB_KEY VARCHAR(255) PRIMARY
// KEY and FIELD0..FIELDn-1, here binary (BYTEA, LONGBLOB) so that any value
// bytes round-trip.
func (d Dialect) createTable(table string, fields []string) string {
	typ, tail := "BYTEA", ""
	if d == Galera {
		typ, tail = "LONGBLOB", " ENGINE=InnoDB"
	}
	cols := []string{keyColumn + " VARCHAR(255) PRIMARY KEY"}
	for _, f := range fields {
		cols = append(cols, f+" "+typ)
	}
	return "CREATE TABLE IF NOT EXISTS " + table + " (" + strings.Join(cols, ", ") + ")" + tail
}

// addColumn adds a binary column f to table unless it exists.
func (d Dialect) addColumn(table, f string) string {
	typ := "BYTEA"
	if d == Galera {
		typ = "LONGBLOB"
	}
	return "ALTER TABLE " + table + " ADD COLUMN IF NOT EXISTS " + f + " " + typ
}

// open returns a database handle for cfg and, for PostgreSQL, a pgx pool
// beside it: the YCSB operations use the pool directly (no database/sql
// layer: its per-query goroutine and argument conversions), DDL and SQL
// transactions the *sql.DB (pgx's database/sql driver, as before). Both
// connect lazily, so a run of one kind opens the other's connections only
// for its DDL.
func (d Dialect) open(cfg config) (*sql.DB, *pgxpool.Pool, error) {
	if d == Postgres {
		u := url.URL{Scheme: "postgres", User: url.UserPassword(cfg.user, cfg.password),
			Host: strings.Join(cfg.hosts, ","), Path: "/" + cfg.db}
		if cfg.password == "" {
			u.User = url.User(cfg.user)
		}
		q := url.Values{}
		q.Set("sslmode", "disable")
		q.Set("connect_timeout", strconv.Itoa(int(math.Ceil(cfg.connTimeout.Seconds()))))
		// libpq's multi-host failover: try the hosts in order and keep the
		// one that takes writes (the primary)
		q.Set("target_session_attrs", "read-write")
		u.RawQuery = q.Encode()
		cc, err := pgx.ParseConfig(u.String())
		if err != nil {
			return nil, nil, fmt.Errorf("postgres connection string: %w", err)
		}
		pc, err := pgxpool.ParseConfig(u.String())
		if err != nil {
			return nil, nil, fmt.Errorf("postgres connection string: %w", err)
		}
		pc.MaxConns = int32(cfg.poolSize)
		pool, err := pgxpool.NewWithConfig(context.Background(), pc)
		if err != nil {
			return nil, nil, fmt.Errorf("postgres pool: %w", err)
		}
		return stdlib.OpenDB(*cc), pool, nil
	}
	var conns []driver.Connector
	for _, h := range cfg.hosts {
		mc := mysql.NewConfig()
		mc.User, mc.Passwd, mc.Net, mc.Addr, mc.DBName = cfg.user, cfg.password, "tcp", h, cfg.db
		mc.Timeout = cfg.connTimeout
		// RowsAffected counts matched rows, as in PostgreSQL, so that an
		// update of a missing key is reported as not found
		mc.ClientFoundRows = true
		// statements with parameters outside prepared statements (SQL
		// transactions) go in one round trip, not prepare-execute-close
		mc.InterpolateParams = true
		c, err := mysql.NewConnector(mc)
		if err != nil {
			return nil, nil, fmt.Errorf("galera connection for %s: %w", h, err)
		}
		conns = append(conns, c)
	}
	return sql.OpenDB(&firstLive{conns: conns}), nil, nil
}

// firstLive connects to the first node of a list that accepts a
// connection, trying from the node that worked last: Galera takes writes
// on every node, so any live one will do.
type firstLive struct {
	conns []driver.Connector
	last  atomic.Int32
}

func (f *firstLive) Connect(ctx context.Context) (driver.Conn, error) {
	var errs []error
	start := int(f.last.Load())
	for i := range f.conns {
		j := (start + i) % len(f.conns)
		c, err := f.conns[j].Connect(ctx)
		if err == nil {
			f.last.Store(int32(j))
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

func (f *firstLive) Driver() driver.Driver { return f.conns[0].Driver() }

// classify returns the outcome class of err from an operation that wrote
// (write) or only read. A lost connection after a write was sent leaves
// its outcome unknown: Timeout, so that the lost-write check does not count
// it as acknowledged nor as failed. stale reports whether the connection
// pool should be emptied (the server it holds is no longer the right one:
// read-only after a failover, Galera node out of the primary component,
// server shutting down).
func (d Dialect) classify(err error, write bool) (class outcome.Class, stale bool) {
	if errors.Is(err, context.DeadlineExceeded) {
		return outcome.Timeout, false
	}
	if errors.Is(err, context.Canceled) {
		return outcome.Other, false
	}
	if d == Postgres {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return postgresCode(pe.Code)
		}
		var ce *pgconn.ConnectError
		if errors.As(err, &ce) {
			return outcome.Unavailable, false
		}
		if errors.Is(err, driver.ErrBadConn) {
			return outcome.Unavailable, false
		}
		if write && !pgconn.SafeToRetry(err) && isConnLoss(err) {
			return outcome.Timeout, true
		}
		if isConnLoss(err) {
			return outcome.Unavailable, true
		}
		return outcome.GenericClass(err), false
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return mysqlCode(me.Number)
	}
	if errors.Is(err, driver.ErrBadConn) {
		return outcome.Unavailable, false // not sent (database/sql retried it already)
	}
	if errors.Is(err, mysql.ErrInvalidConn) || isConnLoss(err) {
		if write {
			return outcome.Timeout, true
		}
		return outcome.Unavailable, true
	}
	return outcome.GenericClass(err), false
}

// isConnLoss reports errors that mean the connection broke.
func isConnLoss(err error) bool {
	c := outcome.GenericClass(err)
	return c == outcome.Unavailable || c == outcome.Timeout || strings.Contains(err.Error(), "conn closed") ||
		strings.Contains(err.Error(), "unexpected EOF")
}

// postgresCode classifies a PostgreSQL SQLSTATE.
func postgresCode(code string) (outcome.Class, bool) {
	switch {
	case code == "40001", code == "40P01": // serialization_failure, deadlock_detected
		return outcome.Conflict, false
	case code == "25006": // read_only_sql_transaction: a standby (the old primary after a failover)
		return outcome.Rejected, true
	case code == "57014": // query_canceled (statement_timeout)
		return outcome.Timeout, false
	case code == "57P01", code == "57P02", code == "57P03": // admin/crash shutdown, cannot connect now
		return outcome.Unavailable, true
	case strings.HasPrefix(code, "08"): // connection exception
		return outcome.Unavailable, true
	case code == "23505", strings.HasPrefix(code, "53"), strings.HasPrefix(code, "42"), strings.HasPrefix(code, "22"):
		// unique violation, insufficient resources, syntax/access, data
		return outcome.Rejected, false
	}
	return outcome.Other, false
}

// mysqlCode classifies a MariaDB error number.
func mysqlCode(n uint16) (outcome.Class, bool) {
	switch n {
	case 1213, 1205, 1180, 1181: // deadlock (Galera certification failure), lock wait timeout, commit/rollback failed
		return outcome.Conflict, false
	case 1047, 1053, 1927, 1040, 2006, 2013: // WSREP not ready (non-primary component), shutdown, killed, too many connections
		return outcome.Unavailable, true
	case 1062, 1290, 1792, 1146, 1064, 1406: // duplicate, read-only, read-only txn, no table, syntax, too long
		return outcome.Rejected, false
	}
	return outcome.Other, false
}
