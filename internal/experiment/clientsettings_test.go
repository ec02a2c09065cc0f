package experiment

import (
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/runner"
)

// noSettingsDriver is a driver without the ClientSettings ability.
type noSettingsDriver struct{ driver.Driver }

// settingsDriver is a driver with the ClientSettings ability.
type settingsDriver struct{ driver.Driver }

func (settingsDriver) ClientSettings() map[string]string {
	return map[string]string{"mem.requireleader": "true"}
}

func TestClientSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		prep *Prepared
		want map[string]string
	}{
		{"driver without the ability: the harness's timeout, defaulted", &Prepared{Driver: noSettingsDriver{}},
			map[string]string{"optimeout": "10s", "runner.retry": "none"}},
		{"driver with the ability", &Prepared{Driver: settingsDriver{}, Settings: Settings{Runner: runner.Config{OpTimeout: 2 * time.Second}}},
			map[string]string{"optimeout": "2s", "mem.requireleader": "true", "runner.retry": "none"}},
		{"a retry policy and a spike", &Prepared{Driver: noSettingsDriver{}, Settings: Settings{Runner: runner.Config{
			Retry: runner.DefaultRetry(runner.RetryImmediate), Spike: runner.Spike{At: time.Second, Duration: 2 * time.Second, Factor: 3}}}},
			map[string]string{"optimeout": "10s", "runner.retry": "immediate", "runner.retry.max": "3",
				"runner.spike.at": "1s", "runner.spike.duration": "2s", "runner.spike.factor": "3"}},
		{"timed-out calls kept busy: the option and its effective bound", &Prepared{Driver: noSettingsDriver{}, Settings: Settings{Runner: runner.Config{
			Threads: 8, Busy: runner.Busy{Enabled: true}}}},
			map[string]string{"optimeout": "10s", "runner.retry": "none", "runner.timeout.busy": "true", "runner.timeout.busy.max": "32"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := clientSettings(tc.prep)
			if len(got) != len(tc.want) {
				t.Errorf("clientSettings = %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}
