package galera

// CheckOptions checks option values as Up would read them, without starting
// anything (launcher.OptionChecker).
func (Launcher) CheckOptions(opts map[string]string) error {
	_, err := parseOptions(opts)
	return err
}

// CheckDiskLayer implements launcher.DiskLayered: every node's directory
// (its InnoDB data and redo log, Galera's grastate.dat and gcache, my.cnf,
// socket and error log) goes on the disk layer, with any options.
func (Launcher) CheckDiskLayer(map[string]string) error { return nil }
