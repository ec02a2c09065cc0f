package etcd

// CheckOptions checks option values as Up would read them, without starting
// anything (launcher.OptionChecker).
func (Launcher) CheckOptions(opts map[string]string) error {
	_, err := parseOptions(opts)
	return err
}
