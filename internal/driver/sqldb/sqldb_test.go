package sqldb

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
)

func props(kv ...string) *properties.Properties {
	p := properties.New()
	for i := 0; i+1 < len(kv); i += 2 {
		p.Set(kv[i], kv[i+1])
	}
	return p
}

func declared(p *properties.Properties, keys ...string) *properties.Properties {
	p.Declare(keys...)
	return p
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		d         Dialect
		p         *properties.Properties
		want      string // part of the error; "" for valid
		pool      int
		threads   int
		isolation string
	}{
		{name: "postgres ok", d: Postgres, p: props("postgres.hosts", "127.0.0.1:5432,127.0.0.1:5433", "threads", "8"), pool: 12},
		{name: "galera ok", d: Galera, p: props("galera.hosts", "127.0.0.1:3306", "galera.poolsize", "3"), pool: 3},
		{name: "declared launcher option accepted", d: Galera, p: declared(props("galera.hosts", "127.0.0.1:3306", "galera.timing", "fast"), "galera.timing"), pool: 16},
		{name: "undeclared launcher option", d: Postgres, p: props("postgres.hosts", "h:1", "postgres.timing", "pgaf"), want: "launcher options go to"},
		{name: "no hosts", d: Postgres, p: props(), want: "postgres.hosts is not set"},
		{name: "bad host", d: Galera, p: props("galera.hosts", "localhost"), want: "galera.hosts"},
		{name: "bad port", d: Galera, p: props("galera.hosts", "h:70000"), want: "port must be"},
		{name: "unknown", d: Postgres, p: props("postgres.hosts", "h:1", "postgres.hostz", "x"), want: "postgres.hostz"},
		{name: "bad pool", d: Postgres, p: props("postgres.hosts", "h:1", "postgres.poolsize", "0"), want: "postgres.poolsize"},
		{name: "bad db", d: Galera, p: props("galera.hosts", "h:1", "galera.db", "a;b"), want: "galera.db"},
		{name: "bad timeout", d: Galera, p: props("galera.hosts", "h:1", "galera.connecttimeout", "5"), want: "galera.connecttimeout"},
		{name: "bad fieldprefix", d: Postgres, p: props("postgres.hosts", "h:1", "fieldnameprefix", "f-"), want: "fieldnameprefix"},
		{name: "isolation serializable", d: Postgres, p: props("postgres.hosts", "h:1", "sqldb.isolation", "serializable"), pool: 16, isolation: "serializable"},
		{name: "isolation read-committed on galera", d: Galera, p: props("galera.hosts", "h:1", "sqldb.isolation", " read-committed"), pool: 16, isolation: "read-committed"},
		{name: "isolation repeatable-read", d: Postgres, p: props("postgres.hosts", "h:1", "sqldb.isolation", "repeatable-read"), pool: 16, isolation: "repeatable-read"},
		{name: "isolation unset is the server's default", d: Postgres, p: props("postgres.hosts", "h:1"), pool: 16},
		{name: "isolation unknown", d: Postgres, p: props("postgres.hosts", "h:1", "sqldb.isolation", "snapshot"), want: "sqldb.isolation"},
		{name: "isolation in SQL spelling", d: Galera, p: props("galera.hosts", "h:1", "sqldb.isolation", "REPEATABLE READ"), want: "want read-committed, repeatable-read, serializable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseConfig(tc.d, tc.p)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if cfg.poolSize != tc.pool {
					t.Fatalf("pool = %d, want %d", cfg.poolSize, tc.pool)
				}
				if cfg.isolation != tc.isolation {
					t.Fatalf("isolation = %q, want %q", cfg.isolation, tc.isolation)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name  string
		d     Dialect
		err   error
		write bool
		want  outcome.Class
		stale bool
	}{
		{"pg serialization", Postgres, &pgconn.PgError{Code: "40001"}, true, outcome.Conflict, false},
		{"pg deadlock", Postgres, &pgconn.PgError{Code: "40P01"}, true, outcome.Conflict, false},
		{"pg read-only after failover", Postgres, &pgconn.PgError{Code: "25006"}, true, outcome.Rejected, true},
		{"pg shutdown", Postgres, &pgconn.PgError{Code: "57P01"}, false, outcome.Unavailable, true},
		{"pg duplicate", Postgres, &pgconn.PgError{Code: "23505"}, true, outcome.Rejected, false},
		{"pg refused", Postgres, fmt.Errorf("dial: %w", syscall.ECONNREFUSED), false, outcome.Unavailable, true},
		{"pg write lost connection", Postgres, fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true, outcome.Timeout, true},
		{"pg read lost connection", Postgres, fmt.Errorf("read: %w", syscall.ECONNRESET), false, outcome.Unavailable, true},
		{"pg bad conn", Postgres, driver.ErrBadConn, true, outcome.Unavailable, false},
		{"deadline", Postgres, context.DeadlineExceeded, true, outcome.Timeout, false},
		{"galera certification", Galera, &mysql.MySQLError{Number: 1213}, true, outcome.Conflict, false},
		{"galera non-primary", Galera, &mysql.MySQLError{Number: 1047}, false, outcome.Unavailable, true},
		{"galera duplicate", Galera, &mysql.MySQLError{Number: 1062}, true, outcome.Rejected, false},
		{"galera write invalid conn", Galera, mysql.ErrInvalidConn, true, outcome.Timeout, true},
		{"galera read invalid conn", Galera, mysql.ErrInvalidConn, false, outcome.Unavailable, true},
		{"galera bad conn", Galera, driver.ErrBadConn, true, outcome.Unavailable, false},
		{"galera other", Galera, errors.New("strange"), false, outcome.Other, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, stale := tc.d.classify(tc.err, tc.write)
			if got != tc.want || stale != tc.stale {
				t.Fatalf("classify(%v, write=%v) = %v stale=%v, want %v stale=%v", tc.err, tc.write, got, stale, tc.want, tc.stale)
			}
		})
	}
}

func TestStatements(t *testing.T) {
	if got := Postgres.createTable("usertable", []string{"field0", "field1"}); got != "CREATE TABLE IF NOT EXISTS usertable (ycsb_key VARCHAR(255) PRIMARY KEY, field0 BYTEA, field1 BYTEA)" {
		t.Errorf("postgres table: %s", got)
	}
	if got := Galera.createTable("usertable", []string{"field0"}); !strings.HasSuffix(got, "field0 LONGBLOB) ENGINE=InnoDB") {
		t.Errorf("galera table: %s", got)
	}
	if Postgres.placeholder(3) != "$3" || Galera.placeholder(3) != "?" {
		t.Errorf("placeholders %s %s", Postgres.placeholder(3), Galera.placeholder(3))
	}
	for _, s := range []string{"usertable", "field_0", "_x"} {
		if !ident(s) {
			t.Errorf("ident(%q) = false", s)
		}
	}
	for _, s := range []string{"", "0x", "a b", "a;drop", strings.Repeat("a", 64)} {
		if ident(s) {
			t.Errorf("ident(%q) = true", s)
		}
	}
}
