package hbase

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/faultbench/faultbench/internal/hbasethrift"
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

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		kv      []string
		check   func(config) bool
		wantErr string
	}{
		{"defaults", []string{PropThrift, "127.0.0.4:9090"}, func(c config) bool {
			return c.family == "family" && c.conns == 64 && c.durability == hbasethrift.TDurability_USE_DEFAULT && c.timeout.Seconds() == 60
		}, ""},
		{"skip wal", []string{PropThrift, "h:1", PropDurability, "SKIP_WAL"}, func(c config) bool { return c.durability == hbasethrift.TDurability_SKIP_WAL }, ""},
		{"gateway settings reported", []string{PropThrift, "h:1", "hbase.client-retries", "3"}, func(c config) bool { return c.gateway["hbase.client-retries"] == "3" }, ""},
		{"no gateway", nil, nil, "is not set"},
		{"bad durability", []string{PropThrift, "h:1", PropDurability, "sometimes"}, nil, "skip_wal"},
		{"bad connections", []string{PropThrift, "h:1", PropConnections, "0"}, nil, "connections"},
		{"unknown key", []string{PropThrift, "h:1", "hbase.bogus", "1"}, nil, "unknown hbase property"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig(props(tt.kv...))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Errorf("config %+v", c)
			}
		})
	}
}

func TestClassOf(t *testing.T) {
	ioErr := func(msg string) error { return &hbasethrift.TIOError{Message: &msg} }
	tests := []struct {
		name string
		err  error
		want outcome.Class
	}{
		{"nil", nil, outcome.OK},
		{"not found", fmt.Errorf("key: %w", outcome.ErrNotFound), outcome.NotFound},
		{"operation timeout", ioErr("org.apache.hadoop.hbase.client.RetriesExhaustedException: Failed after attempts=16, exceptions: callTimeout=30000"), outcome.Timeout},
		{"region not served", ioErr("org.apache.hadoop.hbase.NotServingRegionException: usertable,,1 is not online"), outcome.Unavailable},
		{"connection refused", ioErr("java.net.ConnectException: Connection refused"), outcome.Unavailable},
		{"no table", ioErr("org.apache.hadoop.hbase.TableNotFoundException: nope"), outcome.Rejected},
		{"something else", ioErr("java.lang.IllegalStateException: odd"), outcome.Other},
		{"illegal argument", &hbasethrift.TIllegalArgument{}, outcome.Rejected},
		{"gateway timeout", thrift.NewTTransportException(thrift.TIMED_OUT, "i/o timeout"), outcome.Timeout},
		{"gateway gone", thrift.NewTTransportExceptionFromError(&os.PathError{Op: "read", Err: errors.New("x")}), outcome.Unavailable},
		{"deadline", context.DeadlineExceeded, outcome.Timeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classOf(tt.err); got != tt.want {
				t.Errorf("classOf(%v) = %v, want %v", tt.err, got, tt.want)
			}
			if tt.err != nil {
				if got := outcome.ClassOf(classify("read", tt.err)); got != tt.want {
					t.Errorf("classify: %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestNewWithoutGateway(t *testing.T) {
	// a port nobody listens on: New fails with a clear message, no panic
	_, err := New(context.Background(), props(PropThrift, "127.0.0.1:1"))
	if err == nil || !strings.Contains(err.Error(), "thrift gateway") {
		t.Fatalf("err = %v", err)
	}
}
