package tpcc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// chunk is the number of rows of one kind a load transaction writes;
// orders come orderChunk at a time (with their 5-15 lines each).
const (
	chunk      = 500
	orderChunk = 100
)

type unitKind uint8

const (
	uMeta      unitKind = iota // the meta row
	uItems                     // items [from, to]
	uWarehouse                 // warehouse w, its districts and delivery cursors
	uStock                     // stock of w, items [from, to]
	uCustomers                 // customers [from, to] of (w, d) with history and last-order index
	uNames                     // the customer-name index of (w, d)
	uOrders                    // orders [from, to] of (w, d) with order lines and new-orders
)

type loadUnit struct {
	kind     unitKind
	w, d     int64
	from, to int64
}

// plan lists the load transactions.
func plan(c Config) []loadUnit {
	us := []loadUnit{{kind: uMeta}}
	span := func(kind unitKind, w, d, n int64) {
		size := int64(chunk)
		if kind == uOrders {
			size = orderChunk
		}
		for f := int64(1); f <= n; f += size {
			us = append(us, loadUnit{kind: kind, w: w, d: d, from: f, to: min(f+size-1, n)})
		}
	}
	span(uItems, 0, 0, c.Items)
	for w := int64(1); w <= int64(c.Warehouses); w++ {
		us = append(us, loadUnit{kind: uWarehouse, w: w})
		span(uStock, w, 0, c.Items)
		for d := int64(1); d <= DistrictsPerWarehouse; d++ {
			span(uCustomers, w, d, c.Customers)
			us = append(us, loadUnit{kind: uNames, w: w, d: d})
			span(uOrders, w, d, c.Customers)
		}
	}
	return us
}

// firstUndelivered is the first O_ID of the initial orders still
// undelivered: the last 900 of 3,000 (clause 4.3.3.1), i.e. the last 30 %.
func firstUndelivered(customers int64) int64 { return customers - customers*3/10 + 1 }

// loadTime is the O_ENTRY_D / H_DATE / C_SINCE of the population.
const loadTime = "2026-01-01T00:00:00Z"

// loadAttempts bounds how often a load transaction is tried.
const loadAttempts = 8

// unitTimeout bounds one attempt of a load transaction. The load ignores
// the runner's per-operation deadline (a few thousand rows on a loaded
// machine can take longer), not its cancellation.
const unitTimeout = 2 * time.Minute

