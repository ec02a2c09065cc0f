package txkv_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/driver"
	txkvdriver "github.com/faultbench/faultbench/internal/driver/txkv"
	"github.com/faultbench/faultbench/internal/launcher"
	txkvl "github.com/faultbench/faultbench/internal/launcher/txkv"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
)

// TestCrashClient crashes the driver's client on a real cluster while
// writers commit through it, with flushes held back: every write-set
// committed during the hold is replayed by the recovery manager, the load
// continues on the replacement, and every acknowledged write is readable.
// In process mode (txkv.client-process) the clients are processes and the
// crash is a SIGKILL of the one the load runs on.
func TestCrashClient(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real txkv processes")
	}
	for _, procs := range []bool{false, true} {
		name := "in-process"
		if procs {
			name = "client-process"
		}
		t.Run(name, func(t *testing.T) { crashClient(t, procs) })
	}
}

func crashClient(t *testing.T, procs bool) {
	t.Setenv("TMPDIR", t.TempDir())
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := txkvl.Launcher{}.Up(ctx, env, launcher.Spec{Nodes: 2, Options: map[string]string{"txkv.heartbeat": "250ms"}})
	if err != nil {
		t.Fatal(err)
	}
	defer launcher.Down(context.Background(), c, 10*time.Second)
	p := properties.New()
	txkvl.Connect(p, c)
	p.Set(txkvdriver.PropName, "crash-test")
	if procs {
		p.Set(txkvdriver.PropClientProcess, "true")
	}
	d, err := txkvdriver.NewDriver(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	first := d.ClientName()
	if d.ClientProcesses() != procs {
		t.Fatalf("client processes: %v, want %v", d.ClientProcesses(), procs)
	}

	// writers: each writes its own keys, one per transaction, and keeps
	// for each the values it may hold: the last acknowledged and any
	// written after it with an unknown outcome (a commit in flight at the
	// crash)
	var mu sync.Mutex
	possible := map[string]map[string]bool{}
	wctx, stopWriters := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Go(func() {
			for i := 0; wctx.Err() == nil; i++ {
				key, val := fmt.Sprintf("w%d-k%d", w, i%50), fmt.Sprintf("w%d-%d", w, i)
				octx, cancel := context.WithTimeout(wctx, 5*time.Second)
				err := d.Update(octx, "t", key, map[string][]byte{"f": []byte(val)})
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					possible[key] = map[string]bool{val: true}
				case outcome.ClassOf(err) != outcome.Conflict && possible[key] != nil:
					possible[key][val] = true
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	crashed, err := d.CrashClient(ctx, driver.ClientCrash{Hold: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("crashed: %+v", crashed)
	if crashed.Name != first+"#1" || crashed.Replacement != first+"#2" || d.ClientName() != crashed.Replacement {
		t.Errorf("names: crashed %s, replacement %s, current %s (first %s)", crashed.Name, crashed.Replacement, d.ClientName(), first)
	}
	if crashed.Unflushed == 0 {
		t.Errorf("no write-set committed during the hold")
	}
	rec, err := d.WaitClientRecovered(ctx, crashed)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("recovered: %+v", rec)
	if rec.Replayed < int(crashed.Unflushed) {
		t.Errorf("replayed %d write-sets, the crashed client left %d unflushed", rec.Replayed, crashed.Unflushed)
	}
	if rec.Detected.Before(crashed.At) || rec.Done.Before(rec.Detected) {
		t.Errorf("times: crash %v, detected %v, done %v", crashed.At, rec.Detected, rec.Done)
	}
	time.Sleep(300 * time.Millisecond) // the replacement carries on
	stopWriters()
	wg.Wait()
	// every acknowledged write is there (visibility may lag a heartbeat)
	mu.Lock()
	defer mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for key, want := range possible {
		for {
			m, err := d.Read(ctx, "t", key, nil)
			if err == nil && want[string(m["f"])] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: read %q, %v; want one of %v", key, m["f"], err, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("%d keys checked", len(possible))
}
