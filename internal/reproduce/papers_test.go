package reproduce

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/scenarios"
	"github.com/faultbench/faultbench/workloads"
)

var testEnv = Env{OpenWorkload: workloads.Open}

// update rewrites the reproduction pages' generated sections from their
// runs (go test -run TestPagesMatchRuns ./internal/reproduce/ -update),
// as `faultbench reproduce tables DIR --page FILE` does for one page.
var update = flag.Bool("update", false, "rewrite the generated sections of docs/reproductions/*.md from their runs")

// TestShippedScenariosParse: every file under scenarios/<paper>/ parses
// and validates as shipped, and a step of the paper's catalog runs it
// (nothing shipped for a paper is left out of `faultbench reproduce`).
func TestShippedScenariosParse(t *testing.T) {
	for _, p := range Papers() {
		t.Run(p.Name, func(t *testing.T) {
			names := scenarios.In(p.Name)
			if len(names) == 0 {
				t.Fatalf("no scenario under scenarios/%s/", p.Name)
			}
			for _, n := range names {
				t.Run(strings.TrimPrefix(n, p.Name+"/"), func(t *testing.T) {
					b, err := scenarios.Read(n)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := scenario.Parse(b, "scenarios/"+n+".yaml", nil); err != nil {
						t.Fatal(err)
					}
					if !slices.ContainsFunc(p.Steps, func(s Step) bool { return s.File == n }) {
						t.Errorf("scenarios/%s.yaml: no step of %s runs it", n, p.Name)
					}
				})
			}
		})
	}
}

// TestStepsValidate: every step of every paper validates at the scales it
// runs at, as `faultbench reproduce --dry-run` checks it: its file with
// the scale's assignments, the target, workload and properties, a sweep's
// every step, the UPB configuration.
func TestStepsValidate(t *testing.T) {
	for _, p := range Papers() {
		ids := map[string]bool{}
		for _, st := range p.Steps {
			if ids[st.ID] {
				t.Errorf("%s: step %s twice", p.Name, st.ID)
			}
			ids[st.ID] = true
		}
		for _, sc := range []Scale{Small, Full} {
			steps := p.StepsFor(sc)
			if len(steps) == 0 {
				t.Errorf("%s: no step at scale %s", p.Name, sc)
			}
			for _, st := range steps {
				t.Run(p.Name+"/"+string(sc)+"/"+st.ID, func(t *testing.T) {
					if err := ValidateStep(st, sc, testEnv); err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
}

// TestValidateStepRejects is the negative control of the two above: a
// wrong assignment, a wrong kind and a missing file are refused.
func TestValidateStepRejects(t *testing.T) {
	good := Step{ID: "x", File: "txkv-recovery/server-crash", Kind: KindScenario, Table: TableReconfig}
	if err := ValidateStep(good, Small, testEnv); err != nil {
		t.Fatalf("the control step is refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Step)
		want string
	}{
		{"bad value", func(s *Step) { s.Small = []string{"load.rate=banana"} }, "load.rate"},
		{"unknown field", func(s *Step) { s.Sets = []string{"load.nonsense=1"} }, "nonsense"},
		{"wrong kind", func(s *Step) { s.Kind = KindSweep }, "the catalog runs it as sweep"},
		{"no such file", func(s *Step) { s.File = "txkv-recovery/nothing" }, "no built-in scenario"},
		{"sweep step invalid", func(s *Step) {
			*s = Step{ID: "y", File: "scalability/sb3-r", Kind: KindSweep, Table: TableSweep, Sets: []string{"sweep.rate_per_node=0"}}
		}, "rate_per_node"},
		{"upb invalid", func(s *Step) {
			*s = Step{ID: "z", File: "upb/upb-etcd", Kind: KindUPB, Table: TableUPB, Sets: []string{"upb.kmax=11"}}
		}, "kmax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := good
			tc.mod(&st)
			err := ValidateStep(st, Small, testEnv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	for _, n := range Names() {
		p, err := Lookup(n)
		if err != nil || p.Name != n || p.Title == "" || p.Cite == "" || !strings.HasPrefix(p.Page, "docs/reproductions/") {
			t.Errorf("Lookup(%s) = %+v, %v", n, p, err)
		}
	}
	_, err := Lookup("hbase")
	if err == nil {
		t.Fatal("an unknown paper is accepted")
	}
	for _, p := range Papers() {
		if !strings.Contains(err.Error(), p.Name) || !strings.Contains(err.Error(), p.Title) {
			t.Errorf("the error does not list %s (%s): %v", p.Name, p.Title, err)
		}
	}
}

func TestSpecValidate(t *testing.T) {
	ok := Spec{Paper: "upb", Scale: Small, RunsDir: "runs", Out: os.Stdout, Err: os.Stderr}
	for _, tc := range []struct {
		name string
		mod  func(*Spec)
		want string // "" valid
	}{
		{"valid", func(*Spec) {}, ""},
		{"unknown paper", func(s *Spec) { s.Paper = "voltdb" }, "unknown paper"},
		{"no paper", func(s *Spec) { s.Paper = "" }, "unknown paper"},
		{"bad scale", func(s *Spec) { s.Scale = "medium" }, "scale \"medium\""},
		{"no runs dir", func(s *Spec) { s.RunsDir = "" }, "runs directory"},
		{"dry run needs no runs dir", func(s *Spec) { s.RunsDir = ""; s.DryRun = true }, ""},
		{"no writers", func(s *Spec) { s.Out = nil }, "output writers"},
		{"known step", func(s *Spec) { s.Only = []string{"upb-etcd"} }, ""},
		{"unknown step", func(s *Spec) { s.Only = []string{"upb-voltdb"} }, `step "upb-voltdb": not a step of upb at scale small (its steps: upb-etcd)`},
		{"step of the other scale", func(s *Spec) { s.Only = []string{"upb-galera"} }, `step "upb-galera": not a step of upb at scale small`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			tc.mod(&s)
			err := s.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestPagesMatchRuns: every paper has its reproduction page with a
// generated section, and the section is what `faultbench reproduce`
// writes from the runs the page uses (docs/reproductions/data/<paper>/,
// a reproduction directory with its manifest.json) — or, while no run is
// committed, the placeholder listing the steps. A page edited by hand, or
// runs changed without re-generating the page, fails here.
func TestPagesMatchRuns(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, p := range Papers() {
		t.Run(p.Name, func(t *testing.T) {
			page, err := os.ReadFile(filepath.Join(root, p.Page))
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, "docs", "reproductions", "data", p.Name)
			m, err := ReadManifest(dir)
			if errors.Is(err, os.ErrNotExist) {
				m, dir = nil, ""
			} else if err != nil {
				t.Fatal(err)
			}
			if *update {
				body, err := Tables(p, m, dir)
				if err != nil {
					t.Fatal(err)
				}
				if err := UpdatePage(filepath.Join(root, p.Page), p.Name, body); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err := CheckPage(page, p, m, dir); err != nil {
				t.Fatalf("%s: %v", p.Page, err)
			}
		})
	}
}