// runUnit writes one load transaction. Its content is a function of the
// seed, so a failed or unknown attempt is simply written again (the same
// rows with the same values), a little later.
func (w *Workload) runUnit(parent context.Context, begin Begin, u loadUnit) error {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	defer cancel()
	stop := context.AfterFunc(parent, func() {
		if errors.Is(parent.Err(), context.Canceled) {
			cancel() // the run stops; a passed deadline does not stop the load
		}
	})
	defer stop()
	var err error
	for attempt := 0; attempt < loadAttempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		actx, acancel := context.WithTimeout(ctx, unitTimeout)
		err = w.unitOnce(actx, begin, u)
		acancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func (w *Workload) unitOnce(ctx context.Context, begin Begin, u loadUnit) error {
	tx, err := begin(ctx)
	if err != nil {
		return err
	}
	if err := w.writeUnit(ctx, tx, u); err != nil {
		_ = tx.Abort(context.WithoutCancel(ctx))
		return err
	}
	return tx.Commit(ctx)
}

func (w *Workload) writeUnit(ctx context.Context, tx Txn, u loadUnit) error {
	c := w.cfg
	ins := func(table, key string, r row) error { return tx.Insert(ctx, table, key, r) }
	switch u.kind {
	case uMeta:
		k := NewConstants(c.Seed)
		r := row{}
		r.setInt("warehouses", int64(c.Warehouses))
		r.setInt("items", c.Items)
		r.setInt("customers", c.Customers)
		r.setInt("c_last", k.LoadLast)
		r.setInt("c_id", k.LoadCID)
		r.setInt("c_item", k.LoadItem)
		return ins(TMeta, metaKey, r)
	case uItems:
		for i := u.from; i <= u.to; i++ {
			rg := newRand(c.Seed, streamOf(1, i))
			r := row{}
			r.setInt("I_ID", i)
			r.setInt("I_IM_ID", uniform(rg, 1, 10000))
			r.set("I_NAME", astring(rg, 14, 24))
			r.setInt("I_PRICE", uniform(rg, 100, 10000))
			r.set("I_DATA", data(rg))
			if err := ins(TItem, itemKey(i), r); err != nil {
				return err
			}
		}
	case uWarehouse:
		rg := newRand(c.Seed, streamOf(2, u.w))
		r := row{}
		r.setInt("W_ID", u.w)
		address(rg, r, "W_")
		r.setInt("W_TAX", uniform(rg, 0, 2000)) // 1/10000
		r.setInt("W_YTD", 30000000)             // 300,000.00
		if err := ins(TWarehouse, warehouseKey(u.w), r); err != nil {
			return err
		}
		for d := int64(1); d <= DistrictsPerWarehouse; d++ {
			r := row{}
			r.setInt("D_ID", d)
			r.setInt("D_W_ID", u.w)
			address(rg, r, "D_")
			r.setInt("D_TAX", uniform(rg, 0, 2000))
			r.setInt("D_YTD", 3000000) // 30,000.00
			r.setInt("D_NEXT_O_ID", c.Customers+1)
			if err := ins(TDistrict, districtKey(u.w, d), r); err != nil {
				return err
			}
			cur := row{}
			cur.setInt("NO_O_ID", firstUndelivered(c.Customers))
			if err := ins(TDeliveryCursor, districtKey(u.w, d), cur); err != nil {
				return err
			}
		}
	case uStock:
		for i := u.from; i <= u.to; i++ {
			rg := newRand(c.Seed, streamOf(3, u.w, i))
			r := row{}
			r.setInt("S_I_ID", i)
			r.setInt("S_W_ID", u.w)
			r.setInt("S_QUANTITY", uniform(rg, 10, 100))
			for d := 1; d <= DistrictsPerWarehouse; d++ {
				r.set(fmt.Sprintf("S_DIST_%02d", d), astring(rg, 24, 24))
			}
			r.setInt("S_YTD", 0)
			r.setInt("S_ORDER_CNT", 0)
			r.setInt("S_REMOTE_CNT", 0)
			r.set("S_DATA", data(rg))
			if err := ins(TStock, stockKey(u.w, i), r); err != nil {
				return err
			}
		}
	case uCustomers:
		perm := w.orderCustomers(u.w, u.d)
		orderOf := make([]int64, c.Customers+1)
		for o, cid := range perm {
			orderOf[cid] = int64(o) + 1
		}
		for cid := u.from; cid <= u.to; cid++ {
			last, first := w.customerName(u.w, u.d, cid)
			rg := newRand(c.Seed, streamOf(5, u.w, u.d, cid))
			r := row{}
			r.setInt("C_ID", cid)
			r.setInt("C_D_ID", u.d)
			r.setInt("C_W_ID", u.w)
			r.set("C_LAST", last)
			r.set("C_MIDDLE", "OE")
			r.set("C_FIRST", first)
			address(rg, r, "C_")
			r.set("C_PHONE", nstring(rg, 16, 16))
			r.set("C_SINCE", loadTime)
			if rg.IntN(10) == 0 {
				r.set("C_CREDIT", "BC")
			} else {
				r.set("C_CREDIT", "GC")
			}
			r.setInt("C_CREDIT_LIM", 5000000)
			r.setInt("C_DISCOUNT", uniform(rg, 0, 5000))
			r.setInt("C_BALANCE", -1000)
			r.setInt("C_YTD_PAYMENT", 1000)
			r.setInt("C_PAYMENT_CNT", 1)
			r.setInt("C_DELIVERY_CNT", 0)
			r.set("C_DATA", astring(rg, 300, 500))
			if err := ins(TCustomer, customerKey(u.w, u.d, cid), r); err != nil {
				return err
			}
			h := row{}
			h.setInt("H_C_ID", cid)
			h.setInt("H_C_D_ID", u.d)
			h.setInt("H_C_W_ID", u.w)
			h.setInt("H_D_ID", u.d)
			h.setInt("H_W_ID", u.w)
			h.set("H_DATE", loadTime)
			h.setInt("H_AMOUNT", 1000)
			h.set("H_DATA", astring(rg, 12, 24))
			if err := ins(THistory, historyKey(u.w, u.d, "load-"+pad(cid, 5)), h); err != nil {
				return err
			}
			lo := row{}
			lo.setInt("O_ID", orderOf[cid])
			if err := ins(TCustomerLastOrder, customerKey(u.w, u.d, cid), lo); err != nil {
				return err
			}
		}
	case uNames:
		type cust struct {
			id    int64
			first string
		}
		byLast := map[string][]cust{}
		for cid := int64(1); cid <= c.Customers; cid++ {
			last, first := w.customerName(u.w, u.d, cid)
			byLast[last] = append(byLast[last], cust{cid, first})
		}
		for last, cs := range byLast {
			sort.Slice(cs, func(i, j int) bool {
				if cs[i].first != cs[j].first {
					return cs[i].first < cs[j].first
				}
				return cs[i].id < cs[j].id
			})
			ids := make([]string, len(cs))
			for i, x := range cs {
				ids[i] = itoa(x.id)
			}
			r := row{}
			r.set("C_IDS", strings.Join(ids, ","))
			if err := ins(TCustomerName, customerNameKey(u.w, u.d, last), r); err != nil {
				return err
			}
		}
	case uOrders:
		perm := w.orderCustomers(u.w, u.d)
		undelivered := firstUndelivered(c.Customers)
		for o := u.from; o <= u.to; o++ {
			rg := newRand(c.Seed, streamOf(6, u.w, u.d, o))
			olCnt := uniform(rg, 5, 15)
			r := row{}
			r.setInt("O_ID", o)
			r.setInt("O_D_ID", u.d)
			r.setInt("O_W_ID", u.w)
			r.setInt("O_C_ID", perm[o-1])
			r.set("O_ENTRY_D", loadTime)
			if o < undelivered {
				r.setInt("O_CARRIER_ID", uniform(rg, 1, 10))
			} else {
				r.set("O_CARRIER_ID", "")
			}
			r.setInt("O_OL_CNT", olCnt)
			r.setInt("O_ALL_LOCAL", 1)
			if err := ins(TOrder, orderKey(u.w, u.d, o), r); err != nil {
				return err
			}
			for ol := int64(1); ol <= olCnt; ol++ {
				l := row{}
				l.setInt("OL_O_ID", o)
				l.setInt("OL_D_ID", u.d)
				l.setInt("OL_W_ID", u.w)
				l.setInt("OL_NUMBER", ol)
				l.setInt("OL_I_ID", uniform(rg, 1, c.Items))
				l.setInt("OL_SUPPLY_W_ID", u.w)
				l.setInt("OL_QUANTITY", 5)
				if o < undelivered {
					l.set("OL_DELIVERY_D", loadTime)
					l.setInt("OL_AMOUNT", 0)
				} else {
					l.set("OL_DELIVERY_D", "")
					l.setInt("OL_AMOUNT", uniform(rg, 1, 999999))
				}
				l.set("OL_DIST_INFO", astring(rg, 24, 24))
				if err := ins(TOrderLine, orderLineKey(u.w, u.d, o, ol), l); err != nil {
					return err
				}
			}
			if o >= undelivered {
				no := row{}
				no.setInt("NO_O_ID", o)
				no.setInt("NO_D_ID", u.d)
				no.setInt("NO_W_ID", u.w)
				if err := ins(TNewOrder, orderKey(u.w, u.d, o), no); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// address fills the street/city/state/zip fields with prefix p
// (clause 4.3.2): W_NAME/D_NAME too for warehouses and districts.
func address(rg *rand.Rand, r row, p string) {
	if p != "C_" {
		r.set(p+"NAME", astring(rg, 6, 10))
	}
	r.set(p+"STREET_1", astring(rg, 10, 20))
	r.set(p+"STREET_2", astring(rg, 10, 20))
	r.set(p+"CITY", astring(rg, 10, 20))
	r.set(p+"STATE", astring(rg, 2, 2))
	r.set(p+"ZIP", zip(rg))
}

// customerName returns C_LAST and C_FIRST of a customer: the first 1,000
// customers of a district take the last name of C_ID-1, the others
// NURand(255, 0, 999) with the load's C (clause 4.3.3.1).
func (w *Workload) customerName(wID, d, cid int64) (last, first string) {
	rg := newRand(w.cfg.Seed, streamOf(4, wID, d, cid))
	var n int64
	if cid <= 1000 {
		n = cid - 1
	} else {
		n = nurand(rg, aLast, NewConstants(w.cfg.Seed).LoadLast, 0, 999)
	}
	return LastName(n), astring(rg, 8, 16)
}

// orderCustomers is the random permutation of customer ids the initial
// orders of (w, d) belong to (O_C_ID, clause 4.3.3.1): index o-1 holds
// order o's customer.
func (w *Workload) orderCustomers(wID, d int64) []int64 {
	rg := newRand(w.cfg.Seed, streamOf(7, wID, d))
	perm := make([]int64, w.cfg.Customers)
	for i := range perm {
		perm[i] = int64(i) + 1
	}
	rg.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	return perm
}
