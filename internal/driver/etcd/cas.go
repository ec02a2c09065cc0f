package etcd

import (
	"bytes"
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/faultbench/faultbench/internal/outcome"
)

// CompareAndSet is the driver's compare-and-set ability (the register
// workload's CAS): it sets field of the record at key to new if and only
// if the field holds old, as one etcd transaction. The usual record holds
// just that field, so one Txn does it: If Value(key) == the record
// {field: old} Then Put the record {field: new} Else Get. When the record
// holds other fields too, the field is compared in the record the Else
// branch returned and the merged record written with a Txn conditional on
// its ModRevision, retried like a merge update (Conflict after 5 tries).
// swapped is false, with a nil error, when the field did not hold old (a
// missing record never does). etcd transactions are linearizable whatever
// etcd.serializable says.
func (d *Driver) CompareAndSet(ctx context.Context, table, key, field string, old, new []byte) (bool, error) {
	k := d.key(table, key)
	cli := d.cli()
	tr, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(k), "=", string(encodeRecord(map[string][]byte{field: old})))).
		Then(clientv3.OpPut(k, string(encodeRecord(map[string][]byte{field: new})))).
		Else(clientv3.OpGet(k)).
		Commit()
	if err != nil {
		return false, classify("cas", err)
	}
	if tr.Succeeded {
		return true, nil
	}
	for range mergeAttempts {
		rr := tr.Responses[0].GetResponseRange()
		if rr == nil || len(rr.Kvs) == 0 {
			return false, nil
		}
		kv := rr.Kvs[0]
		rec, err := decodeRecord(kv.Value, nil)
		if err != nil {
			return false, classify("cas", fmt.Errorf("key %q: %w", k, err))
		}
		cur, ok := rec[field]
		if !ok || !bytes.Equal(cur, old) {
			return false, nil
		}
		rec[field] = new
		tr, err = cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", kv.ModRevision)).
			Then(clientv3.OpPut(k, string(encodeRecord(rec)))).
			Else(clientv3.OpGet(k)).
			Commit()
		if err != nil {
			return false, classify("cas", err)
		}
		if tr.Succeeded {
			return true, nil
		}
	}
	return false, outcome.Classified(outcome.Conflict, "cas",
		fmt.Errorf("key %q was changed by other writers during %d compare-and-set attempts", k, mergeAttempts))
}
