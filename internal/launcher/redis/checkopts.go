package redis

// CheckOptions checks option values as Up would read them, without starting
// anything or looking for the binary (launcher.OptionChecker).
func (ClusterLauncher) CheckOptions(opts map[string]string) error {
	_, err := parseValues(opts)
	return err
}

// CheckOptions checks option values as Up would read them, without starting
// anything or looking for the binary (launcher.OptionChecker).
func (StandaloneLauncher) CheckOptions(opts map[string]string) error {
	_, err := parseValues(opts)
	return err
}

// CheckDiskLayer implements launcher.DiskLayered: every node's data
// directory (its AOF, and nodes.conf of a cluster node) goes on the disk
// layer, with any options.
func (ClusterLauncher) CheckDiskLayer(map[string]string) error { return nil }

// CheckDiskLayer implements launcher.DiskLayered: every node's data
// directory (its AOF) goes on the disk layer, with any options.
func (StandaloneLauncher) CheckDiskLayer(map[string]string) error { return nil }
