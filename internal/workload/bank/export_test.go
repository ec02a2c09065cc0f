package bank

// SplitTransfers is the test-only switch that breaks a transfer's
// atomicity: each transfer runs as two transactions, the debit and then
// the credit, so a read between them sees the money nowhere.
func SplitTransfers(w *Workload) { w.split = true }
