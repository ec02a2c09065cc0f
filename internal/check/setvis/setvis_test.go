package setvis

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
)

func ins(s, e int64, o history.Outcome, v int64) history.Op {
	return history.Op{Invoke: s, Complete: e, Outcome: o, Mops: []history.Mop{{F: history.Append, Key: "s", Value: v}}}
}

func rd(s, e int64, elems string) history.Op {
	m := history.Mop{F: history.Read, Key: "s", IsList: true, List: []int64{}}
	for _, f := range strings.Fields(elems) {
		v, _ := strconv.ParseInt(f, 10, 64)
		m.List = append(m.List, v)
	}
	return history.Op{Invoke: s, Complete: e, Mops: []history.Mop{m}}
}

func TestSet(t *testing.T) {
	tests := []struct {
		name    string
		ops     []history.Op
		want    map[string]int
		valid   verdict.Valid
		latency float64 // p50 stable latency, ms
	}{
		{"visible at once", []history.Op{ins(0, 1e6, history.OK, 1), rd(2e6, 3e6, "1"), rd(4e6, 5e6, "1")}, nil, verdict.True, 2},
		{"concurrent read may miss", []history.Op{ins(0, 10e6, history.OK, 1), rd(1e6, 2e6, ""), rd(20e6, 21e6, "1")}, nil, verdict.True, 20},
		{"stale then visible", []history.Op{ins(0, 1e6, history.OK, 1), rd(2e6, 3e6, ""), rd(4e6, 5e6, "1"), rd(6e6, 7e6, ""),
			rd(8e6, 9e6, "1")}, map[string]int{Stale: 1}, verdict.True, 8},
		{"lost", []history.Op{ins(0, 1e6, history.OK, 1), rd(2e6, 3e6, "1"), rd(4e6, 5e6, "")}, map[string]int{Lost: 1}, verdict.False, -1},
		{"unknown insert never seen is not lost", []history.Op{ins(0, 1e6, history.Unknown, 1), rd(2e6, 3e6, "")}, nil, verdict.True, -1},
		{"failed insert ignored", []history.Op{ins(0, 1e6, history.Fail, 1), rd(2e6, 3e6, "")}, nil, verdict.True, -1},
		{"unexpected element", []history.Op{rd(2e6, 3e6, "7")}, map[string]int{Unexpected: 1}, verdict.False, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.ops {
				tt.ops[i].Process = i
			}
			v, err := CheckOps(context.Background(), tt.ops, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{Lost, Stale, Unexpected} {
				if v.AnomalyCounts[n] != tt.want[n] {
					t.Errorf("%s = %d, want %d", n, v.AnomalyCounts[n], tt.want[n])
				}
			}
			if v.Valid != tt.valid {
				t.Errorf("%s, want valid %s", v.Line(), tt.valid)
			}
			p50, ok := v.Measures["stable_latency_p50_ms"]
			if tt.latency < 0 && ok || tt.latency >= 0 && p50 != tt.latency {
				t.Errorf("stable latency p50 %v (%v), want %v", p50, ok, tt.latency)
			}
		})
	}
	if _, err := CheckOps(context.Background(), []history.Op{ins(0, 1, history.OK, 1), ins(0, 1, history.OK, 1)}, Options{}); err == nil {
		t.Error("a duplicate insert: no error")
	}
}
