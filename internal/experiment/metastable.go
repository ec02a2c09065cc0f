package experiment

import (
	"encoding/json"

	"github.com/faultbench/faultbench/internal/metastable"
)

// judgeMetastable puts the metastability verdict (internal/metastable) of
// a judged run into summary.json's metastable section: the trigger is the
// load spike and the schedule's faults.
func (r *scenarioRun) judgeMetastable() {
	mp := r.prep.Settings.Metastable
	if mp == nil || r.outcome == nil {
		return
	}
	rc := r.prep.Settings.Runner
	var v *metastable.Verdict
	if trig, ok := metastable.TriggerFrom(rc.Warmup+rc.Spike.At, rc.Spike.Duration, rc.Spike.Factor, r.run.Events.Events()); ok {
		v = metastable.Judge(r.outcome.Windows, trig, *mp)
	} else {
		v = &metastable.Verdict{Verdict: metastable.Unknown, Reason: "no trigger: neither a load spike (runner.spike.*) nor a fault step ran"}
	}
	b, err := json.Marshal(v)
	if err != nil {
		r.sum.Errors = append(r.sum.Errors, "metastable: "+err.Error())
		return
	}
	if r.sum.Sections == nil {
		r.sum.Sections = map[string]json.RawMessage{}
	}
	r.sum.Sections[metastable.SummaryKey] = b
}
