package histcheck

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
)

// LostWritesName is the per-operation lost-write check's name: the
// scenario check lost-writes, judged on the history (summary.json's
// checks.lost-writes).
const LostWritesName = "lost-writes"

// FinalReadName names the read-back operations the harness appends to a
// history after the run, every fault healed: one read of every written
// key, whose value is the key's final state.
const FinalReadName = "final-read"

// The per-operation lost-write check's anomalies.
const (
	// AnomalyLostWrite: an acknowledged write the final state does not
	// account for.
	AnomalyLostWrite = "lost-write"
	// AnomalyUnexpectedValue: a final read found a value no operation
	// of the history wrote.
	AnomalyUnexpectedValue = "unexpected-value"
)

// lwWrite is a write of the history: its value, times and position.
type lwWrite struct {
	value           int64
	invoke, done    int64 // done: complete, or MaxInt64 when unknown
	pos, process    int
	name            string
	acked           bool
	invokeNs, endNs int64
}

// LostWrites is the lost-write check in its per-operation mode over the
// register history at path (the CoreWorkload's, docs/checks.md): every
// acknowledged write must be accounted for by the key's final read (the
// operations named FinalReadName), not only the last write per key. A
// write w of key k is accounted for when the final read of k returned w's
// value, or the value of a write x that may follow w — one not completed
// before w was invoked (x concurrent with w or after it, or x of unknown
// outcome, which may take effect at any time after its invoke). It is lost
// when the final read found no value, or the value of a write completed
// before w was invoked: the key's final state is older than an
// acknowledged write. A final value no write wrote is unexpected. A key
// written but not read back (its final read failed) is undecided: the
// verdict is unknown unless a write was lost elsewhere. Writes of unknown
// outcome are never lost.
func LostWrites(ctx context.Context, path string) (verdict.Verdict, error) {
	start := time.Now()
	writes := map[string][]lwWrite{}
	type final struct {
		has   bool
		value int64
		pos   int
		at    int64
	}
	finals := map[string]final{}
	n := 0
	torn, err := history.Each(ctx, path, func(op *history.Op) error {
		pos := n
		n++
		if len(op.Mops) != 1 {
			return nil
		}
		m := op.Mops[0]
		switch {
		case op.Name == FinalReadName && m.F == history.Read && op.Outcome == history.OK:
			finals[m.Key] = final{has: m.HasValue, value: m.Value, pos: pos, at: op.Complete}
		case m.F == history.Write && op.Outcome != history.Fail:
			w := lwWrite{value: m.Value, invoke: op.Invoke, done: op.Complete, pos: pos, process: op.Process, name: op.Name,
				acked: op.Outcome == history.OK, invokeNs: op.Invoke, endNs: op.Complete}
			if !w.acked {
				w.done = 1<<63 - 1
			}
			writes[m.Key] = append(writes[m.Key], w)
		}
		return nil
	})
	if err != nil {
		return verdict.Verdict{}, fmt.Errorf("lost-write check: %w", err)
	}
	v := verdict.Verdict{Checker: LostWritesName, Model: "per-operation", Operations: n,
		Forbidden: []string{AnomalyLostWrite, AnomalyUnexpectedValue}, AnomalyCounts: map[string]int{AnomalyLostWrite: 0, AnomalyUnexpectedValue: 0}}
	keys := make([]string, 0, len(writes))
	for k := range writes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	acked, undecidedKeys := 0, 0
	var undecided []string
	for _, k := range keys {
		ws := writes[k]
		f, ok := finals[k]
		for _, w := range ws {
			if w.acked {
				acked++
			}
		}
		if !ok {
			undecidedKeys++
			if len(undecided) < 5 {
				undecided = append(undecided, k)
			}
			continue
		}
		// the write the final state shows: nil for none (the initial state)
		var shown *lwWrite
		if f.has {
			for i := range ws {
				if ws[i].value == f.value {
					shown = &ws[i]
					break
				}
			}
			if shown == nil {
				v.Add(verdict.Anomaly{Name: AnomalyUnexpectedValue, Ops: []int{f.pos}, TimeNs: f.at,
					Explanation: fmt.Sprintf("unexpected-value: the final read of %s found %d, which no operation of the history wrote (a value of an earlier run, or garbage)", k, f.value)}, 5)
				continue
			}
		}
		for i := range ws {
			w := &ws[i]
			if !w.acked || w == shown {
				continue
			}
			if shown != nil && shown.done >= w.invoke {
				continue // superseded by a write that may follow it
			}
			found := "no value"
			ops := []int{w.pos, f.pos}
			if shown != nil {
				found = fmt.Sprintf("%d, written by operation %d (process %d, completed at %.3f ms, before this write began)", shown.value, shown.pos, shown.process, ms(shown.endNs))
				ops = []int{w.pos, shown.pos, f.pos}
			}
			v.Add(verdict.Anomaly{Name: AnomalyLostWrite, Ops: ops, TimeNs: w.endNs,
				Explanation: fmt.Sprintf("lost-write: %s of %s = %d (operation %d, process %d, %.3f .. %.3f ms) was acknowledged, but the final read found %s",
					w.name, k, w.value, w.pos, w.process, ms(w.invokeNs), ms(w.endNs), found)}, 5)
		}
	}
	v.Undecided = undecidedKeys
	if undecidedKeys > 0 {
		v.Notes = append(v.Notes, fmt.Sprintf("%d written keys have no final read (their read-back failed), e.g. %v: their writes are not judged", undecidedKeys, undecided))
	}
	if len(finals) == 0 && len(keys) > 0 {
		v.Notes = append(v.Notes, "the history has no final reads ("+FinalReadName+"): nothing was judged")
	}
	if torn {
		v.Notes = append(v.Notes, "the history's torn last line was skipped")
	}
	v.Measures = map[string]float64{"acknowledged_writes_count": float64(acked), "keys_count": float64(len(keys))}
	v.Judge()
	v.ElapsedMs = float64(time.Since(start).Microseconds()) / 1000
	return v, nil
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }
