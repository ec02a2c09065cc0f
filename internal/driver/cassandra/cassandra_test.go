package cassandra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/gocql/gocql"

	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
)

// codeErr is a server error frame of a given code, as gocql reports those
// it has no type for (it implements gocql.RequestError).
type codeErr int

func (e codeErr) Code() int       { return int(e) }
func (e codeErr) Message() string { return fmt.Sprintf("code %#x", int(e)) }
func (e codeErr) Error() string   { return e.Message() }

func TestClassify(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name string
		err  error
		want outcome.Class
	}{
		{"nil", nil, outcome.OK},
		{"unavailable", &gocql.RequestErrUnavailable{Consistency: gocql.Quorum, Required: 2, Alive: 1}, outcome.Unavailable},
		{"write timeout", &gocql.RequestErrWriteTimeout{Consistency: gocql.Quorum, Received: 1, BlockFor: 2, WriteType: "SIMPLE"}, outcome.Timeout},
		{"read timeout", &gocql.RequestErrReadTimeout{Consistency: gocql.One, BlockFor: 1}, outcome.Timeout},
		{"read failure", &gocql.RequestErrReadFailure{NumFailures: 1}, outcome.Other},
		{"write failure", &gocql.RequestErrWriteFailure{NumFailures: 1}, outcome.Other},
		{"client timeout", gocql.ErrTimeoutNoResponse, outcome.Timeout},
		{"context deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), outcome.Timeout},
		{"no connections", gocql.ErrNoConnections, outcome.Unavailable},
		{"connection closed", gocql.ErrConnectionClosed, outcome.Unavailable},
		{"session closed", gocql.ErrSessionClosed, outcome.Unavailable},
		{"refused dial", refused, outcome.Unavailable},
		{"eof", io.EOF, outcome.Unavailable},
		{"overloaded", codeErr(codeOverloaded), outcome.Rejected},
		{"bootstrapping", codeErr(codeBootstrapping), outcome.Unavailable},
		{"invalid query", codeErr(codeInvalid), outcome.Rejected},
		{"server error", codeErr(codeServer), outcome.Other},
		{"anything else", errors.New("boom"), outcome.Other},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := classOf(tc.err); got != tc.want {
				t.Errorf("classOf(%v) = %v, want %v", tc.err, got, tc.want)
			}
			if got := outcome.ClassOf(classify("update", tc.err)); got != tc.want {
				t.Errorf("ClassOf(classify(%v)) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestWriteTimeoutIsUnknownOutcome(t *testing.T) {
	err := classify("insert", fmt.Errorf("wrapped: %w", &gocql.RequestErrWriteTimeout{Consistency: gocql.Quorum, Received: 1, BlockFor: 2, WriteType: "SIMPLE"}))
	var wt *WriteTimeoutError
	if !errors.As(err, &wt) {
		t.Fatalf("classify(write timeout) = %T %v, want a *WriteTimeoutError", err, err)
	}
	if !wt.UnknownOutcome() || wt.Received != 1 || wt.BlockFor != 2 || wt.WriteType != "SIMPLE" || wt.Consistency != "QUORUM" {
		t.Errorf("WriteTimeoutError = %+v", wt)
	}
	for _, want := range []string{"insert", "timeout", "outcome unknown", "1 of 2", "QUORUM", "SIMPLE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	var rt *gocql.RequestErrWriteTimeout
	if !errors.As(err, &rt) {
		t.Error("the gocql error is not reachable through errors.As")
	}
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		props   map[string]string
		wantErr string // substring; "" means valid
		check   func(t *testing.T, c config)
	}{
		{"defaults", map[string]string{PropHosts: "127.0.0.1:9042,127.0.0.2:9042"}, "", func(t *testing.T, c config) {
			if len(c.hosts) != 2 || c.port != 9042 || c.keyspace != "ycsb" || c.table != "usertable" ||
				c.readCL != gocql.One || c.writeCL != gocql.One || !c.createTable || !c.tokenAware || c.numConns != 2 {
				t.Errorf("config = %+v", c)
			}
			if len(c.fields) != 11 || c.fields[0] != "field0" || c.fields[9] != "field9" || c.fields[10] != "fbtag" {
				t.Errorf("fields = %v, want field0..field9 and fbtag", c.fields)
			}
		}},
		{"consistency sets both", map[string]string{PropHosts: "h:1", PropConsistency: "quorum"}, "", func(t *testing.T, c config) {
			if c.readCL != gocql.Quorum || c.writeCL != gocql.Quorum {
				t.Errorf("read %v write %v, want QUORUM both", c.readCL, c.writeCL)
			}
		}},
		{"specific wins", map[string]string{PropHosts: "h:1", PropConsistency: "QUORUM", PropWriteConsistency: "ALL"}, "", func(t *testing.T, c config) {
			if c.readCL != gocql.Quorum || c.writeCL != gocql.All {
				t.Errorf("read %v write %v, want QUORUM and ALL", c.readCL, c.writeCL)
			}
		}},
		{"fieldcount", map[string]string{PropHosts: "h:1", "fieldcount": "2", "fieldnameprefix": "f"}, "", func(t *testing.T, c config) {
			if strings.Join(c.fields, ",") != "f0,f1,fbtag" {
				t.Errorf("fields = %v", c.fields)
			}
		}},
		{"launcher option accepted", map[string]string{PropHosts: "h:1", "cassandra.rf": "3"}, "", func(*testing.T, config) {}},
		{"no hosts", nil, "cassandra.hosts is not set", nil},
		{"bad host", map[string]string{PropHosts: "localhost"}, "cassandra.hosts", nil},
		{"mixed ports", map[string]string{PropHosts: "a:9042,b:9043"}, "same native port", nil},
		{"unknown key", map[string]string{PropHosts: "h:1", "cassandra.consistancy": "ONE"}, "cassandra.consistancy", nil},
		{"undeclared launcher-like key", map[string]string{PropHosts: "h:1", "cassandra.heap": "1g"}, "cassandra.heap", nil},
		{"bad consistency", map[string]string{PropHosts: "h:1", PropConsistency: "MOST"}, "cassandra.consistency", nil},
		{"read ANY", map[string]string{PropHosts: "h:1", PropReadConsistency: "ANY"}, "cassandra.readconsistency", nil},
		{"ANY for both", map[string]string{PropHosts: "h:1", PropConsistency: "ANY"}, "cassandra.consistency", nil},
		{"bad keyspace", map[string]string{PropHosts: "h:1", PropKeyspace: "ks;drop"}, "cassandra.keyspace", nil},
		{"bad table", map[string]string{PropHosts: "h:1", "table": "user-table"}, "table", nil},
		{"bad timeout", map[string]string{PropHosts: "h:1", PropTimeout: "0"}, "cassandra.timeout", nil},
		{"bad numconns", map[string]string{PropHosts: "h:1", PropNumConns: "0"}, "cassandra.numconns", nil},
		{"bad createtable", map[string]string{PropHosts: "h:1", PropCreateTable: "maybe"}, "cassandra.createtable", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := properties.New()
			for k, v := range tc.props {
				p.Set(k, v)
			}
			p.Declare("cassandra.rf") // as the targets registry does with the launcher's options
			c, err := parseConfig(p, "fbtag")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestStatements(t *testing.T) {
	d := &Driver{ks: "ycsb", queries: map[string]string{}}
	tests := []struct {
		op   string
		cols []string
		want string
	}{
		{"read", []string{"field0", "field1"}, "SELECT field0, field1 FROM ycsb.usertable WHERE y_id = ?"},
		{"scan", []string{"field0"}, "SELECT field0 FROM ycsb.usertable WHERE token(y_id) >= token(?) LIMIT ?"},
		{"update", []string{"field0", "field1"}, "UPDATE ycsb.usertable SET field0 = ?, field1 = ? WHERE y_id = ?"},
		{"insert", []string{"field0", "field1"}, "INSERT INTO ycsb.usertable (y_id, field0, field1) VALUES (?, ?, ?)"},
		{"delete", nil, "DELETE FROM ycsb.usertable WHERE y_id = ?"},
	}
	for _, tc := range tests {
		t.Run(tc.op, func(t *testing.T) {
			if got := d.stmt(tc.op, "usertable", tc.cols); got != tc.want {
				t.Errorf("stmt = %q, want %q", got, tc.want)
			}
		})
	}
	if _, _, err := sortedFields("update", map[string][]byte{"field0": nil, "x; DROP": nil}); outcome.ClassOf(err) != outcome.Rejected {
		t.Errorf("a field name that is no identifier: err = %v, want class rejected", err)
	}
}

// TestIsIdent checks the hand-written identifier test against the
// regular expression it replaces.
func TestIsIdent(t *testing.T) {
	for _, s := range []string{"", "a", "field0", "Field_9", "0field", "_f", "f-1", "f 1", "f;", "é",
		strings.Repeat("a", 48), strings.Repeat("a", 49), "a" + strings.Repeat("_", 47), "y_id"} {
		t.Run(s, func(t *testing.T) {
			if got, want := isIdent(s), identRE.MatchString(s); got != want {
				t.Fatalf("isIdent(%q) = %v, identRE says %v", s, got, want)
			}
		})
	}
}
