package sqldb

import (
	"context"
)

// CompareAndSet is the driver's compare-and-set ability (the register
// workload's CAS): one statement, UPDATE table SET field = new WHERE
// key = key AND field = old, which sets the field if and only if it holds
// old; swapped reports whether a row was changed (a missing row or a NULL
// field never matches). The statement runs in its own transaction at the
// server's default isolation: a single-row conditional update takes the
// row's lock, so concurrent compare-and-sets from the same value swap
// once (PostgreSQL re-checks the condition on the newest row version;
// MariaDB reads the latest committed row for an UPDATE). new must differ
// from old (MariaDB counts changed rows, not matched ones).
func (drv *Driver) CompareAndSet(ctx context.Context, table, key, field string, old, new []byte) (bool, error) {
	if err := drv.checkFields([]string{field}); err != nil {
		return false, err
	}
	if err := drv.ensureColumns(ctx, table, []string{field}); err != nil {
		return false, err
	}
	q := "UPDATE " + table + " SET " + field + " = " + drv.d.placeholder(1) + " WHERE " + keyColumn + " = " +
		drv.d.placeholder(2) + " AND " + field + " = " + drv.d.placeholder(3)
	s, err := drv.stmt(ctx, table, q)
	if err != nil {
		return false, err
	}
	res, err := s.ExecContext(ctx, new, key, old)
	if err != nil {
		return false, drv.fail("cas", true, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, drv.fail("cas", true, err)
	}
	return n == 1, nil
}
