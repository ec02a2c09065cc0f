package cassandra

import (
	"context"
	"fmt"

	"github.com/gocql/gocql"
)

// CompareAndSet is the driver's compare-and-set ability (the register
// workload's CAS): a lightweight transaction, UPDATE ... SET field = new
// WHERE y_id = key IF field = old, whose Paxos round runs at serial
// consistency SERIAL (a quorum of all replicas) and whose commit at the
// write consistency level. swapped is Cassandra's [applied] (a missing row
// or a null field never matches). A WriteTimeout of write type CAS leaves
// the outcome unknown (class timeout), like any write timeout.
//
// Cassandra promises linearizability only among lightweight transactions
// and SERIAL reads: plain writes (Update) and reads below SERIAL that touch
// the same cells are outside it (docs/targets-cassandra.md).
func (d *Driver) CompareAndSet(ctx context.Context, table, key, field string, old, new []byte) (bool, error) {
	if err := checkNames("cas", []string{field}); err != nil {
		return false, err
	}
	q := fmt.Sprintf("UPDATE %s.%s SET %s = ? WHERE %s = ? IF %s = ?", d.ks, table, field, keyColumn, field)
	applied, err := d.s.Query(q, new, key, old).Consistency(d.writeCL).SerialConsistency(gocql.Serial).
		WithContext(ctx).MapScanCAS(map[string]any{})
	if err != nil {
		return false, classify("cas", err)
	}
	return applied, nil
}
