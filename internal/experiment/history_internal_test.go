package experiment

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/workload"
)

// TestHistoryFlushedWhileRunning: an operation recorded is on disk within
// a few flush intervals although no other operation follows and the
// history is not closed (a run killed while the cluster stalls leaves
// it). The wait is bounded generously; nothing is timed.
func TestHistoryFlushedWhileRunning(t *testing.T) {
	dir := t.TempDir()
	h, err := openHistory(dir, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	h.Record(&history.Op{Process: 1, Invoke: h.Now(), Complete: h.Now(), Mops: []history.Mop{{F: history.Write, Key: "x", Value: 1}}})
	deadline := time.Now().Add(30 * time.Second)
	for {
		ops, _, err := history.ReadFile(filepath.Join(dir, history.FileName))
		if err == nil && len(ops) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the operation is not on disk 30 s after it was recorded (%v, %d ops)", err, len(ops))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestTagValue(t *testing.T) {
	for _, tc := range []struct {
		name        string
		worker      int
		seq         int64
		wantValue   int64
		badEncoding string
	}{
		{"first", 0, 0, 0, ""},
		{"writer 3 seq 17", 3, 17, 3<<40 | 17, ""},
		{"largest", 0xffff, 1<<40 - 1, 0xffff<<40 | (1<<40 - 1), ""},
		{"not a tag", 0, 0, 0, "0000-0000000001"},
		{"upper case", 0, 0, 0, "0000:000000000A"},
		{"short", 0, 0, 0, "0:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.badEncoding != "" {
				if v, ok := tagValue([]byte(tc.badEncoding)); ok {
					t.Fatalf("tagValue(%q) = %d, want not a tag", tc.badEncoding, v)
				}
				return
			}
			var b [tagLen]byte
			encodeTag(&b, tc.worker, tc.seq)
			v, ok := tagValue(b[:])
			if !ok || v != tc.wantValue {
				t.Fatalf("tagValue(%q) = %d %v, want %d", b, v, ok, tc.wantValue)
			}
		})
	}
}

// TestRecordsHistory: a CoreWorkload run records a history only when
// asked, a load phase never; off, no tracker is installed (no cost per
// operation).
func TestRecordsHistory(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props map[string]string
		phase runner.Phase
		want  bool
	}{
		{"core, off by default", nil, runner.Run, false},
		{"core, history=true", map[string]string{KeyHistory: "true"}, runner.Run, true},
		{"core load phase", map[string]string{KeyHistory: "true"}, runner.Load, false},
		{"tpcc is no Historian", map[string]string{"workload": "tpcc", KeyHistory: "true"}, runner.Run, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := properties.New()
			p.Set("recordcount", "10")
			p.Set("operationcount", "10")
			for k, v := range tc.props {
				p.Set(k, v)
			}
			wl, err := workload.Builtin().New(p)
			if err != nil {
				t.Fatal(err)
			}
			set, err := ReadSettings(p, tc.phase, wl)
			if err != nil {
				t.Fatal(err)
			}
			if got := RecordsHistory(wl, set); got != tc.want {
				t.Fatalf("RecordsHistory = %v, want %v", got, tc.want)
			}
		})
	}
}
