package check

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload"
)

// del performs one tracked delete; apply=false: acknowledged, not done.
func del(t *Tracker, d *memDriver, worker int, key string, apply bool) {
	op := &workload.Op{Kind: workload.Delete, Key: key}
	tok := t.BeforeWrite(worker, op)
	if apply {
		_ = d.Delete(context.Background(), "t", key)
	}
	t.AfterWrite(worker, op, tok, nil)
}

// read performs one tracked read of key through d.
func read(t *Tracker, d *memDriver, key string) {
	op := &workload.Op{Kind: workload.Read, Key: key}
	tok := t.BeforeRead(0, op)
	rec, err := d.Read(context.Background(), "t", key, nil)
	t.AfterRead(0, op, tok, rec, err)
}

func verify(t *testing.T, tr *Tracker, d Reader) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return tr.Verify(ctx, d, "t", 4)
}

// TestDeletesAreTracked: an acknowledged write followed by an acknowledged
// delete must read absent. Before, deletes bypassed the tracker and such a
// key was reported as a lost write.
func TestDeletesAreTracked(t *testing.T) {
	for _, tc := range []struct {
		name       string
		do         func(tr *Tracker, d *memDriver)
		lost, lDel int
	}{
		{"write then delete: absent is right", func(tr *Tracker, d *memDriver) {
			write(tr, d, 0, workload.Update, "a", true, nil)
			del(tr, d, 1, "a", true)
		}, 0, 0},
		{"delete acknowledged but not done: a lost delete", func(tr *Tracker, d *memDriver) {
			write(tr, d, 0, workload.Update, "a", true, nil)
			del(tr, d, 1, "a", false)
		}, 0, 1},
		{"delete then insert: the insert must be there", func(tr *Tracker, d *memDriver) {
			del(tr, d, 1, "a", true)
			write(tr, d, 0, workload.Insert, "a", false, nil)
		}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(2)
			d := newMem()
			tc.do(tr, d)
			r := verify(t, tr, d)
			if r.LostWrites+r.LostInserts != tc.lost || r.LostDeletes != tc.lDel {
				t.Fatalf("lost writes %d inserts %d deletes %d, want %d lost, %d lost deletes (%+v)", r.LostWrites, r.LostInserts, r.LostDeletes, tc.lost, tc.lDel, r.Examples)
			}
		})
	}
}

// laggingReplica serves Read from a copy taken before the last writes (a
// serializable etcd read or a Redis replica) and ReadStrong from the
// current data (the leader or primary).
type laggingReplica struct {
	*memDriver
	old *memDriver
}

func (l laggingReplica) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	return l.old.Read(ctx, table, key, fields)
}

func (l laggingReplica) ReadStrong(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	return l.memDriver.Read(ctx, table, key, fields)
}

// laggingOnly has the replica's reads and no strong read.
type laggingOnly struct{ old *memDriver }

func (l laggingOnly) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	return l.old.Read(ctx, table, key, fields)
}

// TestVerifyReadsStrong: verification reads use the driver's strong read.
// Read through a lagging replica (what the check did before), the kept
// second write looks lost.
func TestVerifyReadsStrong(t *testing.T) {
	tr := NewTracker(1)
	d := newMem()
	write(tr, d, 0, workload.Update, "a", true, nil)
	old := newMem()
	for k, v := range d.recs {
		old.recs[k] = map[string][]byte{TagField: append([]byte(nil), v[TagField]...)}
	}
	write(tr, d, 0, workload.Update, "a", true, nil)
	if r := verify(t, tr, laggingOnly{old}); r.LostWrites != 1 || r.VerifyReads != "default" {
		t.Errorf("through the replica: %d lost, reads %q; want the false loss (1) and \"default\"", r.LostWrites, r.VerifyReads)
	}
	if r := verify(t, tr, laggingReplica{d, old}); r.LostWrites != 0 || r.VerifyReads != "strong" || !r.OK() {
		t.Errorf("strong reads: %d lost, reads %q; want 0 and \"strong\"", r.LostWrites, r.VerifyReads)
	}
}

