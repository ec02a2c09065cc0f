package verdict

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	tests := []struct {
		name      string
		counts    map[string]int
		forbidden []string
		undecided int
		want      Valid
	}{
		{"nothing found", nil, nil, 0, True},
		{"no operations", nil, nil, -1, Unknown},
		{"zero counts", map[string]int{"G0": 0}, []string{"G0"}, 0, True},
		{"forbidden found", map[string]int{"G0": 2}, []string{"G0"}, 0, False},
		{"allowed found", map[string]int{"G2-item": 1}, []string{"G0"}, 0, True},
		{"all forbidden without a list", map[string]int{"lost": 1}, nil, 0, False},
		{"undecided", nil, nil, 3, Unknown},
		{"found beats undecided", map[string]int{"G0": 1}, nil, 3, False},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Verdict{AnomalyCounts: tt.counts, Forbidden: tt.forbidden, Undecided: max(tt.undecided, 0), Operations: 10}
			if tt.undecided < 0 {
				v.Operations = 0
			}
			v.Judge()
			if v.Valid != tt.want {
				t.Fatalf("valid = %s, want %s", v.Valid, tt.want)
			}
		})
	}
}

func TestJSONAndLine(t *testing.T) {
	v := Verdict{Checker: "isolation", Model: "serializable", Operations: 3, Forbidden: []string{"G0"}}
	v.Add(Anomaly{Name: "G0", Explanation: "x"}, 1)
	v.Add(Anomaly{Name: "G0", Explanation: "y"}, 1)
	v.Add(Anomaly{Name: "G2-item", Explanation: "z"}, 1)
	v.AnomalyCounts["G1a"] = 0
	v.Judge()
	if len(v.Anomalies) != 2 || v.AnomalyCounts["G0"] != 2 {
		t.Fatalf("kept %d examples, counted %v", len(v.Anomalies), v.AnomalyCounts)
	}
	if got, want := v.Line(), "isolation (serializable): valid=false, 3 operations; anomalies: G0 2, G2-item 1 (allowed)"; got != want {
		t.Errorf("line %q\nwant %q", got, want)
	}
	for _, tt := range []struct {
		v    Valid
		json string
	}{{True, "true"}, {False, "false"}, {Unknown, `"unknown"`}} {
		b, err := json.Marshal(tt.v)
		if err != nil || string(b) != tt.json {
			t.Errorf("%v -> %s %v", tt.v, b, err)
		}
		var back Valid
		if err := json.Unmarshal(b, &back); err != nil || back != tt.v {
			t.Errorf("%s -> %v %v", b, back, err)
		}
	}
	var bad Valid
	if err := json.Unmarshal([]byte(`"yes"`), &bad); err == nil {
		t.Error("no error for \"yes\"")
	}
	b, _ := v.JSON()
	if !strings.Contains(string(b), `"valid": false`) || !strings.Contains(string(b), `"anomaly_counts"`) {
		t.Errorf("json %s", b)
	}
}
