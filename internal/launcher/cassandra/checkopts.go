package cassandra

// CheckOptions checks option values as Up would read them, without starting
// anything (launcher.OptionChecker).
func (Launcher) CheckOptions(opts map[string]string) error {
	_, err := parseOptions(opts)
	return err
}

// CheckDiskLayer implements launcher.DiskLayered: every node's storage
// directory (data, commit log, hints, saved caches) goes on the disk
// layer, with any options; its configuration stays off the layer. The
// commit log's memory-mapped segments reach the layer when the kernel
// writes them back, at the latest when a power loss flushes them.
func (Launcher) CheckDiskLayer(map[string]string) error { return nil }
