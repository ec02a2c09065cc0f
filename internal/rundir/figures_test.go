package rundir

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/faultbench/faultbench/internal/runfile"
)

// TestSummarySections checks that a program workload's sections are
// written as top-level keys of summary.json and read back, that a summary
// without them is encoded as before, and that a section may not take one
// of the summary's own keys.
func TestSummarySections(t *testing.T) {
	t.Run("round trip", func(t *testing.T) {
		in := Summary{Target: "txkv", Checks: map[string]bool{"x": true},
			Figures:  []Figure{{Group: "X", Name: "n", Value: 1.5}},
			Sections: map[string]json.RawMessage{"x": json.RawMessage(`{"a":1}`), "b": json.RawMessage(`[2]`)}}
		b, err := json.MarshalIndent(in, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(b, &top); err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		var x bytes.Buffer
		if err := json.Compact(&x, top["x"]); err != nil || x.String() != `{"a":1}` {
			t.Errorf("section x = %s", top["x"])
		}
		var out Summary
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		if len(out.Sections) != 2 || out.Target != "txkv" || len(out.Figures) != 1 || out.Figures[0] != in.Figures[0] {
			t.Errorf("read back %+v", out)
		}
		var a map[string]int
		if err := json.Unmarshal(out.Sections["x"], &a); err != nil || a["a"] != 1 {
			t.Errorf("section x read back %s", out.Sections["x"])
		}
	})
	t.Run("no sections: the plain encoding", func(t *testing.T) {
		s := Summary{Target: "etcd", Threads: 3}
		got, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(summaryJSON(s))
		if !bytes.Equal(got, want) {
			t.Errorf("got %s\nwant %s", got, want)
		}
		var out Summary
		if err := json.Unmarshal(got, &out); err != nil || out.Sections != nil {
			t.Errorf("read back sections %v, %v", out.Sections, err)
		}
	})
	t.Run("own key refused", func(t *testing.T) {
		for _, k := range []string{"target", "totals", "checks_passed", "workload_figures", ""} {
			_, err := json.Marshal(Summary{Sections: map[string]json.RawMessage{k: json.RawMessage(`1`)}})
			if err == nil {
				t.Errorf("section %q accepted", k)
			}
		}
	})
	t.Run("the TPC-C corpus", func(t *testing.T) {
		files, _ := runfile.Glob("../../docs/results/data/tpcc/*/summary.json")
		if len(files) == 0 {
			t.Skip("no TPC-C corpus")
		}
		for _, f := range files {
			b, err := runfile.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var top map[string]json.RawMessage
			if err := json.Unmarshal(b, &top); err != nil {
				t.Fatal(err)
			}
			var s Summary
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(s.Sections) != 1 || !bytes.Equal(s.Sections["tpcc"], top["tpcc"]) {
				t.Errorf("%s: sections %v", f, s.Sections)
			}
			// written again, every key holds what it held (the tpcc key
			// moves after the summary's own keys)
			again, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var top2 map[string]json.RawMessage
			if err := json.Unmarshal(again, &top2); err != nil {
				t.Fatal(err)
			}
			for k, v := range top {
				var a, b2 bytes.Buffer
				_ = json.Compact(&a, v)
				_ = json.Compact(&b2, top2[k])
				if a.String() != b2.String() {
					t.Errorf("%s: key %s: %s, written again %s", f, k, a.String(), b2.String())
				}
			}
		}
	})
}
