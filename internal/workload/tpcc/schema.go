package tpcc

import (
	"fmt"
	"hash/fnv"
	"strconv"
)

// Table names: the nine TPC-C tables and three index tables that turn every
// range access of the transactions into point reads (see docs/tpcc.md).
const (
	TWarehouse = "warehouse"
	TDistrict  = "district"
	TCustomer  = "customer"
	THistory   = "history"
	TNewOrder  = "new_order"
	TOrder     = "orders"
	TOrderLine = "order_line"
	TItem      = "item"
	TStock     = "stock"
	// TCustomerName maps (W, D, C_LAST) to the customer ids with that
	// last name, sorted by C_FIRST (the spec's secondary key for the
	// by-name lookups of Payment and Order-Status). Customers never change
	// names, so it is written once at load.
	TCustomerName = "customer_name"
	// TCustomerLastOrder maps (W, D, C_ID) to the customer's most recent
	// O_ID (Order-Status); New-Order rewrites it.
	TCustomerLastOrder = "customer_last_order"
	// TDeliveryCursor holds per district the O_ID of the oldest
	// undelivered order (Delivery); only Delivery writes it.
	TDeliveryCursor = "delivery_cursor"
	// TMeta holds the load's parameters (warehouses, sizes, NURand C
	// constants) in one row.
	TMeta = "tpcc_meta"
)

// Tables lists every table the workload writes.
func Tables() []string {
	return []string{TWarehouse, TDistrict, TCustomer, THistory, TNewOrder, TOrder, TOrderLine, TItem, TStock,
		TCustomerName, TCustomerLastOrder, TDeliveryCursor, TMeta}
}

// bucket spreads keys over txkv's default regions, whose boundaries are
// "user10" .. "user91": every key starts with "user" and a two-digit
// bucket in [10, 91] hashed from the key's partitioning columns (warehouse
// and district, or the item), so each table is spread over all regions
// as the paper's tables are over all region servers.
func bucket(parts ...int64) string {
	h := fnv.New32a()
	for _, p := range parts {
		fmt.Fprintf(h, "%d/", p)
	}
	return "user" + strconv.Itoa(10+int(h.Sum32()%82))
}

func pad(n int64, w int) string { return fmt.Sprintf("%0*d", w, n) }

// Key builders. Numbers are zero-padded so keys sort like the composite
// primary keys.
func warehouseKey(w int64) string { return bucket(w) + "/" + pad(w, 5) }
func districtKey(w, d int64) string {
	return bucket(w, d) + "/" + pad(w, 5) + "/" + pad(d, 2)
}
func customerKey(w, d, c int64) string { return districtKey(w, d) + "/" + pad(c, 5) }
func customerNameKey(w, d int64, last string) string {
	return districtKey(w, d) + "/" + last
}
func orderKey(w, d, o int64) string { return districtKey(w, d) + "/" + pad(o, 8) }
func orderLineKey(w, d, o, ol int64) string {
	return orderKey(w, d, o) + "/" + pad(ol, 2)
}
func historyKey(w, d int64, id string) string { return districtKey(w, d) + "/" + id }
func itemKey(i int64) string                  { return bucket(i/100) + "/" + pad(i, 6) }
func stockKey(w, i int64) string              { return bucket(w, i/100) + "/" + pad(w, 5) + "/" + pad(i, 6) }

const metaKey = "user50/tpcc"

// Keys of the rows the consistency check reads (internal/check).

// WarehouseKey is warehouse w's key in TWarehouse.
func WarehouseKey(w int64) string { return warehouseKey(w) }

// DistrictKey is district (w, d)'s key in TDistrict and TDeliveryCursor.
func DistrictKey(w, d int64) string { return districtKey(w, d) }

// OrderKey is order (w, d, o)'s key in TOrder and TNewOrder; order o = 0
// sorts before every order of the district.
func OrderKey(w, d, o int64) string { return orderKey(w, d, o) }

// OrderLineKey is order line (w, d, o, ol)'s key in TOrderLine.
func OrderLineKey(w, d, o, ol int64) string { return orderLineKey(w, d, o, ol) }

// row is a record: field name → value. Numbers are decimal text; money is
// in cents so that sums are exact.
type row map[string][]byte

func (r row) str(f string) string { return string(r[f]) }

func (r row) int(f string) (int64, error) {
	v, ok := r[f]
	if !ok {
		return 0, fmt.Errorf("field %s missing", f)
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("field %s: %w", f, err)
	}
	return n, nil
}

func (r row) set(f string, v string)   { r[f] = []byte(v) }
func (r row) setInt(f string, n int64) { r[f] = []byte(strconv.FormatInt(n, 10)) }

// ints reads several integer fields; the first error wins.
func (r row) ints(fs ...string) ([]int64, error) {
	out := make([]int64, len(fs))
	for i, f := range fs {
		n, err := r.int(f)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}
