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
