package sqldb

import "strconv"

// ClientSettings is the optional ability that reports the client settings
// which decide failover figures (the connection timeout per host, the
// pool) as their effective values by property key, for env.json's
// client_settings.
func (drv *Driver) ClientSettings() map[string]string {
	pre := drv.d.prefix()
	return map[string]string{
		pre + propConnTimeout: drv.cfg.connTimeout.String(),
		pre + propPoolSize:    strconv.Itoa(drv.cfg.poolSize),
	}
}
