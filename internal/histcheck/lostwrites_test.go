package histcheck

import (
	"context"
	"testing"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
)

func TestLostWrites(t *testing.T) {
	w := func(p int, s, e int64, v int64, o history.Outcome) history.Op {
		return history.Op{Process: p, Name: "update", Invoke: s, Complete: e, Outcome: o, Mops: []history.Mop{{F: history.Write, Key: "k", Value: v}}}
	}
	final := func(s int64, v int64, has bool) history.Op {
		return history.Op{Process: 99, Name: FinalReadName, Invoke: s, Complete: s + 1, Mops: []history.Mop{{F: history.Read, Key: "k", Value: v, HasValue: has}}}
	}
	ok, unknown, fail := history.OK, history.Unknown, history.Fail
	for _, tc := range []struct {
		name  string
		ops   []history.Op
		valid verdict.Valid
		lost  int
		unexp int
	}{
		{"last write shown", []history.Op{w(0, 0, 10, 1, ok), w(0, 20, 30, 2, ok), final(100, 2, true)}, verdict.True, 0, 0},
		{"the later write lost", []history.Op{w(0, 0, 10, 1, ok), w(0, 20, 30, 2, ok), final(100, 1, true)}, verdict.False, 1, 0},
		{"every lost write counted, not only the last", []history.Op{w(0, 0, 10, 1, ok), w(0, 20, 30, 2, ok), w(1, 40, 50, 3, ok), final(100, 1, true)}, verdict.False, 2, 0},
		{"a concurrent write may follow", []history.Op{w(0, 0, 30, 1, ok), w(1, 10, 20, 2, ok), final(100, 1, true)}, verdict.True, 0, 0},
		{"no value: every acknowledged write lost", []history.Op{w(0, 0, 10, 1, ok), w(0, 20, 30, 2, ok), final(100, 0, false)}, verdict.False, 2, 0},
		{"an unknown write may take effect late", []history.Op{w(0, 0, 10, 1, unknown), w(1, 20, 30, 2, ok), final(100, 1, true)}, verdict.True, 0, 0},
		{"unknown writes are never lost", []history.Op{w(0, 0, 10, 1, ok), w(1, 20, 30, 2, unknown), final(100, 1, true)}, verdict.True, 0, 0},
		{"a failed write took no effect", []history.Op{w(0, 0, 10, 1, ok), w(0, 20, 30, 2, fail), final(100, 1, true)}, verdict.True, 0, 0},
		{"a value no one wrote", []history.Op{w(0, 0, 10, 1, ok), final(100, 7, true)}, verdict.False, 0, 1},
		{"no final read: undecided", []history.Op{w(0, 0, 10, 1, ok)}, verdict.Unknown, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := LostWrites(context.Background(), write(t, tc.ops))
			if err != nil {
				t.Fatal(err)
			}
			if v.Valid != tc.valid || v.AnomalyCounts[AnomalyLostWrite] != tc.lost || v.AnomalyCounts[AnomalyUnexpectedValue] != tc.unexp {
				t.Fatalf("%s; want valid=%s, %d lost, %d unexpected\n%+v", v.Line(), tc.valid, tc.lost, tc.unexp, v.Anomalies)
			}
		})
	}
}
