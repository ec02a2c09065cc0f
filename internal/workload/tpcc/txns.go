package tpcc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/outcome"
)

// errRollback ends a New-Order that met the unused item (clause 2.4.2.3).
var errRollback = errors.New("tpcc: new-order rolled back on an unused item")

func isNotFound(err error) bool { return errors.Is(err, outcome.ErrNotFound) }

// txCtx is one transaction in progress.
type txCtx struct {
	ctx context.Context
	tx  Txn
	m   *meta
	t   *Terminal
}

func (x *txCtx) read(table, key string) (row, error) {
	r, err := x.tx.Read(x.ctx, table, key, nil)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", table, key, err)
	}
	return row(r), nil
}

func (x *txCtx) update(table, key string, r row) error {
	if err := x.tx.Update(x.ctx, table, key, r); err != nil {
		return fmt.Errorf("%s %s: %w", table, key, err)
	}
	return nil
}

func (x *txCtx) insert(table, key string, r row) error {
	if err := x.tx.Insert(x.ctx, table, key, r); err != nil {
		return fmt.Errorf("%s %s: %w", table, key, err)
	}
	return nil
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// otherWarehouse returns a warehouse other than w (w itself with one
// warehouse).
func (x *txCtx) otherWarehouse(w int64) int64 {
	W := int64(x.t.w.cfg.Warehouses)
	if W == 1 {
		return w
	}
	o := uniform(x.t.r, 1, W-1)
	if o >= w {
		o++
	}
	return o
}

// customerID returns NURand(1023, 1, customers) with the run's C.
func (x *txCtx) customerID() int64 {
	return nurand(x.t.r, aCID, x.m.c.RunCID, 1, x.t.w.cfg.Customers)
}

// randomLastName returns the last name of NURand(255, 0, 999) with the
// run's C (clause 2.5.1.2), limited to the names a scaled-down database has.
func (x *txCtx) randomLastName() string {
	hi := int64(999)
	if x.t.w.cfg.Customers < 1000 {
		hi = x.t.w.cfg.Customers - 1
	}
	return LastName(nurand(x.t.r, aLast, x.m.c.RunLast, 0, hi))
}

// customerByName finds the customer with last name last in (w, d): the one
// at position n/2 rounded up among those with that name sorted by C_FIRST
// (clause 2.5.2.2).
func (x *txCtx) customerByName(w, d int64, last string) (int64, error) {
	r, err := x.read(TCustomerName, customerNameKey(w, d, last))
	if err != nil {
		return 0, err
	}
	ids := strings.Split(r.str("C_IDS"), ",")
	return strconv.ParseInt(ids[(len(ids)+1)/2-1], 10, 64)
}

// newOrder is clause 2.4.2.
func (x *txCtx) newOrder() error {
	t, cfg := x.t, x.t.w.cfg
	w := t.wID
	d := uniform(t.r, 1, DistrictsPerWarehouse)
	c := x.customerID()
	olCnt := uniform(t.r, 5, 15)
	rbk := uniform(t.r, 1, 100)
	type line struct{ item, supply, qty int64 }
	lines := make([]line, olCnt)
	allLocal := int64(1)
	for i := range lines {
		l := line{item: nurand(t.r, aItem, x.m.c.RunItem, 1, cfg.Items), supply: w, qty: uniform(t.r, 1, 10)}
		if i == len(lines)-1 && rbk == 1 {
			l.item = cfg.Items + 1 // unused
		}
		if cfg.Warehouses > 1 && uniform(t.r, 1, 100) == 1 {
			l.supply = x.otherWarehouse(w)
			allLocal = 0
		}
		lines[i] = l
	}
	if _, err := x.read(TWarehouse, warehouseKey(w)); err != nil { // W_TAX
		return err
	}
	dr, err := x.read(TDistrict, districtKey(w, d))
	if err != nil {
		return err
	}
	o, err := dr.int("D_NEXT_O_ID")
	if err != nil {
		return err
	}
	upd := row{}
	upd.setInt("D_NEXT_O_ID", o+1)
	if err := x.update(TDistrict, districtKey(w, d), upd); err != nil {
		return err
	}
	if _, err := x.read(TCustomer, customerKey(w, d, c)); err != nil { // C_DISCOUNT, C_LAST, C_CREDIT
		return err
	}
	or := row{}
	or.setInt("O_ID", o)
	or.setInt("O_D_ID", d)
	or.setInt("O_W_ID", w)
	or.setInt("O_C_ID", c)
	or.set("O_ENTRY_D", now())
	or.set("O_CARRIER_ID", "")
	or.setInt("O_OL_CNT", olCnt)
	or.setInt("O_ALL_LOCAL", allLocal)
	if err := x.insert(TOrder, orderKey(w, d, o), or); err != nil {
		return err
	}
	no := row{}
	no.setInt("NO_O_ID", o)
	if err := x.insert(TNewOrder, orderKey(w, d, o), no); err != nil {
		return err
	}
	lo := row{}
	lo.setInt("O_ID", o)
	if err := x.update(TCustomerLastOrder, customerKey(w, d, c), lo); err != nil {
		return err
	}
	for i, l := range lines {
		ir, err := x.tx.Read(x.ctx, TItem, itemKey(l.item), nil)
		if err != nil {
			if isNotFound(err) {
				return errRollback
			}
			return err
		}
		price, err := row(ir).int("I_PRICE")
		if err != nil {
			return err
		}
		sk := stockKey(l.supply, l.item)
		sr, err := x.read(TStock, sk)
		if err != nil {
			return err
		}
		v, err := sr.ints("S_QUANTITY", "S_YTD", "S_ORDER_CNT", "S_REMOTE_CNT")
		if err != nil {
			return err
		}
		q := v[0]
		if q >= l.qty+10 {
			q -= l.qty
		} else {
			q = q - l.qty + 91
		}
		su := row{}
		su.setInt("S_QUANTITY", q)
		su.setInt("S_YTD", v[1]+l.qty)
		su.setInt("S_ORDER_CNT", v[2]+1)
		if l.supply != w {
			su.setInt("S_REMOTE_CNT", v[3]+1)
		}
		if err := x.update(TStock, sk, su); err != nil {
			return err
		}
		ol := row{}
		ol.setInt("OL_O_ID", o)
		ol.setInt("OL_NUMBER", int64(i+1))
		ol.setInt("OL_I_ID", l.item)
		ol.setInt("OL_SUPPLY_W_ID", l.supply)
		ol.set("OL_DELIVERY_D", "")
		ol.setInt("OL_QUANTITY", l.qty)
		ol.setInt("OL_AMOUNT", l.qty*price)
		ol[`OL_DIST_INFO`] = sr[fmt.Sprintf("S_DIST_%02d", d)]
		if err := x.insert(TOrderLine, orderLineKey(w, d, o, int64(i+1)), ol); err != nil {
			return err
		}
	}
	return nil
}

// payment is clause 2.5.2.
func (x *txCtx) payment() error {
	t := x.t
	w := t.wID
	d := uniform(t.r, 1, DistrictsPerWarehouse)
	cw, cd := w, d
	if t.w.cfg.Warehouses > 1 && uniform(t.r, 1, 100) > 85 {
		cw = x.otherWarehouse(w)
		cd = uniform(t.r, 1, DistrictsPerWarehouse)
	}
	byName := uniform(t.r, 1, 100) <= 60
	amount := uniform(t.r, 100, 500000)
	var c int64
	var last string
	if byName {
		last = x.randomLastName()
	} else {
		c = x.customerID()
	}
	wr, err := x.read(TWarehouse, warehouseKey(w))
	if err != nil {
		return err
	}
	wytd, err := wr.int("W_YTD")
	if err != nil {
		return err
	}
	u := row{}
	u.setInt("W_YTD", wytd+amount)
	if err := x.update(TWarehouse, warehouseKey(w), u); err != nil {
		return err
	}
	dr, err := x.read(TDistrict, districtKey(w, d))
	if err != nil {
		return err
	}
	dytd, err := dr.int("D_YTD")
	if err != nil {
		return err
	}
	u = row{}
	u.setInt("D_YTD", dytd+amount)
	if err := x.update(TDistrict, districtKey(w, d), u); err != nil {
		return err
	}
	if byName {
		if c, err = x.customerByName(cw, cd, last); err != nil {
			return err
		}
	}
	ck := customerKey(cw, cd, c)
	cr, err := x.read(TCustomer, ck)
	if err != nil {
		return err
	}
	v, err := cr.ints("C_BALANCE", "C_YTD_PAYMENT", "C_PAYMENT_CNT")
	if err != nil {
		return err
	}
	u = row{}
	u.setInt("C_BALANCE", v[0]-amount)
	u.setInt("C_YTD_PAYMENT", v[1]+amount)
	u.setInt("C_PAYMENT_CNT", v[2]+1)
	if cr.str("C_CREDIT") == "BC" {
		s := fmt.Sprintf("%d %d %d %d %d %d|", c, cd, cw, d, w, amount) + cr.str("C_DATA")
		if len(s) > 500 {
			s = s[:500]
		}
		u.set("C_DATA", s)
	}
	if err := x.update(TCustomer, ck, u); err != nil {
		return err
	}
	t.histNo++
	h := row{}
	h.setInt("H_C_ID", c)
	h.setInt("H_C_D_ID", cd)
	h.setInt("H_C_W_ID", cw)
	h.setInt("H_D_ID", d)
	h.setInt("H_W_ID", w)
	h.set("H_DATE", now())
	h.setInt("H_AMOUNT", amount)
	h.set("H_DATA", wr.str("W_NAME")+"    "+dr.str("D_NAME"))
	hid := fmt.Sprintf("t%d-%x-%d", t.id, t.r.Uint64(), t.histNo)
	return x.insert(THistory, historyKey(w, d, hid), h)
}

// orderStatus is clause 2.6.2 (read-only).
func (x *txCtx) orderStatus() error {
	t := x.t
	w := t.wID
	d := uniform(t.r, 1, DistrictsPerWarehouse)
	var c int64
	var err error
	if uniform(t.r, 1, 100) <= 60 {
		if c, err = x.customerByName(w, d, x.randomLastName()); err != nil {
			return err
		}
	} else {
		c = x.customerID()
	}
	if _, err := x.read(TCustomer, customerKey(w, d, c)); err != nil {
		return err
	}
	lr, err := x.read(TCustomerLastOrder, customerKey(w, d, c))
	if err != nil {
		return err
	}
	o, err := lr.int("O_ID")
	if err != nil {
		return err
	}
	or, err := x.read(TOrder, orderKey(w, d, o))
	if err != nil {
		return err
	}
	n, err := or.int("O_OL_CNT")
	if err != nil {
		return err
	}
	for ol := int64(1); ol <= n; ol++ {
		if _, err := x.read(TOrderLine, orderLineKey(w, d, o, ol)); err != nil {
			return err
		}
	}
	return nil
}

// delivery is clause 2.7.4, run directly (not queued) as one transaction
// over the ten districts.
func (x *txCtx) delivery() error {
	t := x.t
	w := t.wID
	carrier := uniform(t.r, 1, 10)
	date := now()
	for d := int64(1); d <= DistrictsPerWarehouse; d++ {
		dk := districtKey(w, d)
		cur, err := x.read(TDeliveryCursor, dk)
		if err != nil {
			return err
		}
		o, err := cur.int("NO_O_ID")
		if err != nil {
			return err
		}
		ok := orderKey(w, d, o)
		if _, err := x.tx.Read(x.ctx, TNewOrder, ok, nil); err != nil {
			if isNotFound(err) {
				continue // no outstanding order in this district
			}
			return err
		}
		if err := x.tx.Delete(x.ctx, TNewOrder, ok); err != nil {
			return err
		}
		u := row{}
		u.setInt("NO_O_ID", o+1)
		if err := x.update(TDeliveryCursor, dk, u); err != nil {
			return err
		}
		or, err := x.read(TOrder, ok)
		if err != nil {
			return err
		}
		v, err := or.ints("O_C_ID", "O_OL_CNT")
		if err != nil {
			return err
		}
		u = row{}
		u.setInt("O_CARRIER_ID", carrier)
		if err := x.update(TOrder, ok, u); err != nil {
			return err
		}
		var sum int64
		for ol := int64(1); ol <= v[1]; ol++ {
			lk := orderLineKey(w, d, o, ol)
			lr, err := x.read(TOrderLine, lk)
			if err != nil {
				return err
			}
			a, err := lr.int("OL_AMOUNT")
			if err != nil {
				return err
			}
			sum += a
			u := row{}
			u.set("OL_DELIVERY_D", date)
			if err := x.update(TOrderLine, lk, u); err != nil {
				return err
			}
		}
		ck := customerKey(w, d, v[0])
		cr, err := x.read(TCustomer, ck)
		if err != nil {
			return err
		}
		cv, err := cr.ints("C_BALANCE", "C_DELIVERY_CNT")
		if err != nil {
			return err
		}
		u = row{}
		u.setInt("C_BALANCE", cv[0]+sum)
		u.setInt("C_DELIVERY_CNT", cv[1]+1)
		if err := x.update(TCustomer, ck, u); err != nil {
			return err
		}
	}
	return nil
}

// stockLevel is clause 2.8.2 (read-only): the terminal's own district,
// the last 20 orders' items with stock below a threshold in [10, 20].
func (x *txCtx) stockLevel() error {
	t := x.t
	w, d := t.wID, t.dID
	threshold := uniform(t.r, 10, 20)
	dr, err := x.read(TDistrict, districtKey(w, d))
	if err != nil {
		return err
	}
	next, err := dr.int("D_NEXT_O_ID")
	if err != nil {
		return err
	}
	items := map[int64]bool{}
	for o := max(1, next-20); o < next; o++ {
		or, err := x.read(TOrder, orderKey(w, d, o))
		if err != nil {
			return err
		}
		n, err := or.int("O_OL_CNT")
		if err != nil {
			return err
		}
		for ol := int64(1); ol <= n; ol++ {
			lr, err := x.read(TOrderLine, orderLineKey(w, d, o, ol))
			if err != nil {
				return err
			}
			i, err := lr.int("OL_I_ID")
			if err != nil {
				return err
			}
			items[i] = true
		}
	}
	low := 0
	for i := range items {
		sr, err := x.read(TStock, stockKey(w, i))
		if err != nil {
			return err
		}
		q, err := sr.int("S_QUANTITY")
		if err != nil {
			return err
		}
		if q < threshold {
			low++
		}
	}
	_ = low
	return nil
}
