package experiment_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	etcddriver "github.com/faultbench/faultbench/internal/driver/etcd"
	redisdriver "github.com/faultbench/faultbench/internal/driver/redis"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/launcher"
	etcdlauncher "github.com/faultbench/faultbench/internal/launcher/etcd"
	txkvlauncher "github.com/faultbench/faultbench/internal/launcher/txkv"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/workloads"
)

// TestMain lets the test binary serve as the faultbench binary the etcd and
// txkv launchers spawn (`<self> node etcd|txkv-coordinator|txkv-server ...`,
// and the txkv driver's client processes, `<self> node txkv-client ...`)
// when FAULTBENCH_SELF does not name a built binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "node" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		var err error
		switch os.Args[2] {
		case "etcd":
			err = etcdlauncher.RunNode(ctx, os.Args[3:])
		case "txkv-coordinator":
			err = txkvlauncher.RunCoordinator(ctx, os.Args[3:])
		case "txkv-server":
			err = txkvlauncher.RunServer(ctx, os.Args[3:])
		case "txkv-client":
			err = txkvlauncher.RunClient(ctx, os.Args[3:])
		}
		stop()
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goredis.SetLogger(redisdriver.LogWriter{W: io.Discard})
	os.Exit(m.Run())
}

// probe writes its own key every 10 ms through its own client and keeps
// the completion time of every success: an independent witness of gaps.
type probe struct {
	mu     sync.Mutex
	oks    []time.Time
	errs   int
	errLog []string
}

func (pr *probe) run(t *testing.T) func(ctx context.Context, start time.Time, p *properties.Properties) {
	return func(ctx context.Context, start time.Time, p *properties.Properties) {
		d, err := etcddriver.New(ctx, p)
		if err != nil {
			t.Errorf("probe driver: %v", err)
			return
		}
		var wg sync.WaitGroup
		defer func() { wg.Wait(); d.Close() }()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		val := map[string][]byte{"v": []byte("probe")}
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			// one write every 10 ms whether or not the last one finished,
			// so that one stuck request does not blind the probe
			wg.Add(1)
			go func() {
				defer wg.Done()
				octx, cancel := context.WithTimeout(ctx, 5*time.Second)
				err := d.Insert(octx, "probe", "probe-key", val)
				cancel()
				pr.mu.Lock()
				if err == nil {
					pr.oks = append(pr.oks, time.Now())
				} else if ctx.Err() == nil {
					pr.errs++
					pr.errLog = append(pr.errLog, time.Now().Format("15:04:05.000")+" "+err.Error())
				}
				pr.mu.Unlock()
			}()
		}
	}
}

// longestGap returns the longest interval between consecutive successes
// that overlaps [from, to].
func (pr *probe) longestGap(from, to time.Time) time.Duration {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	sort.Slice(pr.oks, func(i, j int) bool { return pr.oks[i].Before(pr.oks[j]) })
	var best time.Duration
	for i := 1; i < len(pr.oks); i++ {
		a, b := pr.oks[i-1], pr.oks[i]
		if b.Before(from) || a.After(to) {
			continue
		}
		if g := b.Sub(a); g > best {
			best = g
		}
	}
	return best
}

const leaderKill = `
name: test-etcd-leader-kill
target: {kind: etcd, nodes: 3, options: {etcd.election-timeout: 1000ms, etcd.heartbeat-interval: 100ms}}
workload: {ycsb: workloada, properties: {recordcount: "1000", requestdistribution: zipfian}}
load: {threads: 8, rate: 200, warmup: 2s, window: 100ms}
schedule: {fault: kill, node: leader, steady: 8s, down: 18s, after: 4s}
checks: [lost-writes]
`

