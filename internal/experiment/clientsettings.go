package experiment

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
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

// poolShortfall returns a warning when a driver's connection pool (the
// client setting KIND.poolsize: postgres, galera, redis) holds fewer
// connections than the phase has threads, else "". Every thread of the
// open loop may hold a connection at once; the others wait for one from
// their operation's intended start, so the pool, not the database, puts
// operations behind schedule and the run is marked invalid (the cause
// of 4 of 5 invalid postgres-ha failover trials with a pool of 64 and
// 106-115 threads).
func poolShortfall(settings map[string]string, threads int) string {
	keys := slices.Sorted(maps.Keys(settings))
	for _, k := range keys {
		if !strings.HasSuffix(k, ".poolsize") {
			continue
		}
		n, err := strconv.Atoi(settings[k])
		if err != nil || n >= threads {
			continue
		}
		return fmt.Sprintf("%s %d is smaller than the %d threads: threads wait for a connection and their operations start behind schedule; unset %s (the driver sizes the pool from the threads) or raise it",
			k, n, threads, k)
	}
	return ""
}
