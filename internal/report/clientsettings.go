package report

import (
	"sort"

	"github.com/faultbench/faultbench/internal/rundir"
)

// clientSettingsRows are the environment table's rows of env.json's
// client_settings: one "client KEY" row per setting, sorted by key, so a
// reader sees the client choices (retries, timeouts, consistency, etcd's
// leader requirement) that decide the failover figures.
func clientSettingsRows(e *rundir.Env) [][2]string {
	keys := make([]string, 0, len(e.ClientSettings))
	for k := range e.ClientSettings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rows := make([][2]string, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, [2]string{"client " + k, e.ClientSettings[k]})
	}
	return rows
}