// TestEtcdLeaderKill is the failover issue's bar on real etcd: a leader
// kill gives downtime and failover in the range the election timeout
// implies, recovery is reported, no
// acknowledged write is lost, and an independent probe's longest gap
// agrees with faultbench's within 200 ms.
func TestEtcdLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real etcd cluster for ~40 s")
	}
	sc, err := scenario.Parse([]byte(leaderKill), "test.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	pr := &probe{}
	var out, errb bytes.Buffer
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute) // a deadline: at load 29-38 on 2 cores the run took over 3 min
	defer cancel()
	res, err := experiment.RunScenario(ctx, experiment.ScenarioSpec{
		Scenario: sc, File: "test.yaml", OpenWorkload: workloads.Open, RunsDir: t.TempDir(), StateDir: state,
		Out: &out, Err: &errb, Beside: pr.run(t),
	})
	if err != nil {
		t.Fatalf("scenario: %v\n%s\n%s", err, out.String(), errb.String())
	}
	sum := res.Summary
	t.Logf("\n%s", out.String())
	if sum.LostWrites == nil || !sum.LostWrites.OK() || sum.LostWrites.AckedWrites == 0 {
		t.Errorf("lost-write check: %+v", sum.LostWrites)
	}
	if sum.Analysis == nil || len(sum.Analysis.Faults) == 0 {
		t.Fatalf("no fault analysed: %+v", sum.Analysis)
	}
	f := sum.Analysis.Faults[0]
	// What the configuration implies: the followers wait out a randomised
	// election timeout of 1-2 s (etcd.election-timeout 1000ms) after the
	// last heartbeat before they elect a new leader, and every request
	// (linearizable reads too) needs the leader, so the service is down for
	// at least about the election timeout; half of it allows for the
	// windows that straddle the kill and the election. The failover ends
	// within two election timeouts and the clients' reconnection; the 5 s
	// on top is for a loaded machine (the pages measured 1.3 s at load 21).
	const electionTimeout = 1000 * time.Millisecond
	if lo := ms(electionTimeout / 2); f.DowntimeMs < lo {
		t.Errorf("downtime %.0f ms, want at least %.0f ms (half the election timeout)", f.DowntimeMs, lo)
	}
	if hi := ms(2*electionTimeout + 5*time.Second); f.FailoverMs <= 0 || f.FailoverMs > hi {
		t.Errorf("failover %.0f ms, want in (0, %.0f ms] (two election timeouts + 5 s)", f.FailoverMs, hi)
	}
	// Recovery is defined against a cluster that kept up before the fault;
	// on a machine so busy that it did not, there is nothing to recover to.
	if base := sum.Analysis.BaselineOps; base < 0.9*sum.TargetOps {
		t.Logf("baseline %.0f of %.0f ops/s: the machine is too busy to judge recovery; not asserted", base, sum.TargetOps)
	} else if f.RecoveryMs < 0 {
		t.Errorf("recovery not reported: %+v", f)
	}
	evs, err := event.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var inject time.Time
	leaderChanged := false
	for _, e := range evs {
		if e.Kind == event.FaultInject && inject.IsZero() {
			inject = e.Wall
		}
		if e.Kind == event.LeaderChange {
			leaderChanged = true
		}
	}
	if inject.IsZero() || !leaderChanged {
		t.Fatalf("events lack the kill or the leader change: %v", evs)
	}
	probeGap := pr.longestGap(inject.Add(-time.Second), inject.Add(10*time.Second))
	fbGap := time.Duration(f.LongestGapMs * float64(time.Millisecond))
	t.Logf("longest gap: faultbench %v, probe %v (probe errors %d: %v); kill at %s; downtime %.0f ms, recovery %.0f ms", fbGap, probeGap, pr.errs, pr.errLog, inject.Format("15:04:05.000"), f.DowntimeMs, f.RecoveryMs)
	if d := fbGap - probeGap; d > 200*time.Millisecond || d < -200*time.Millisecond {
		t.Errorf("faultbench's longest gap %v and the probe's %v differ by more than 200 ms", fbGap, probeGap)
	}
	// nothing left behind
	if cs, _ := (launcher.StateStore{Dir: state}).List(); len(cs) != 0 {
		t.Errorf("state files left: %v", cs)
	}
	for _, want := range []string{"downtime", "lost-writes check: PASS", "[OVERALL], Throughput"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("terminal summary lacks %q", want)
		}
	}
}

