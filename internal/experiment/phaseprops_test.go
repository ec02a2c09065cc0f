package experiment

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/targets"
)

// TestPhaseProperties: the command line's files, overrides, flags and
// phase switches resolve to one set of properties and one phase, with a
// note for every override and bad input as an InvalidError.
func TestPhaseProperties(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "w.properties")
	if err := os.WriteFile(file, []byte("threadcount=4\ndotransactions=false\netcd.endpoints=http://a:2379\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	etcd, err := targets.Builtin().Get("etcd")
	if err != nil {
		t.Fatal(err)
	}
	eight, rate := 8, 250.0
	eps, other, empty := "http://a:2379", "http://b:2379", "http://a:2379,,"
	cases := []struct {
		name      string
		args      PhaseArgs
		phase     runner.Phase
		props     map[string]string
		notes     []string
		invalid   string // an InvalidError starting with this
		otherwise string // another error starting with this
	}{
		{name: "files and flags", args: PhaseArgs{Phase: runner.Run, Files: []string{file}, Overrides: []string{"recordcount=10"}, Threads: &eight, Rate: &rate},
			phase: runner.Load, props: map[string]string{"threadcount": "8", "target": "250", "recordcount": "10"},
			notes: []string{"note: -threads 8 overrides threadcount=4", "note: dotransactions=false (" + file + ":2): running the load phase"}},
		{name: "-t wins over dotransactions", args: PhaseArgs{Phase: runner.Load, Files: []string{file}, ForcePhase: runner.Run}, phase: runner.Run},
		{name: "no dotransactions: the command's phase", args: PhaseArgs{Phase: runner.Run}, phase: runner.Run},
		{name: "endpoints agree", args: PhaseArgs{Phase: runner.Run, Files: []string{file}, Endpoints: &eps}, phase: runner.Load, props: map[string]string{"etcd.endpoints": eps}},
		{name: "endpoints disagree", args: PhaseArgs{Phase: runner.Run, Files: []string{file}, Endpoints: &other}, invalid: "--endpoints http://b:2379 and etcd.endpoints=http://a:2379 ("},
		{name: "endpoints with a hole", args: PhaseArgs{Phase: runner.Run, Endpoints: &empty}, invalid: `--endpoints "http://a:2379,,": an empty address`},
		{name: "missing file", args: PhaseArgs{Phase: runner.Run, Files: []string{filepath.Join(dir, "nope")}}, invalid: ""},
		{name: "bad override", args: PhaseArgs{Phase: runner.Run, Overrides: []string{"novalue"}}, invalid: ""},
		{name: "dotransactions not a boolean", args: PhaseArgs{Phase: runner.Run, Overrides: []string{"dotransactions=perhaps"}}, otherwise: "-p: property dotransactions"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var notes bytes.Buffer
			tc.args.Notes = &notes
			p, phase, err := PhaseProperties(etcd, tc.args)
			var ie *InvalidError
			switch {
			case tc.invalid != "" || strings.HasPrefix(tc.name, "missing") || strings.HasPrefix(tc.name, "bad"):
				if !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), tc.invalid) {
					t.Fatalf("err = %v, want an InvalidError starting %q", err, tc.invalid)
				}
				return
			case tc.otherwise != "":
				if err == nil || errors.As(err, &ie) || !strings.HasPrefix(err.Error(), tc.otherwise) {
					t.Fatalf("err = %v, want %q", err, tc.otherwise)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if phase != tc.phase {
				t.Errorf("phase %s, want %s", phase, tc.phase)
			}
			for k, v := range tc.props {
				if got := p.String(k, ""); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			for _, n := range tc.notes {
				if !strings.Contains(notes.String(), n) {
					t.Errorf("notes %q lack %q", notes.String(), n)
				}
			}
		})
	}
}
