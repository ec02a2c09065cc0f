// Package verdict is the result every checker over a history gives: valid
// (true, false or unknown), the anomalies found by name and count, each
// explained, and how many operations were checked. summary.json's
// checks.<checker> and `faultbench check` print it.
package verdict

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Valid is a checker's answer: whether the history is valid under what it
// checks.
type Valid int8

// The answers. Unknown is never a pass: some part of the history could not
// be decided (a time limit, operations of unknown outcome that decide it).
const (
	Unknown Valid = iota
	True
	False
)

// String is true, false or unknown.
func (v Valid) String() string {
	switch v {
	case True:
		return "true"
	case False:
		return "false"
	}
	return "unknown"
}

// MarshalJSON writes true, false or "unknown".
func (v Valid) MarshalJSON() ([]byte, error) {
	switch v {
	case True:
		return []byte("true"), nil
	case False:
		return []byte("false"), nil
	}
	return []byte(`"unknown"`), nil
}

// UnmarshalJSON reads true, false or "unknown".
func (v *Valid) UnmarshalJSON(b []byte) error {
	switch strings.TrimSpace(string(b)) {
	case "true":
		*v = True
	case "false":
		*v = False
	case `"unknown"`:
		*v = Unknown
	default:
		return fmt.Errorf("valid: want true, false or \"unknown\", got %s", b)
	}
	return nil
}

// Anomaly is one anomaly found, explained.
type Anomaly struct {
	// Name is the anomaly's name (G0, G1c, G-single, lost-update, ...;
	// docs/checks.md).
	Name string `json:"name"`
	// Ops are the operations involved: their 0-based positions among the
	// history's operations (line order, header excluded).
	Ops []int `json:"ops"`
	// TimeNs is when it happened: the latest complete time of its
	// operations, ns since the run's t = 0 (to draw it next to faults).
	TimeNs int64 `json:"t_ns"`
	// Explanation says in plain text what happened: the operations, and
	// for a cycle each edge and why it exists.
	Explanation string `json:"explanation"`
}

// Verdict is a checker's result.
type Verdict struct {
	Checker string `json:"checker"`
	// Model is the consistency model judged against (isolation), or the
	// data model (linearizable: "register").
	Model string `json:"model,omitempty"`
	Valid Valid  `json:"valid"`
	// Operations is the number of operations the checker read.
	Operations int `json:"operations"`
	// AnomalyCounts is the number found of each anomaly (a forbidden one
	// makes Valid false); names the model allows are counted too, listed
	// in Allowed.
	AnomalyCounts map[string]int `json:"anomaly_counts"`
	// Forbidden lists the anomaly names the model forbids.
	Forbidden []string `json:"forbidden,omitempty"`
	// Anomalies are explained examples, a few of each name.
	Anomalies []Anomaly `json:"anomalies,omitempty"`
	// Undecided counts what could not be decided (linearizable: keys whose
	// time limit ran out); any makes a verdict without anomalies unknown.
	Undecided int `json:"undecided_count,omitempty"`
	// Measures are checker-specific figures (set: visibility latencies).
	Measures map[string]float64 `json:"measures,omitempty"`
	// Files are files the checker wrote (linearizable: the visualisation
	// of each failed key).
	Files []string `json:"files,omitempty"`
	// Notes say what the figures do not (a torn last line skipped, a
	// search limit reached).
	Notes []string `json:"notes,omitempty"`
	// ElapsedMs is how long the check took.
	ElapsedMs float64 `json:"elapsed_ms"`
}

// Add counts one anomaly of name and keeps its explanation when fewer
// than keep of that name are kept already.
func (v *Verdict) Add(a Anomaly, keep int) {
	if v.AnomalyCounts == nil {
		v.AnomalyCounts = map[string]int{}
	}
	v.AnomalyCounts[a.Name]++
	if v.AnomalyCounts[a.Name] <= keep {
		v.Anomalies = append(v.Anomalies, a)
	}
}

// Judge sets Valid: false when an anomaly the forbidden list names (all of
// them when forbidden is nil) was found, else unknown when something was
// undecided or there were no operations at all (nothing was checked),
// else true.
func (v *Verdict) Judge() {
	v.Valid = True
	if v.Undecided > 0 || v.Operations == 0 {
		v.Valid = Unknown
	}
	for name, n := range v.AnomalyCounts {
		if n > 0 && (v.Forbidden == nil || slices.Contains(v.Forbidden, name)) {
			v.Valid = False
		}
	}
}

// Line is the verdict as one terminal line: checker, valid, operations
// and the anomalies by name.
func (v *Verdict) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", v.Checker)
	if v.Model != "" {
		fmt.Fprintf(&b, " (%s)", v.Model)
	}
	fmt.Fprintf(&b, ": valid=%s, %d operations", v.Valid, v.Operations)
	names := make([]string, 0, len(v.AnomalyCounts))
	for n, c := range v.AnomalyCounts {
		if c > 0 {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for i, n := range names {
		sep := ", "
		if i == 0 {
			sep = "; anomalies: "
		}
		allowed := ""
		if v.Forbidden != nil && !slices.Contains(v.Forbidden, n) {
			allowed = " (allowed)"
		}
		fmt.Fprintf(&b, "%s%s %d%s", sep, n, v.AnomalyCounts[n], allowed)
	}
	if v.Undecided > 0 {
		fmt.Fprintf(&b, "; %d undecided", v.Undecided)
	}
	return b.String()
}

// JSON is the verdict indented, for files.
func (v *Verdict) JSON() ([]byte, error) {
	return json.MarshalIndent(v, "", "  ")
}
