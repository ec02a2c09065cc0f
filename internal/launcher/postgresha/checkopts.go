package postgresha

// CheckOptions checks option values as Up would read them, without starting
// anything (launcher.OptionChecker).
func (Launcher) CheckOptions(opts map[string]string) error {
	_, err := parseOptions(opts)
	return err
}

// CheckDiskLayer implements launcher.DiskLayered: the directory of every
// node (the monitor's, each data node's: its pgdata with the WAL, and
// pg_autoctl's state) goes on the disk layer, with any options. A data
// node nK and its keeper nK-keeper share it: a power loss takes the whole
// node (nK-keeper; fault power-loss refuses nK alone while its keeper runs).
func (Launcher) CheckDiskLayer(map[string]string) error { return nil }
