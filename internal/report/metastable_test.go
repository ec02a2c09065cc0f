package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/metastable"
	"github.com/faultbench/faultbench/internal/rundir"
)

// msRows: 5 healthy 1 s windows, a 2 s trigger, then after windows of
// (ok, p99 ms).
func msRows(after [2]float64) []measure.WindowRow {
	var rows []measure.WindowRow
	for i := range 17 {
		ok, p99 := 1000.0, 2.0
		switch {
		case i >= 5 && i < 7:
			ok, p99 = 0, 0
		case i >= 7:
			ok, p99 = after[0], after[1]
		}
		s := time.Duration(i) * time.Second
		rows = append(rows, measure.WindowRow{Index: i, Start: s, End: s + time.Second, Phase: measure.PhaseRun, Op: measure.AllOps, OK: int64(ok), P99Us: p99 * 1000})
	}
	return rows
}

func TestMetastableSummaryAndSection(t *testing.T) {
	trig := metastable.Trigger{Kind: "pause", Start: 5 * time.Second, End: 7 * time.Second, What: "pause leader"}
	for _, tc := range []struct {
		name      string
		after     [2]float64
		terminal  string
		class     string
		wantShort string
	}{
		{"recovered", [2]float64{1000, 2}, "RECOVERED in 0.0 s after pause (pause leader)", "pass", "recovered in 0.0 s"},
		{"metastable: the negative control", [2]float64{300, 40}, "METASTABLE after pause", "fail", "metastable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := metastable.Judge(msRows(tc.after), trig, metastable.Params{})
			b, _ := json.Marshal(v)
			sum := &rundir.Summary{Sections: map[string]json.RawMessage{metastable.SummaryKey: b}}
			var w bytes.Buffer
			writeMetastable(&w, sum)
			if !strings.Contains(w.String(), tc.terminal) {
				t.Errorf("terminal:\n%s\nwant %q", w.String(), tc.terminal)
			}
			mv, notes := metastableSection(&Run{Summary: sum})
			if mv == nil || mv.Class != tc.class || mv.Word != tc.wantShort || len(notes) > 0 {
				t.Fatalf("section %+v, notes %v; want class %s, word %q", mv, notes, tc.class, tc.wantShort)
			}
		})
	}
	t.Run("not judged: no section, no line", func(t *testing.T) {
		var w bytes.Buffer
		writeMetastable(&w, &rundir.Summary{})
		if mv, _ := metastableSection(&Run{Summary: &rundir.Summary{}}); mv != nil || w.Len() > 0 {
			t.Errorf("section %v, terminal %q", mv, w.String())
		}
	})
}