const masterKill = `
name: test-redis-master-kill
target: {kind: redis-cluster, nodes: 3, replicas: 1, options: {redis.cluster-node-timeout: "1000"}}
workload: {ycsb: workloada, properties: {recordcount: "1000"}}
load: {threads: 8, rate: 400, warmup: 2s, window: 100ms}
schedule: {fault: kill, node: primary, steady: 6s, down: 10s, after: 4s}
checks: [lost-writes]
`

// TestRedisClusterMasterKill: a Redis Cluster master kill gives a replica
// promotion observed as an event, a failover time in the range the
// cluster's node timeout implies, and no lost acknowledged write.
func TestRedisClusterMasterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Redis Cluster for ~30 s")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed (make test installs it via scripts/setup.sh)")
	}
	sc, err := scenario.Parse([]byte(masterKill), "test.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute) // a deadline: at load 29-38 on 2 cores the run took over 3 min
	defer cancel()
	res, err := experiment.RunScenario(ctx, experiment.ScenarioSpec{
		Scenario: sc, File: "test.yaml", OpenWorkload: workloads.Open, RunsDir: t.TempDir(), StateDir: t.TempDir(),
		Out: &out, Err: &errb,
	})
	if err != nil {
		t.Fatalf("scenario: %v\n%s\n%s", err, out.String(), errb.String())
	}
	t.Logf("\n%s", out.String())
	evs, err := event.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	promoted, promotedAt, killedAt := "", time.Duration(-1), time.Duration(-1)
	for _, e := range evs {
		if e.Kind == event.FaultInject && killedAt < 0 {
			killedAt = e.Since()
		}
		if e.Kind == event.RoleChange && strings.Contains(e.Detail, "replica -> primary") && promotedAt < 0 {
			promoted, promotedAt = e.Node+" "+e.Detail, e.Since()
		}
	}
	if promoted == "" || killedAt < 0 {
		t.Fatalf("no kill or no replica promotion among the events:\n%s", errb.String())
	}
	sum := res.Summary
	if sum.Analysis == nil || len(sum.Analysis.Faults) == 0 {
		t.Fatalf("no fault analysed")
	}
	f := sum.Analysis.Faults[0]
	// What the configuration implies: a replica starts its election only
	// after the master is flagged failing, when a ping to it has been
	// unanswered for cluster-node-timeout (1 s; the ping went out at the
	// kill at the earliest), then waits 0.5-1 s plus its rank before it
	// asks for votes; the killed master's slots fail until then. So the
	// promotion comes at least the node timeout after the kill (the
	// fault-inject event is recorded before the kill, the role-change
	// event is seen by polling: both only widen the interval), and at most
	// two node timeouts, the replica's delay, and 5 s for a loaded machine
	// (the pages measured 2.8 s at load 22-35) after it.
	//
	// The bound is on the promotion, not on faultbench's failover time:
	// the killed master holds a third of the slots, so the operations on
	// the two others keep completing until the workers pile up on the dead
	// slots; the first windows after the kill can be above the downtime
	// threshold (10 % of the baseline) for SustainWindows in a row, so the
	// first down stretch — the failover time, by its definition in
	// docs/metrics.md — may end before the promotion (380 ms in CI on
	// 2026-11-27, promotion later). The failover time is only bounded
	// above, and the outage must be seen: some down window.
	const nodeTimeout = 1000 * time.Millisecond
	lo, hi := nodeTimeout, 2*nodeTimeout+time.Second+5*time.Second
	if d := promotedAt - killedAt; d < lo || d > hi {
		t.Errorf("replica promoted %v after the kill, want in [%v, %v]", d, lo, hi)
	}
	if f.FailoverMs <= 0 || f.FailoverMs > ms(hi) || f.DowntimeMs <= 0 {
		t.Errorf("failover time %.0f ms, downtime %.0f ms: want a failover in (0, %.0f] ms and some downtime", f.FailoverMs, f.DowntimeMs, ms(hi))
	}
	if sum.LostWrites == nil || sum.LostWrites.KeysChecked == 0 || sum.LostWrites.AckedWrites == 0 || !sum.LostWrites.OK() {
		t.Errorf("lost-write check did not run or did not pass: %+v", sum.LostWrites)
	}
	t.Logf("promotion: %s %v after the kill; failover %.0f ms, downtime %.0f ms; lost writes: %s", promoted, promotedAt-killedAt, f.FailoverMs, f.DowntimeMs, sum.LostWrites)
}

