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
	m   *Meta
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
func (t *Terminal) otherWarehouse(w int64) int64 {
	W := int64(t.w.cfg.Warehouses)
	if W == 1 {
		return w
	}
	o := uniform(t.r, 1, W-1)
	if o >= w {
		o++
	}
	return o
}

// customerID returns NURand(1023, 1, customers) with the run's C.
func (t *Terminal) customerID(m *Meta) int64 {
	return nurand(t.r, aCID, m.c.RunCID, 1, t.w.cfg.Customers)
}

// randomLastName returns the last name of NURand(255, 0, 999) with the
// run's C (clause 2.5.1.2), limited to the names a scaled-down database has.
func (t *Terminal) randomLastName(m *Meta) string {
	hi := int64(999)
	if t.w.cfg.Customers < 1000 {
		hi = t.w.cfg.Customers - 1
	}
	return LastName(nurand(t.r, aLast, m.c.RunLast, 0, hi))
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

// orderLine is one line of a New-Order's input.
type orderLine struct{ item, supply, qty int64 }

// newOrderInput is a New-Order's input (clause 2.4.1).
type newOrderInput struct {
	w, d, c  int64
	lines    []orderLine
	allLocal bool
	rollback bool // the last line names an unused item
}

// newOrderInput draws a New-Order's input: district uniform, customer
// NURand(1023), 5..15 lines with items NURand(8191), 1 % of them supplied
// by a remote warehouse, and in 1 % of New-Orders an unused item as the
// last line.
func (t *Terminal) newOrderInput(m *Meta) newOrderInput {
	cfg := t.w.cfg
	in := newOrderInput{w: t.wID, d: uniform(t.r, 1, DistrictsPerWarehouse), allLocal: true}
	in.c = nurand(t.r, aCID, m.c.RunCID, 1, cfg.Customers)
	olCnt := uniform(t.r, 5, 15)
	in.rollback = uniform(t.r, 1, 100) == 1
	in.lines = make([]orderLine, olCnt)
	for i := range in.lines {
		l := orderLine{item: nurand(t.r, aItem, m.c.RunItem, 1, cfg.Items), supply: in.w, qty: uniform(t.r, 1, 10)}
		if i == len(in.lines)-1 && in.rollback {
			l.item = cfg.Items + 1 // unused
		}
		if cfg.Warehouses > 1 && uniform(t.r, 1, 100) == 1 {
			l.supply = t.otherWarehouse(in.w)
			in.allLocal = false
		}
		in.lines[i] = l
	}
	return in
}

// newOrder is clause 2.4.2.
func (x *txCtx) newOrder() error {
	in := x.t.newOrderInput(x.m)
	w, d, c := in.w, in.d, in.c
	lines := in.lines
	allLocal := int64(1)
	if !in.allLocal {
		allLocal = 0
	}
	olCnt := int64(len(lines))
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
	no.setInt("NO_D_ID", d)
	no.setInt("NO_W_ID", w)
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
		ol.setInt("OL_D_ID", d)
		ol.setInt("OL_W_ID", w)
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

// paymentInput is a Payment's input (clause 2.5.1).
type paymentInput struct {
	w, d, cw, cd int64
	byName       bool
	c            int64  // by id
	last         string // by name
	amount       int64  // cents
}

// paymentInput draws a Payment's input: 85 % of customers from the home
// warehouse and district, 15 % from a remote warehouse; 60 % selected by
// last name, 40 % by id; amount 1.00 .. 5,000.00.
func (t *Terminal) paymentInput(m *Meta) paymentInput {
	in := paymentInput{w: t.wID, d: uniform(t.r, 1, DistrictsPerWarehouse)}
	in.cw, in.cd = in.w, in.d
	if t.w.cfg.Warehouses > 1 && uniform(t.r, 1, 100) > 85 {
		in.cw = t.otherWarehouse(in.w)
		in.cd = uniform(t.r, 1, DistrictsPerWarehouse)
	}
	in.byName = uniform(t.r, 1, 100) <= 60
	in.amount = uniform(t.r, 100, 500000)
	if in.byName {
		in.last = t.randomLastName(m)
	} else {
		in.c = t.customerID(m)
	}
	return in
}

// payment is clause 2.5.2.
func (x *txCtx) payment() error {
	t := x.t
	in := t.paymentInput(x.m)
	w, d, cw, cd, amount, c := in.w, in.d, in.cw, in.cd, in.amount, in.c
	byName, last := in.byName, in.last
	var err error
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
		if c, err = x.customerByName(w, d, t.randomLastName(x.m)); err != nil {
			return err
		}
	} else {
		c = t.customerID(x.m)
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
