package redis

import "strconv"

// clientSettings are the configuration's settings that decide failover
// figures, effective values by property key (ClientSettings).
func (c config) clientSettings() map[string]string {
	none := func(d interface{ String() string }, zero bool) string {
		if zero {
			return "none"
		}
		return d.String()
	}
	return map[string]string{
		PropMode:         c.mode,
		PropMaxRetries:   strconv.Itoa(c.maxRetries),
		PropMaxRedirects: strconv.Itoa(c.maxRedirects),
		PropDialTimeout:  c.dialTimeout.String(),
		PropReadTimeout:  none(c.readTimeout, c.readTimeout == 0),
		PropWriteTimeout: none(c.writeTimeout, c.writeTimeout == 0),
		PropWait:         strconv.Itoa(c.wait),
		PropWaitTimeout:  c.waitTimeout.String(),
		PropPoolSize:     strconv.Itoa(c.poolSize),
	}
}

// ClientSettings is the optional ability that reports the client settings
// which decide failover figures (retries, redirects, timeouts, WAIT) as
// their effective values by property key, for env.json's client_settings.
func (d *Driver) ClientSettings() map[string]string {
	out := make(map[string]string, len(d.settings))
	for k, v := range d.settings {
		out[k] = v
	}
	return out
}