// TestStaleReads is the case a final-state check cannot see: W1
// acknowledged, W2 acknowledged but lost, then a read returns W1; W3
// acknowledged and kept. The final state holds W3: 0 lost writes. The
// during-run check reports the read of W1 as stale. A value no write
// produced is corrupt.
func TestStaleReads(t *testing.T) {
	tr := NewTracker(2)
	d := newMem()
	write(tr, d, 0, workload.Update, "a", true, nil)  // W1
	write(tr, d, 1, workload.Update, "a", false, nil) // W2: acknowledged, lost
	read(tr, d, "a")                                  // returns W1: stale
	write(tr, d, 0, workload.Update, "a", true, nil)  // W3
	read(tr, d, "a")                                  // returns W3: fine
	d.recs["b"] = map[string][]byte{TagField: []byte("garbage")}
	read(tr, d, "b") // corrupt
	d.recs["c"] = map[string][]byte{"field0": []byte("loaded")}
	write(tr, d, 0, workload.Update, "c", false, nil) // acknowledged, lost
	read(tr, d, "c")                                  // the loaded value: stale
	write(tr, d, 1, workload.Update, "d", true, timeout())
	read(tr, d, "d") // an unknown-outcome write's value: never stale
	r := verify(t, tr, d)
	if r.LostWrites != 1 { // only c: a's loss is hidden by W3
		t.Errorf("final-state check: %d lost writes, want 1 (c only): %+v", r.LostWrites, r.Examples)
	}
	rd := r.Reads
	if rd == nil || rd.Stale != 2 || rd.Corrupt != 1 || rd.Judged != 5 {
		t.Fatalf("reads %+v; want 5 judged, 2 stale, 1 corrupt", rd)
	}
	if rd.Examples[0].Key != "a" || rd.Examples[0].Kind != "stale-read" || r.OK() || r.ReadsOK() {
		t.Errorf("examples %+v, OK %v, ReadsOK %v", rd.Examples, r.OK(), r.ReadsOK())
	}
}

func timeout() error { return outcome.Classified(outcome.Timeout, "update", errors.New("deadline")) }

// TestStaleReadsByPhase: findings are attributed to the phases of the
// availability report by time.
func TestStaleReadsByPhase(t *testing.T) {
	tr := NewTracker(2)
	d := newMem()
	write(tr, d, 0, workload.Update, "a", true, nil)
	write(tr, d, 1, workload.Update, "a", false, nil)
	read(tr, d, "a")
	r := verify(t, tr, d)
	runStart := tr.start.Add(-10 * time.Second) // the tracker started 10 s into the run
	r.ByPhase(runStart, []analyze.PhaseStats{
		{Name: "before", Kind: "before", FromMs: 0, ToMs: 10000},
		{Name: "kill n1", Kind: "fault", FromMs: 10000, ToMs: 60000},
	})
	if len(r.Phases) != 2 || r.Phases[0].StaleReads != 0 || r.Phases[1].StaleReads != 1 || r.Phases[1].LostWrites != 1 {
		t.Errorf("phases %+v; want the stale read and the lost write in \"kill n1\"", r.Phases)
	}
}

// TestLoadKeysChecked: load keys the run never wrote are read back too, a
// sample when there are many, and must hold their loaded value.
func TestLoadKeysChecked(t *testing.T) {
	p := properties.New()
	p.Set("recordcount", "1000")
	wl, err := workload.New(p)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTracker(1)
	d := newMem()
	for i := int64(0); i < 1000; i++ {
		d.recs[wl.KeyName(i)] = map[string][]byte{"field0": []byte(strconv.FormatInt(i, 10))}
	}
	write(tr, d, 0, workload.Update, wl.KeyName(0), true, nil)
	delete(d.recs, wl.KeyName(500)) // a loaded record lost
	tr.CheckLoaded(wl, 1000)
	r := verify(t, tr, d)
	if l := r.LoadKeys; l == nil || l.Total != 999 || l.Checked != 999 || l.Missing != 1 || r.OK() {
		t.Fatalf("load keys %+v, OK %v; want 999 of 999 read, 1 missing, not OK", r.LoadKeys, r.OK())
	}
	tr.CheckLoaded(wl, 100)
	r = verify(t, tr, d)
	if l := r.LoadKeys; l.Total != 999 || l.Checked != 100 {
		t.Errorf("sampled: %+v, want 100 of 999", l)
	}
	if s := r.String(); !strings.Contains(s, "100 of 999") {
		t.Errorf("verdict %q does not say how many load keys were read", s)
	}
}
