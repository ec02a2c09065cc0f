package txkv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/client"
	"github.com/faultbench/faultbench/internal/txkv/clientproc"
	"github.com/faultbench/faultbench/internal/txkv/coord"
	"github.com/faultbench/faultbench/internal/txkv/txkvtest"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// childArg makes the test binary a txkv client process (TestMain).
const childArg = "txkv-client-child"

// TestMain lets the test binary stand in for `faultbench node
// txkv-client`: `<test binary> txkv-client-child COORD NAME` serves a
// client whose flushes are partial and out of order (partialFlush).
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == childArg {
		cfg := client.Config{Coordinator: os.Args[2], Name: os.Args[3], FlushFilter: partialFlush}
		if err := clientproc.Serve(context.Background(), cfg, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// partialFlush is the flush policy of the crashing clients: write-set i
// (value v<i>) is flushed in full for i < 5 (T_F(c) advances past them),
// then by i%3: 0 in full, 1 only its low key, 2 not at all, so that later
// write-sets complete while earlier ones do not (T_F stops at the first
// gap). Other values are flushed in full.
func partialFlush(_ uint64, w wire.Write) bool {
	v := string(w.Fields[0].Value)
	if !strings.HasPrefix(v, "v") {
		return true
	}
	i, _ := strconv.Atoi(v[1:])
	return i < 5 || i%3 == 0 || (i%3 == 1 && w.Key < "user50")
}

// TestClientProcessKilled: a client process commits write-sets that span
// regions, flushes some in full, some in part and some not at all (out of
// order), keeps committing while it is killed with SIGKILL (flushes under
// way end where they are), and the coordinator's client-failure path
// replays its write-sets committed after T_F(c): every acknowledged commit
// is there at its commit timestamp. Negative control: with the client
// replay switched off the check must fail.
func TestClientProcessKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a client process")
	}
	for _, tc := range []struct {
		name     string
		sw       coord.TestSwitches
		negative bool
	}{
		{"replay", coord.TestSwitches{}, false},
		{"negative-control/no-client-replay", coord.TestSwitches{NoClientReplay: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startClusterWith(t, 2, testConfig(wire.Async), tc.sw)
			cl := openClient(t, c.addr)
			defer cl.Close(context.Background())
			pinSnapshot(t, cl) // version GC keeps what the check reads
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			p, err := clientproc.Start(ctx, "crashy-proc", []string{os.Args[0], childArg, c.addr, "crashy-proc"}, os.Stderr)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Kill()
			h := txkvtest.NewHistory("t", "f")
			commit := func(kv map[string]string) error {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				tx, err := p.Begin(cctx)
				if err != nil {
					return err
				}
				for k, v := range kv {
					if err := tx.Write(cctx, "t", k, map[string][]byte{"f": []byte(v)}); err != nil {
						tx.Abort()
						return err
					}
				}
				ts, err := tx.Commit(cctx)
				switch {
				case err == nil:
					h.Acked(ts, kv)
				case errors.Is(err, client.ErrUnknownOutcome):
					h.Unknown() // under way when the process died
				}
				return err
			}
			const n = 30
			for i := 0; i < n; i++ {
				kv := map[string]string{fmt.Sprintf("user%d", 10+i): fmt.Sprintf("v%d", i), fmt.Sprintf("user%d", 60+i): fmt.Sprintf("v%d", i)}
				if err := commit(kv); err != nil {
					t.Fatalf("commit %d: %v", i, err)
				}
			}
			// the complete flushes have been sent; T_F stops at the first gap
			time.Sleep(3 * c.cfg.Heartbeat)
			info, err := p.Info(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			if info.TF < h.MinTS() {
				t.Errorf("T_F(c) %d did not advance past the write-sets flushed in full (first commit at %d)", info.TF, h.MinTS())
			}
			if info.Flushes == 0 || info.Flushes >= info.Commits {
				t.Errorf("want complete and incomplete flushes before the kill: %d commits, %d flushed", info.Commits, info.Flushes)
			}
			// more commits (flushed in full) under way while the process dies
			var wg sync.WaitGroup
			var mu sync.Mutex
			var after int
			for w := 0; w < 4; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := 0; ; j++ {
						err := commit(map[string]string{fmt.Sprintf("user%d-w%d", 20+j%70, w): fmt.Sprintf("w%d-%d", w, j)})
						mu.Lock()
						if err == nil {
							after++
						}
						mu.Unlock()
						if errors.Is(err, clientproc.ErrGone) {
							return
						}
					}
				}()
			}
			eventually(t, 20*time.Second, "commits under way", func() bool { mu.Lock(); defer mu.Unlock(); return after >= 20 })
			p.Kill()
			killed := time.Now()
			wg.Wait()
			t.Logf("killed pid %d (SIGKILL) after %d commits before and %d during the load; local T_F was %d", p.Pid(), n, after, info.TF)
			var rec wire.Recovery
			eventually(t, 30*time.Second, "the client's recovery", func() bool {
				for _, r := range c.coord.Status().Recoveries {
					if r.Kind == "client" && r.Name == "crashy-proc" {
						rec = r
						return true
					}
				}
				return false
			})
			t.Logf("client recovered %v after the kill: %d write-sets replayed after T_F %d", time.Since(killed).Round(time.Millisecond), rec.Replayed, rec.From)
			if rec.Replayed == 0 {
				t.Error("nothing replayed")
			}
			if rec.From < h.MinTS() {
				t.Errorf("replay from T_F %d: the coordinator's T_F(c) never passed the write-sets flushed in full (first at %d)", rec.From, h.MinTS())
			}
			requireCheck(t, verify(t, h, cl), tc.negative)
		})
	}
}
