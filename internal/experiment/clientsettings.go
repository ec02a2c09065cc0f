package experiment

import (
	"maps"
	"time"
)

// clientSettings are the prepared phase's client settings that decide
// failover figures, for env.json's client_settings: the driver's (its
// optional ClientSettings ability: retries, timeouts, consistency, etcd's
// leader requirement, effective values by property key) and the harness's
// per-operation timeout (optimeout). nil when there is nothing to say.
func clientSettings(prep *Prepared) map[string]string {
	out := map[string]string{}
	if cs, ok := prep.Driver.(interface{ ClientSettings() map[string]string }); ok {
		maps.Copy(out, cs.ClientSettings())
	}
	to := prep.Settings.Runner.OpTimeout
	if to == 0 {
		to = 10 * time.Second // the runner's default
	}
	out["optimeout"] = to.String()
	maps.Copy(out, prep.Settings.Runner.ClientSettings()) // runner.retry, runner.spike.*
	return out
}
