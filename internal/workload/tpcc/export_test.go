package tpcc

// Force makes the terminal's next Execute run transaction op (tests).
func (t *Terminal) Force(op int) { t.op = op }

// Key builders for the external tests.
var (
	ItemKeyOf         = itemKey
	CustomerKeyOf     = customerKey
	CustomerNameKeyOf = customerNameKey
)
