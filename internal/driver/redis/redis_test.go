package redis

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
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
)

// serverErr is an error reply as go-redis reports one (it implements
// goredis.Error), for the classification table.
type serverErr string

func (e serverErr) Error() string { return string(e) }
func (serverErr) RedisError()     {}

func TestClassify(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	ioTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	cases := []struct {
		err  error
		want outcome.Class
	}{
		{nil, outcome.OK},
		{context.DeadlineExceeded, outcome.Timeout},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), outcome.Timeout},
		{ioTimeout, outcome.Timeout},
		{goredis.ErrPoolTimeout, outcome.Timeout},
		{&WaitError{Wanted: 1, Acked: 0, Timeout: time.Second}, outcome.Timeout},
		{refused, outcome.Unavailable},
		{reset, outcome.Unavailable},
		{io.EOF, outcome.Unavailable},
		{io.ErrUnexpectedEOF, outcome.Unavailable},
		{serverErr("CLUSTERDOWN The cluster is down"), outcome.Unavailable},
		{serverErr("CLUSTERDOWN Hash slot not served"), outcome.Unavailable},
		{serverErr("LOADING Redis is loading the dataset in memory"), outcome.Unavailable},
		{serverErr("TRYAGAIN Multiple keys request during rehashing of slot"), outcome.Unavailable},
		{serverErr("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), outcome.Unavailable},
		{serverErr("NOREPLICAS Not enough good replicas to write."), outcome.Unavailable},
		{serverErr("MOVED 3999 127.0.0.1:6381"), outcome.Unavailable},
		{serverErr("ASK 3999 127.0.0.1:6381"), outcome.Unavailable},
		{serverErr("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."), outcome.Unavailable},
		{serverErr("READONLY You can't write against a read only replica."), outcome.Rejected},
		{serverErr("OOM command not allowed when used memory > 'maxmemory'."), outcome.Rejected},
		{serverErr("ERR max number of clients reached"), outcome.Rejected},
		{serverErr("NOAUTH Authentication required."), outcome.Rejected},
		{serverErr("WRONGPASS invalid username-password pair or user is disabled."), outcome.Rejected},
		{serverErr("NOPERM this user has no permissions to run the 'hset' command"), outcome.Rejected},
		{serverErr("WRONGTYPE Operation against a key holding the wrong kind of value"), outcome.Other},
		{serverErr("BUSYGROUP Consumer Group name already exists"), outcome.Other},
		{errors.New("something else"), outcome.Other},
		{context.Canceled, outcome.Other},
	}
	for _, tc := range cases {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
		// the driver's classified errors keep their class through ClassOf
		if tc.err != nil {
			if got := outcome.ClassOf(outcome.Classified(Classify(tc.err), "op", tc.err)); got != tc.want {
				t.Errorf("ClassOf(Classified(%v)) = %v, want %v", tc.err, got, tc.want)
			}
		}
	}
}

func props(kv ...string) *properties.Properties {
	p := properties.New()
	for i := 0; i+1 < len(kv); i += 2 {
		p.Set(kv[i], kv[i+1])
	}
	return p
}

func TestConfig(t *testing.T) {
	launcherKeys := props(PropAddr, "127.0.0.1:7000, 127.0.0.1:7001", "threadcount", "32", PropMode, "Cluster",
		"redis.cluster-node-timeout", "500")
	launcherKeys.Declare("redis.cluster-node-timeout") // as experiment.Prepare does for the launcher's option keys
	c, err := parseConfig(launcherKeys)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.addrs) != 2 || c.mode != ModeCluster || c.poolSize != 36 || c.wait != 0 || c.waitTimeout != time.Second ||
		c.readTimeout != 0 || c.dialTimeout != 5*time.Second || c.maxRetries != 0 || c.maxRedirects != 3 {
		t.Errorf("config = %+v", c)
	}
	c, err = parseConfig(props(PropAddr, "127.0.0.1:7000", PropWait, "1", PropWaitTimeout, "250", PropPoolSize, "8"))
	if err != nil {
		t.Fatal(err)
	}
	if c.wait != 1 || c.waitTimeout != 250*time.Millisecond || c.poolSize != 8 || c.mode != ModeStandalone {
		t.Errorf("config = %+v", c)
	}
	if c, _ := parseConfig(props(PropAddr, "127.0.0.1:7000")); c.poolSize != 64 {
		t.Errorf("default pool size = %d, want 64", c.poolSize)
	}

	bad := []struct {
		p    *properties.Properties
		want string
	}{
		{props(), "faultbench cluster up redis-cluster"},
		{props(PropAddr, "localhost"), "not host:port"},
		{props(PropAddr, "127.0.0.1:99999"), "port must be"},
		{props(PropAddr, "127.0.0.1:1", PropMode, "sentinel"), "standalone or cluster"},
		{props(PropAddr, "127.0.0.1:1", "redis.wiat", "1"), "unknown redis property"},
		{props(PropAddr, "127.0.0.1:1", PropWait, "1", PropWaitTimeout, "0"), "blocks forever"},
		{props(PropAddr, "127.0.0.1:1", PropWait, "-1"), "between 0 and 64"},
		{props(PropAddr, "127.0.0.1:1", PropPoolSize, "x"), "not an integer"},
		{props(PropAddr, "127.0.0.1:1", PropDialTimeout, "soon"), "not a duration"},
		{props(PropAddr, "127.0.0.1:1", PropWait, "1", PropReadTimeout, "500ms"), "longer than"},
	}
	for _, tc := range bad {
		_, err := parseConfig(tc.p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseConfig(%v) = %v, want error containing %q", tc.p.Map(), err, tc.want)
		}
	}
	p := props(PropAddr, "127.0.0.1:1", PropWait, "2")
	if _, err := parseConfig(p); err != nil {
		t.Fatal(err)
	}
	if u := p.Unknown(); len(u) != 0 {
		t.Errorf("undeclared after parseConfig: %v", u)
	}
}

func TestRecordCopies(t *testing.T) {
	r := record(map[string]string{"a": "xx", "b": "yyy"})
	if string(r["a"]) != "xx" || string(r["b"]) != "yyy" {
		t.Fatalf("record = %q", r)
	}
	// appending to one value must not overwrite another
	_ = append(r["a"], 'Z')
	_ = append(r["b"], 'Z')
	if string(r["a"]) != "xx" || string(r["b"]) != "yyy" {
		t.Fatalf("values alias each other: %q", r)
	}
	if r := recordOf([]string{"a", "b", "c"}, []any{"1", nil, "3"}); len(r) != 2 || string(r["a"]) != "1" || string(r["c"]) != "3" {
		t.Fatalf("recordOf = %q", r)
	}
	if r := recordOf([]string{"a"}, []any{nil}); r != nil {
		t.Fatalf("recordOf(all nil) = %q, want nil", r)
	}
	if got := testing.AllocsPerRun(100, func() { _ = record(map[string]string{"a": "xx"}) }); got > 4 {
		t.Errorf("record allocates %v times, want at most 4", got)
	}
}
