package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/faultbench/faultbench/internal/driver/etcd"
	"github.com/faultbench/faultbench/internal/launcher"
	etcdlauncher "github.com/faultbench/faultbench/internal/launcher/etcd"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
)

// TestMain lets the test binary stand in for the faultbench binary, so the
// etcd launcher can start real members as `<self> node etcd ...`.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "node" && os.Args[2] == "etcd" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		err := etcdlauncher.RunNode(ctx, os.Args[3:])
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// cluster starts a 3-member etcd cluster that is removed when the test ends.
func cluster(t *testing.T) (*launcher.Cluster, *launcher.Env) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real etcd processes")
	}
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	c, err := etcdlauncher.Launcher{}.Up(ctx, env, launcher.Spec{Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := launcher.Down(context.Background(), c, 5*time.Second); err != nil {
			t.Errorf("Down: %v", err)
		}
	})
	return c, env
}

func newDriver(t *testing.T, c *launcher.Cluster, props ...string) *etcd.Driver {
	t.Helper()
	p := properties.New()
	p.Set(etcd.PropEndpoints, strings.Join(c.Endpoints(), ","))
	for i := 0; i+1 < len(props); i += 2 {
		p.Set(props[i], props[i+1])
	}
	d, err := etcd.NewDriver(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func opCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func rec(kv ...string) map[string][]byte {
	m := map[string][]byte{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = []byte(kv[i+1])
	}
	return m
}

func sameRec(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, func(x, y []byte) bool { return string(x) == string(y) })
}

func TestNewValidatesProperties(t *testing.T) {
	for _, tc := range []struct {
		props []string
		want  string
	}{
		{nil, "faultbench cluster up etcd"},
		{[]string{etcd.PropEndpoints, "localhost"}, "not host:port"},
		{[]string{etcd.PropEndpoints, "127.0.0.1:1", etcd.PropUpdate, "replace"}, "merge or overwrite"},
		{[]string{etcd.PropEndpoints, "127.0.0.1:1", etcd.PropClients, "0"}, "between 1 and 64"},
		{[]string{etcd.PropEndpoints, "127.0.0.1:1", etcd.PropDialTimeout, "soon"}, etcd.PropDialTimeout},
		{[]string{etcd.PropEndpoints, "127.0.0.1:1", etcd.PropSerializable, "maybe"}, etcd.PropSerializable},
		{[]string{etcd.PropEndpoints, "127.0.0.1:1", etcd.PropMaxRetries, "-1"}, etcd.PropMaxRetries},
		{[]string{etcd.PropEndpoints, "127.0.0.1:1", etcd.PropKeepalive, "5s"}, "at least 10s"},
		{[]string{etcd.PropEndpoints, "127.0.0.1:1", etcd.PropRequireLeader, "maybe"}, etcd.PropRequireLeader},
	} {
		p := properties.New()
		for i := 0; i+1 < len(tc.props); i += 2 {
			p.Set(tc.props[i], tc.props[i+1])
		}
		if _, err := etcd.New(context.Background(), p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%v) = %v, want an error containing %q", tc.props, err, tc.want)
		}
	}
	// Nobody listens on a closed port: New says so within the dial timeout.
	p := properties.New()
	p.Set(etcd.PropEndpoints, "127.0.0.1:1")
	p.Set(etcd.PropDialTimeout, "500ms")
	start := time.Now()
	_, err := etcd.New(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "no etcd member answers") || !strings.Contains(err.Error(), "faultbench cluster up etcd") {
		t.Errorf("New against nothing: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("New against nothing took %v", d)
	}
	if unknown := p.Unknown(); len(unknown) != 0 {
		t.Errorf("properties not declared: %v", unknown)
	}
}

func TestDriver(t *testing.T) {
	c, _ := cluster(t)
	d := newDriver(t, c)

	t.Run("crud", func(t *testing.T) {
		ctx := opCtx(t, 10*time.Second)
		if err := d.Insert(ctx, "usertable", "user1", rec("field0", "a", "field1", "b")); err != nil {
			t.Fatal(err)
		}
		got, err := d.Read(ctx, "usertable", "user1", nil)
		if err != nil || !sameRec(got, rec("field0", "a", "field1", "b")) {
			t.Fatalf("read all: %v %v", got, err)
		}
		got, err = d.Read(ctx, "usertable", "user1", []string{"field1"})
		if err != nil || !sameRec(got, rec("field1", "b")) {
			t.Fatalf("read field1: %v %v", got, err)
		}
		_, err = d.Read(ctx, "usertable", "nobody", nil)
		if !errors.Is(err, outcome.ErrNotFound) || outcome.ClassOf(err) != outcome.NotFound {
			t.Fatalf("read missing: %v (class %s)", err, outcome.ClassOf(err))
		}
		// Tables are separate.
		if _, err = d.Read(ctx, "othertable", "user1", nil); !errors.Is(err, outcome.ErrNotFound) {
			t.Fatalf("read in another table: %v", err)
		}
		if err := d.Delete(ctx, "usertable", "user1"); err != nil {
			t.Fatal(err)
		}
		if _, err = d.Read(ctx, "usertable", "user1", nil); !errors.Is(err, outcome.ErrNotFound) {
			t.Fatalf("read after delete: %v", err)
		}
		if err := d.Delete(ctx, "usertable", "user1"); err != nil {
			t.Fatalf("deleting a missing record: %v", err)
		}
	})

	t.Run("merge update", func(t *testing.T) {
		ctx := opCtx(t, 10*time.Second)
		if err := d.Insert(ctx, "usertable", "m1", rec("field0", "a", "field1", "b")); err != nil {
			t.Fatal(err)
		}
		if err := d.Update(ctx, "usertable", "m1", rec("field1", "B", "field2", "C")); err != nil {
			t.Fatal(err)
		}
		got, err := d.Read(ctx, "usertable", "m1", nil)
		if want := rec("field0", "a", "field1", "B", "field2", "C"); err != nil || !sameRec(got, want) {
			t.Fatalf("after merge: %v %v, want %v", got, err, want)
		}
		// A missing record is created.
		if err := d.Update(ctx, "usertable", "m2", rec("field3", "x")); err != nil {
			t.Fatal(err)
		}
		if got, err := d.Read(ctx, "usertable", "m2", nil); err != nil || !sameRec(got, rec("field3", "x")) {
			t.Fatalf("update of a missing record: %v %v", got, err)
		}
	})

	t.Run("concurrent merges keep every acknowledged field", func(t *testing.T) {
		ctx := opCtx(t, 30*time.Second)
		if err := d.Insert(ctx, "usertable", "hot", rec("base", "0")); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		acked := rec("base", "0")
		conflicts := 0
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 10 {
					f, v := fmt.Sprintf("w%d_%d", w, i), fmt.Sprint(i)
					err := d.Update(ctx, "usertable", "hot", rec(f, v))
					mu.Lock()
					switch {
					case err == nil:
						acked[f] = []byte(v)
					case outcome.ClassOf(err) == outcome.Conflict:
						conflicts++
					default:
						t.Errorf("update %s: %v", f, err)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		got, err := d.Read(ctx, "usertable", "hot", nil)
		if err != nil {
			t.Fatal(err)
		}
		for f, v := range acked {
			if string(got[f]) != string(v) {
				t.Errorf("acknowledged field %s=%s lost (have %q)", f, v, got[f])
			}
		}
		t.Logf("80 concurrent merge updates: %d acknowledged, %d conflicts", len(acked)-1, conflicts)
	})

	t.Run("overwrite update", func(t *testing.T) {
		ow := newDriver(t, c, etcd.PropUpdate, "overwrite", etcd.PropClients, "3")
		ctx := opCtx(t, 10*time.Second)
		if err := ow.Insert(ctx, "usertable", "o1", rec("field0", "a", "field1", "b")); err != nil {
			t.Fatal(err)
		}
		if err := ow.Update(ctx, "usertable", "o1", rec("field1", "B")); err != nil {
			t.Fatal(err)
		}
		if got, err := ow.Read(ctx, "usertable", "o1", nil); err != nil || !sameRec(got, rec("field1", "B")) {
			t.Fatalf("after overwrite: %v %v", got, err)
		}
	})

	t.Run("scan", func(t *testing.T) {
		ctx := opCtx(t, 10*time.Second)
		keys := make([]string, 10)
		for i := range keys {
			keys[i] = fmt.Sprintf("user%02d", i)
		}
		shuffled := append([]string(nil), keys...)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for _, k := range shuffled {
			if err := d.Insert(ctx, "scantable", k, rec("key", k, "other", "x")); err != nil {
				t.Fatal(err)
			}
		}
		// Neighbours that must not show up: another table sorting right after.
		if err := d.Insert(ctx, "scantable2", "user00", rec("key", "intruder")); err != nil {
			t.Fatal(err)
		}
		got, err := d.Scan(ctx, "scantable", "user03", 4, []string{"key"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range got {
			names = append(names, string(r["key"]))
			if len(r) != 1 {
				t.Errorf("scan with fields [key] returned %v", r)
			}
		}
		if strings.Join(names, ",") != "user03,user04,user05,user06" {
			t.Errorf("scan from user03, 4 records: %v", names)
		}
		got, err = d.Scan(ctx, "scantable", "user08", 100, nil)
		if err != nil || len(got) != 2 || string(got[1]["key"]) != "user09" || len(got[0]) != 2 {
			t.Errorf("scan past the table's end: %v %v", got, err)
		}
		got, err = d.Scan(ctx, "scantable", "", 3, nil)
		if err != nil || len(got) != 3 || string(got[0]["key"]) != "user00" {
			t.Errorf("scan from the start: %v %v", got, err)
		}
	})

	t.Run("serializable reads", func(t *testing.T) {
		sd := newDriver(t, c, etcd.PropSerializable, "true")
		ctx := opCtx(t, 10*time.Second)
		if err := sd.Insert(ctx, "usertable", "s1", rec("f", "v")); err != nil {
			t.Fatal(err)
		}
		// A serializable read may be stale; poll until the member has applied it.
		deadline := time.Now().Add(5 * time.Second)
		for {
			got, err := sd.Read(ctx, "usertable", "s1", nil)
			if err == nil && sameRec(got, rec("f", "v")) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("serializable read: %v %v", got, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("closed driver", func(t *testing.T) {
		cd := newDriver(t, c)
		if err := cd.Close(); err != nil {
			t.Fatal(err)
		}
		if err := cd.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if _, err := cd.Read(opCtx(t, 200*time.Millisecond), "usertable", "k", nil); err == nil {
			t.Error("read on a closed driver succeeded")
		}
	})

	t.Run("leader", func(t *testing.T) {
		if err := (etcdlauncher.Launcher{}).Refresh(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		ls := c.WithRole(launcher.RoleLeader)
		if len(ls) != 1 {
			t.Fatalf("leaders %v", ls)
		}
		n, _ := c.Node(ls[0])
		ep, err := d.Leader(opCtx(t, 5*time.Second))
		if err != nil || ep != n.Addr {
			t.Errorf("Leader() = %q, %v; the launcher says %s at %s", ep, err, n.Name, n.Addr)
		}
	})
}

// TestFaultClasses checks the classes of real failures: a paused cluster
// times out, a dead cluster is unavailable.
func TestFaultClasses(t *testing.T) {
	c, _ := cluster(t)
	d := newDriver(t, c)
	if err := d.Insert(opCtx(t, 10*time.Second), "usertable", "k", rec("f", "v")); err != nil {
		t.Fatal(err)
	}

	// Pause every member: requests go out on live connections and get no answer.
	for _, n := range c.Nodes {
		if err := launcher.Signal(n.PID, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	resumed := false
	resume := func() {
		if !resumed {
			for _, n := range c.Nodes {
				_ = launcher.Signal(n.PID, syscall.SIGCONT)
			}
			resumed = true
		}
	}
	t.Cleanup(resume)
	start := time.Now()
	_, err := d.Read(opCtx(t, 300*time.Millisecond), "usertable", "k", nil)
	if outcome.ClassOf(err) != outcome.Timeout {
		t.Errorf("read from a paused cluster: %v (class %s), want timeout", err, outcome.ClassOf(err))
	}
	err = d.Update(opCtx(t, 300*time.Millisecond), "usertable", "k", rec("f", "w"))
	if outcome.ClassOf(err) != outcome.Timeout {
		t.Errorf("update on a paused cluster: %v (class %s), want timeout", err, outcome.ClassOf(err))
	}
	t.Logf("paused cluster: timeouts after %v for two operations", time.Since(start).Round(time.Millisecond))
	resume()
	wctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := (etcdlauncher.Launcher{}).WaitHealthy(wctx, c); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Read(opCtx(t, 5*time.Second), "usertable", "k", nil); err != nil || !sameRec(got, rec("f", "v")) {
		t.Fatalf("read after resume: %v %v", got, err)
	}

	// Kill every member: connections break and nothing answers any more.
	for _, n := range c.Nodes {
		if err := launcher.Kill(context.Background(), n.PID); err != nil {
			t.Fatal(err)
		}
	}
	for _, op := range []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"read", func(ctx context.Context) error { _, err := d.Read(ctx, "usertable", "k", nil); return err }},
		{"insert", func(ctx context.Context) error { return d.Insert(ctx, "usertable", "k2", rec("f", "v")) }},
		{"update", func(ctx context.Context) error { return d.Update(ctx, "usertable", "k", rec("f", "x")) }},
		{"scan", func(ctx context.Context) error { _, err := d.Scan(ctx, "usertable", "", 10, nil); return err }},
	} {
		start := time.Now()
		err := op.do(opCtx(t, 5*time.Second))
		took := time.Since(start)
		if outcome.ClassOf(err) != outcome.Unavailable {
			t.Errorf("%s on a dead cluster: %v (class %s), want unavailable", op.name, err, outcome.ClassOf(err))
		}
		t.Logf("dead cluster: %s is %s after %v", op.name, outcome.ClassOf(err), took.Round(time.Millisecond))
	}
	if _, err := d.Leader(opCtx(t, time.Second)); err == nil {
		t.Error("Leader() of a dead cluster succeeded")
	}
}

// TestRequireLeader isolates one member of a real 3-member cluster (the
// two others paused: a minority partition) and reads through a driver
// that knows only that member. With etcd.requireleader the member answers
// at once that it has no leader (class unavailable, before the deadline);
// without it the read waits at the member until its deadline (class
// timeout). The figures of a split depend on this client setting, which
// is why it is an option recorded in env.json (ClientSettings).
func TestRequireLeader(t *testing.T) {
	c, _ := cluster(t)
	full := newDriver(t, c)
	if err := full.Insert(opCtx(t, 10*time.Second), "usertable", "k", rec("f", "v")); err != nil {
		t.Fatal(err)
	}
	leader, err := full.Leader(opCtx(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var lone *launcher.Node
	for i := range c.Nodes {
		if c.Nodes[i].Addr != leader {
			lone = &c.Nodes[i]
			break
		}
	}
	with := newDriverAt(t, lone.Addr, etcd.PropRequireLeader, "true", etcd.PropMaxRetries, "1")
	without := newDriverAt(t, lone.Addr, etcd.PropMaxRetries, "1")
	for _, tc := range []struct {
		d    *etcd.Driver
		want string
	}{{with, "true"}, {without, "false"}} {
		if got := tc.d.ClientSettings()[etcd.PropRequireLeader]; got != tc.want {
			t.Errorf("ClientSettings()[%s] = %q, want %q", etcd.PropRequireLeader, got, tc.want)
		}
	}
	if got := without.ClientSettings()[etcd.PropMaxRetries]; got != "1" {
		t.Errorf("ClientSettings()[%s] = %q, want 1", etcd.PropMaxRetries, got)
	}

	var paused []int
	t.Cleanup(func() {
		for _, pid := range paused {
			_ = launcher.Signal(pid, syscall.SIGCONT)
		}
	})
	for _, n := range c.Nodes {
		if n.Name == lone.Name {
			continue
		}
		if err := launcher.Signal(n.PID, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		paused = append(paused, n.PID)
	}
	// the member knows it is alone once its election timeout has passed
	// (check quorum): wait until it reports no leader
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{lone.Addr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := cli.Status(opCtx(t, 2*time.Second), lone.Addr)
		if err == nil && st.Leader == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still sees a leader a minute after the others were paused: %v %v", lone.Name, st, err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	t.Run("with require-leader the read fails fast", func(t *testing.T) {
		ctx := opCtx(t, 20*time.Second)
		_, err := with.Read(ctx, "usertable", "k", nil)
		if outcome.ClassOf(err) != outcome.Unavailable || ctx.Err() != nil {
			t.Errorf("read at a member without leader: %v (class %s, deadline passed: %v), want unavailable before the deadline", err, outcome.ClassOf(err), ctx.Err() != nil)
		}
	})
	t.Run("without require-leader the read waits for its deadline", func(t *testing.T) {
		// a lower bound only: a loaded machine makes the wait longer,
		// never shorter (the server may end the call at the deadline a
		// moment before the local context says so)
		start := time.Now()
		_, err := without.Read(opCtx(t, 3*time.Second), "usertable", "k", nil)
		if took := time.Since(start); outcome.ClassOf(err) != outcome.Timeout || took < 2500*time.Millisecond {
			t.Errorf("read at a member without leader: %v (class %s) after %v, want a timeout at the 3 s deadline", err, outcome.ClassOf(err), took)
		}
	})
}

// newDriverAt is newDriver with one endpoint.
func newDriverAt(t *testing.T, ep string, props ...string) *etcd.Driver {
	t.Helper()
	p := properties.New()
	p.Set(etcd.PropEndpoints, ep)
	for i := 0; i+1 < len(props); i += 2 {
		p.Set(props[i], props[i+1])
	}
	d, err := etcd.NewDriver(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}
