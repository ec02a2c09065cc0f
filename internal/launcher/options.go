package launcher

// OptionChecker is implemented by launchers that can check the values of
// their options (`cluster up -o`, a scenario's target.options) without
// starting anything, so that a bad value is a usage error before any node
// starts rather than a start-up failure after some did. The options passed
// are the launcher's own (see OwnOptions); the keys are already known.
type OptionChecker interface {
	CheckOptions(opts map[string]string) error
}