// TestFailedFaultStepFailsRun: a fault step that fails while the run goes
// on (pausing the only member, which an earlier step killed: it waits for a
// healthy cluster that never comes, and the run ends first) makes RunScenario
// return an error and marks summary.json failed; the run still finishes,
// writes its files and stops its cluster.
func TestFailedFaultStepFailsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real 1-member etcd cluster for ~10 s")
	}
	const doc = `
name: test-failed-step
target: {kind: etcd, nodes: 1}
workload: {ycsb: workloada, properties: {recordcount: "100"}}
load: {threads: 2, rate: 100, duration: 5s}
schedule:
  - {at: 1s, fault: kill, node: n1}
  - {at: 2s, fault: pause, node: n1}
`
	sc, err := scenario.Parse([]byte(doc), "test.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := experiment.RunScenario(ctx, experiment.ScenarioSpec{
		Scenario: sc, File: "test.yaml", OpenWorkload: workloads.Open, RunsDir: t.TempDir(), StateDir: state, Out: &out, Err: &errb,
	})
	if err == nil || !strings.Contains(err.Error(), "step 2 (at 2s: pause n1)") {
		t.Fatalf("error %v, want the failed step\n%s\n%s", err, out.String(), errb.String())
	}
	if res == nil || res.Summary == nil || !res.Summary.Failed || len(res.Summary.Failures) != 1 {
		t.Fatalf("summary not marked failed: %+v", res)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
	if err != nil || !strings.Contains(string(b), `"failed": true`) {
		t.Errorf("summary.json: %v %s", err, b)
	}
	if !strings.Contains(out.String(), "RUN FAILED") {
		t.Errorf("terminal summary lacks RUN FAILED:\n%s", out.String())
	}
	if cs, _ := (launcher.StateStore{Dir: state}).List(); len(cs) != 0 {
		t.Errorf("state files left: %v", cs)
	}
}

// TestScenarioSummaryDropped checks that a scenario's summary.json reports
// its dropped operations at the top level (dropped_ops_count), as a plain
// run does, and not only in totals and the availability report: one
// thread cannot keep up with 20,000 ops/s, so operations are dropped at
// the deadline.
func TestScenarioSummaryDropped(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real 1-member etcd cluster for ~5 s")
	}
	const doc = `
name: test-dropped
target: {kind: etcd, nodes: 1}
workload: {ycsb: workloada, properties: {recordcount: "100"}}
load: {threads: 1, rate: 20000, duration: 2s}
`
	sc, err := scenario.Parse([]byte(doc), "test.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := experiment.RunScenario(ctx, experiment.ScenarioSpec{
		Scenario: sc, File: "test.yaml", OpenWorkload: workloads.Open, RunsDir: t.TempDir(), StateDir: t.TempDir(), Out: &out, Err: &errb,
	})
	if err != nil {
		t.Fatalf("scenario: %v\n%s", err, errb.String())
	}
	s := res.Summary
	if s.Totals.Dropped == 0 {
		t.Fatalf("no operation dropped at 20,000 ops/s with one thread (%d operations)", s.Totals.Operations)
	}
	if s.Dropped != s.Totals.Dropped {
		t.Errorf("summary dropped_ops_count %d, totals %d", s.Dropped, s.Totals.Dropped)
	}
	if s.Analysis != nil && s.Analysis.DroppedOps != s.Dropped {
		t.Errorf("summary dropped_ops_count %d, availability %d", s.Dropped, s.Analysis.DroppedOps)
	}
}

// ms is d in milliseconds, the unit of the summary's times.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
