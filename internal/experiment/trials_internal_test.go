package experiment

import (
	"errors"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/launcher/postgresha"
	"github.com/faultbench/faultbench/internal/scenario"
)

// refusingLauncher is a launcher whose clusters cannot serve several
// trials; only Kind and RefuseTrialReuse are called.
type refusingLauncher struct{ launcher.Launcher }

func (refusingLauncher) Kind() string            { return "wedgy" }
func (refusingLauncher) RefuseTrialReuse() error { return errors.New("it wedges") }

// plainLauncher has no opinion on reuse.
type plainLauncher struct{ launcher.Launcher }

func TestCheckReuse(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    launcher.Launcher
		mode string
		want string // in the error; "" for none
	}{
		{"a launcher that refuses, reuse", refusingLauncher{}, scenario.TrialsReuse, "wedgy cannot run trials on one reused cluster: it wedges; run them with trials.mode fresh"},
		{"a launcher that refuses, fresh", refusingLauncher{}, scenario.TrialsFresh, ""},
		{"a launcher without the ability, reuse", plainLauncher{}, scenario.TrialsReuse, ""},
		{"no launcher (endpoints)", nil, scenario.TrialsReuse, ""},
		{"postgres-ha refuses reuse", postgresha.Launcher{}, scenario.TrialsReuse, "postgres-ha cannot run trials on one reused cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkReuse(tc.l, tc.mode)
			if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("checkReuse = %v, want %q", err, tc.want)
			}
		})
	}
}
