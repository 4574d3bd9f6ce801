package budget

// OnWait makes Reserve of l call f each time it starts to wait for room.
// Set it before l is used.
func OnWait(l *Ledger, f func()) { l.waiting = f }
