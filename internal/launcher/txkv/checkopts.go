package txkv

// CheckOptions checks option values as Up would read them, without starting
// anything (launcher.OptionChecker).
func (Launcher) CheckOptions(opts map[string]string) error {
	_, err := parseOptions(opts)
	return err
}

// CheckDiskLayer implements launcher.DiskLayered: the coordinator's data
// directory (its recovery log) and the storage directory every region
// server shares (their WALs and region files) each go on a disk layer of
// their own, with any options. A power loss of the storage's layer is one
// of every server on it: fault power-loss refuses a selector that leaves
// one of them running.
func (Launcher) CheckDiskLayer(map[string]string) error { return nil }
