package cassandra

import "strconv"

// clientSettings are the configuration's settings that decide failover
// figures, effective values by property key (ClientSettings). The driver
// never retries inside gocql (the runner's next operation is the retry):
// that is not a property, so it is not listed.
func (c config) clientSettings() map[string]string {
	return map[string]string{
		PropReadConsistency:  c.readCL.String(),
		PropWriteConsistency: c.writeCL.String(),
		PropTimeout:          c.timeout.String(),
		PropConnectTimeout:   c.connectTimeout.String(),
		PropNumConns:         strconv.Itoa(c.numConns),
		PropTokenAware:       strconv.FormatBool(c.tokenAware),
	}
}

// ClientSettings is the optional ability that reports the client settings
// which decide failover figures (consistency levels, timeouts, routing) as
// their effective values by property key, for env.json's client_settings.
func (d *Driver) ClientSettings() map[string]string {
	out := make(map[string]string, len(d.settings))
	for k, v := range d.settings {
		out[k] = v
	}
	return out
}
