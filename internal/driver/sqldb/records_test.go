package sqldb

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/launcher/galera"
	"github.com/faultbench/faultbench/internal/launcher/postgresha"
	"github.com/faultbench/faultbench/internal/outcome"
)

// TestRecords checks the YCSB operations' results on PostgreSQL (the pgx
// path) and MariaDB (database/sql): a read returns exactly the written fields (no key, NULL
// fields left out), updates change one field, a missing key is NotFound,
// a scan returns records in key order, a delete removes the record, and a
// field added later is read back by a read of every field (the cached
// statement is rebuilt).
func TestRecords(t *testing.T) {
	for _, tc := range []struct {
		name string
		up   func(t *testing.T) (*Driver, error)
	}{
		{"postgres", func(t *testing.T) (*Driver, error) {
			c := upOrSkip(t, postgresha.Launcher{}, 1)
			return open(context.Background(), Postgres, props("postgres.hosts", strings.Join(postgresha.Endpoints(c), ","), "fieldcount", "3"))
		}},
		{"mariadb", func(t *testing.T) (*Driver, error) {
			c := upOrSkip(t, galera.Launcher{}, 1)
			return open(context.Background(), Galera, props("galera.hosts", strings.Join(c.Endpoints(), ","), "fieldcount", "3"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drv, err := tc.up(t)
			if err != nil {
				t.Fatal(err)
			}
			defer drv.Close()
			testRecords(t, drv)
		})
	}
}

func testRecords(t *testing.T, drv *Driver) {
	ctx := context.Background()
	const tbl = "recordtable"
	want := func(t *testing.T, got map[string][]byte, w map[string]string) {
		t.Helper()
		if len(got) != len(w) {
			t.Fatalf("record %q: want %v", got, w)
		}
		for k, v := range w {
			if string(got[k]) != v {
				t.Fatalf("record %q: field %s = %q, want %q", got, k, got[k], v)
			}
		}
	}
	steps := []struct {
		name string
		do   func(t *testing.T)
	}{
		{"insert and read every field", func(t *testing.T) {
			for _, k := range []string{"k1", "k2", "k3"} {
				if err := drv.Insert(ctx, tbl, k, map[string][]byte{"field0": []byte("a" + k), "field1": []byte("b" + k)}); err != nil {
					t.Fatal(err)
				}
			}
			r, err := drv.Read(ctx, tbl, "k1", nil)
			if err != nil {
				t.Fatal(err)
			}
			want(t, r, map[string]string{"field0": "ak1", "field1": "bk1"}) // field2 NULL: left out
		}},
		{"read some fields", func(t *testing.T) {
			r, err := drv.Read(ctx, tbl, "k2", []string{"field1"})
			if err != nil {
				t.Fatal(err)
			}
			want(t, r, map[string]string{"field1": "bk2"})
		}},
		{"update one field", func(t *testing.T) {
			if err := drv.Update(ctx, tbl, "k1", map[string][]byte{"field2": []byte("c")}); err != nil {
				t.Fatal(err)
			}
			r, err := drv.Read(ctx, tbl, "k1", nil)
			if err != nil {
				t.Fatal(err)
			}
			want(t, r, map[string]string{"field0": "ak1", "field1": "bk1", "field2": "c"})
		}},
		{"missing key", func(t *testing.T) {
			if _, err := drv.Read(ctx, tbl, "nope", nil); !errors.Is(err, outcome.ErrNotFound) {
				t.Fatalf("read: %v, want not found", err)
			}
			if err := drv.Update(ctx, tbl, "nope", map[string][]byte{"field0": nil}); !errors.Is(err, outcome.ErrNotFound) {
				t.Fatalf("update: %v, want not found", err)
			}
		}},
		{"duplicate insert rejected", func(t *testing.T) {
			err := drv.Insert(ctx, tbl, "k1", map[string][]byte{"field0": []byte("x")})
			if outcome.ClassOf(err) != outcome.Rejected {
				t.Fatalf("insert of an existing key: %v, want Rejected", err)
			}
		}},
		{"bad field name rejected", func(t *testing.T) {
			if _, err := drv.Read(ctx, tbl, "k1", []string{"field0,field1"}); outcome.ClassOf(err) != outcome.Rejected {
				t.Fatalf("read of field %q: %v, want Rejected", "field0,field1", err)
			}
		}},
		{"scan in key order", func(t *testing.T) {
			rs, err := drv.Scan(ctx, tbl, "k2", 5, []string{"field0"})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 2 {
				t.Fatalf("scan from k2: %d records, want 2", len(rs))
			}
			want(t, rs[0], map[string]string{"field0": "ak2"})
			want(t, rs[1], map[string]string{"field0": "ak3"})
		}},
		{"a field added later is read", func(t *testing.T) {
			if err := drv.Update(ctx, tbl, "k3", map[string][]byte{"lwtag": []byte("t")}); err != nil {
				t.Fatal(err)
			}
			r, err := drv.Read(ctx, tbl, "k3", nil)
			if err != nil {
				t.Fatal(err)
			}
			want(t, r, map[string]string{"field0": "ak3", "field1": "bk3", "lwtag": "t"})
		}},
		{"delete", func(t *testing.T) {
			if err := drv.Delete(ctx, tbl, "k2"); err != nil {
				t.Fatal(err)
			}
			if _, err := drv.Read(ctx, tbl, "k2", nil); !errors.Is(err, outcome.ErrNotFound) {
				t.Fatalf("read after delete: %v, want not found", err)
			}
		}},
	}
	for _, s := range steps {
		t.Run(s.name, s.do) // in order: each step builds on the last
	}
}
