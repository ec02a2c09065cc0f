package kind

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestBuiltin(t *testing.T) {
	r := Builtin()
	for _, n := range r.Names() {
		k, _ := r.Lookup(n)
		t.Run(n, func(t *testing.T) {
			if err := k.Validate(); err != nil {
				t.Fatal(err)
			}
			if k.Color == 0 || k.Color == Grey {
				t.Errorf("colour %s: every built-in kind is drawn in its family's colour", k.Color.Hex())
			}
			for _, rs := range k.Restores {
				rk, ok := r.Lookup(rs)
				if !ok {
					t.Errorf("restore %q is not a kind", rs)
				} else if rk.Family != k.Family {
					t.Errorf("restore %q is of family %s, not %s", rs, rk.Family, k.Family)
				}
			}
		})
	}
	// Builtin is a fresh value: adding to one leaves the next alone.
	if err := r.Add(Kind{Name: "extra", Family: Disk}); err != nil {
		t.Fatal(err)
	}
	if _, ok := Builtin().Lookup("extra"); ok {
		t.Error("a kind added to one registry shows up in the next Builtin()")
	}
}

func TestValidateKind(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    Kind
		want string // "" = valid
	}{
		{"plain", Kind{Name: "slow-disk", Family: Disk, Params: []Param{{Name: "rate", Type: Int}}}, ""},
		{"no name", Kind{Family: Disk}, "want a lower-case plain name"},
		{"upper case", Kind{Name: "Kill", Family: Process}, "want a lower-case plain name"},
		{"no family", Kind{Name: "x"}, "no family"},
		{"parameter twice", Kind{Name: "x", Family: Disk, Params: []Param{{Name: "a", Type: Int}, {Name: "a", Type: Int}}}, `"a" declared twice`},
		{"unknown type", Kind{Name: "x", Family: Disk, Params: []Param{{Name: "a", Type: "float"}}}, `unknown type "float"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.k.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if NewRegistry().Add(tc.k) == nil {
				t.Error("Add accepted a kind that does not validate")
			}
		})
	}
}

func TestCheckParams(t *testing.T) {
	r := Builtin()
	for _, tc := range []struct {
		name   string
		action string
		raw    map[string]any
		want   []string // one substring per error, in order; none: valid
		check  func(t *testing.T, v Values)
	}{
		{"no parameters", "kill", nil, nil, nil},
		{"hold as a duration", "crash-client", map[string]any{"hold": time.Second}, nil,
			func(t *testing.T, v Values) {
				if v.Duration("hold") != time.Second {
					t.Errorf("hold %v", v.Duration("hold"))
				}
			}},
		{"hold as text", "crash-client", map[string]any{"hold": "500ms"}, nil,
			func(t *testing.T, v Values) {
				if v.Duration("hold") != 500*time.Millisecond {
					t.Errorf("hold %v", v.Duration("hold"))
				}
			}},
		{"hold too long", "crash-client", map[string]any{"hold": time.Hour}, []string{"hold 1h0m0s: allowed 0..10m0s"}, nil},
		{"hold not a duration", "crash-client", map[string]any{"hold": "soon"}, []string{`hold "soon": want a duration`}, nil},
		{"hold of the wrong Go type", "crash-client", map[string]any{"hold": 3}, []string{"hold 3: want a duration"}, nil},
		{"hold on kill", "kill", map[string]any{"hold": time.Second}, []string{"hold is a parameter of crash-client only, not of kill"}, nil},
		{"streaming on kill", "kill", map[string]any{"streaming": "5mbit"}, []string{"streaming is a parameter of add-node and remove-node only, not of kill"}, nil},
		{"unknown parameter", "kill", map[string]any{"speed": "1"}, []string{"speed is not a parameter of kill"}, nil},
		{"count and streaming", "add-node", map[string]any{"count": "3", "streaming": "5mbit"}, nil,
			func(t *testing.T, v Values) {
				if v.Int("count") != 3 || v.String("streaming") != "5mbit" {
					t.Errorf("values %v", v)
				}
			}},
		{"count too high", "add-node", map[string]any{"count": 9}, []string{"count 9: allowed 1..8"}, nil},
		{"bad streaming", "remove-node", map[string]any{"streaming": "fast"}, []string{`streaming "fast"`}, nil},
		{"streaming without bootstrap", "add-node", map[string]any{"streaming": "5mbit", "bootstrap": false}, []string{"no effect with bootstrap: false"}, nil},
		{"two problems", "add-node", map[string]any{"count": 0, "hold": time.Second}, []string{"count 0", "hold is a parameter of crash-client"}, nil},
		{"unknown action", "no-such", map[string]any{"x": 1}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, errs := r.CheckParams(tc.action, tc.raw)
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %v, want %d: %q", errs, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d %q, want %q", i, errs[i], w)
				}
			}
			if tc.check != nil {
				tc.check(t, v)
			}
		})
	}
}

func TestParamErrorBlame(t *testing.T) {
	_, errs := Builtin().CheckParams("add-node", map[string]any{"streaming": "5mbit", "bootstrap": false})
	if len(errs) != 1 || errs[0].Param != "streaming" || errs[0].Kind != "add-node" {
		t.Fatalf("errors %+v: want one blamed on streaming", errs)
	}
	_, errs = Builtin().CheckParams("kill", map[string]any{"count": 2})
	var pe *ParamError
	if len(errs) != 1 || !errors.As(errs[0], &pe) || pe.Err != nil || strings.Join(pe.Takers, ",") != "add-node" {
		t.Fatalf("errors %+v: want count's takers", errs)
	}
}

func TestUndoes(t *testing.T) {
	r := Builtin()
	for _, tc := range []struct {
		inject  string
		jf      Family
		restore string
		rf      Family
		want    bool
	}{
		{"kill", "", "start", "", true},
		{"stop", Process, "start", Process, true},
		{"kill", "", "resume", "", false},
		{"pause", "", "resume", "", true},
		{"pause", "", "start", "", false},
		{"partition", "", "heal", "", true},
		{"bandwidth", "", "heal", "", true},
		{"delay", "", "start", "", false},
		{"restart", "", "start", "", true},       // lists no restores: same family
		{"add-node", "", "start", "", false},     // scale is not process
		{"scramble", "", "repair", "", true},     // unknown: anything
		{"scramble", Disk, "repair", Disk, true}, // unknown kinds, the events' families agree
		{"scramble", Disk, "heal", "", false},    // the events' family against the registry's
	} {
		if got := r.Undoes(tc.inject, tc.jf, tc.restore, tc.rf); got != tc.want {
			t.Errorf("Undoes(%s/%s, %s/%s) = %v, want %v", tc.inject, tc.jf, tc.restore, tc.rf, got, tc.want)
		}
	}
}

func TestLabelColor(t *testing.T) {
	r := Builtin()
	if r.Label("kill") != "kill" || r.Label("no-such") != "no-such" {
		t.Errorf("labels %q %q", r.Label("kill"), r.Label("no-such"))
	}
	if r.Color("kill") != r.Color("start") || r.Color("kill") == r.Color("pause") || r.Color("no-such") != Grey {
		t.Error("colours: process kinds share one, pause has another, unknown is grey")
	}
	if err := r.Add(Kind{Name: "x", Family: Disk, Label: "x (disk)", Color: 0x123456}); err != nil {
		t.Fatal(err)
	}
	if r.Label("x") != "x (disk)" || r.Color("x").Hex() != "#123456" {
		t.Errorf("added kind: %q %s", r.Label("x"), r.Color("x").Hex())
	}
}

func TestParseStreaming(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		err  bool
	}{
		{"", StreamKeep, false}, {"unthrottled", StreamUnthrottled, false}, {"off", StreamUnthrottled, false},
		{"5mbit", 5, false}, {"40 Mbit/s", 40, false}, {"7", 7, false},
		{"fast", 0, true}, {"-1mbit", 0, true}, {"100001mbit", 0, true},
	} {
		got, err := ParseStreaming(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("ParseStreaming(%q) = %d, %v", tc.in, got, err)
		}
	}
}

func TestDescriptions(t *testing.T) {
	k := Kind{Name: "fill-disk", Family: Disk, Restores: []string{"heal"}, Label: "disk full", Color: 0x0a0b0c}
	back, err := k.Describe().Kind()
	if err != nil {
		t.Fatal(err)
	}
	if back.Name != k.Name || back.Family != k.Family || back.Label != k.Label || back.Color != k.Color || !back.Undoes("heal") {
		t.Errorf("round trip: %+v", back)
	}
	r := Builtin()
	err = r.AddDescriptions([]Description{k.Describe(), {Name: "bad", Family: Disk, Color: "red"}, {Name: "nofamily", Color: "#000000"}})
	if err == nil || !strings.Contains(err.Error(), `colour "red"`) || !strings.Contains(err.Error(), "no family") {
		t.Errorf("error %v, want the bad colour and the missing family", err)
	}
	if r.Label("fill-disk") != "disk full" {
		t.Error("the valid description was not added")
	}
	if _, ok := r.Lookup("bad"); ok {
		t.Error("a description with a bad colour was added")
	}
}
