package tpcc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// ScanReader reads single records and ranges of records in key order
// (every driver.Driver is one).
type ScanReader interface {
	Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error)
	Scan(ctx context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error)
}

// ConsistencyResult is the verdict of the TPC-C consistency check.
type ConsistencyResult struct {
	Warehouses int      `json:"warehouses"`
	Districts  int      `json:"districts"`
	Violations []string `json:"violations,omitempty"` // one line per violated condition and place
}

// OK reports whether every condition held.
func (r *ConsistencyResult) OK() bool { return len(r.Violations) == 0 }

// String is a one-line verdict.
func (r *ConsistencyResult) String() string {
	if r.OK() {
		return fmt.Sprintf("consistency conditions 1-4 hold in %d warehouses, %d districts", r.Warehouses, r.Districts)
	}
	return fmt.Sprintf("%d violations of the consistency conditions, first: %s", len(r.Violations), r.Violations[0])
}

// Consistency checks the TPC-C consistency conditions 1 to 4
// (clause 3.3.2) on a quiescent key-value TPC-C database loaded by this
// workload:
//
//  1. W_YTD = sum(D_YTD) of the warehouse's districts;
//  2. D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) per district;
//  3. max(NO_O_ID) - min(NO_O_ID) + 1 = the number of new-order rows per
//     district;
//  4. sum(O_OL_CNT) = the number of order-line rows per district.
//
// Districts are checked in parallel (at most parallel at a time); an error
// is returned only when the database could not be read.
func Consistency(ctx context.Context, r ScanReader, parallel int) (*ConsistencyResult, error) {
	m, err := ReadMeta(ctx, r)
	if err != nil {
		return nil, err
	}
	W := m.Warehouses()
	res := &ConsistencyResult{Warehouses: int(W), Districts: int(W) * DistrictsPerWarehouse}
	if parallel < 1 {
		parallel = 1
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, parallel)
		dytd = make(map[int64]int64)
	)
	violate := func(format string, args ...any) {
		mu.Lock()
		res.Violations = append(res.Violations, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	for w := int64(1); w <= W; w++ {
		for d := int64(1); d <= DistrictsPerWarehouse; d++ {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				ytd, err := checkDistrict(ctx, r, w, d, violate)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("district %d/%d: %w", w, d, err))
					return
				}
				dytd[w] += ytd
			}()
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for w := int64(1); w <= W; w++ {
		rec, err := r.Read(ctx, TWarehouse, WarehouseKey(w), nil)
		if err != nil {
			return nil, fmt.Errorf("warehouse %d: %w", w, err)
		}
		wytd, err := intField(rec, "W_YTD")
		if err != nil {
			return nil, fmt.Errorf("warehouse %d: %w", w, err)
		}
		if wytd != dytd[w] {
			violate("condition 1: warehouse %d: W_YTD %d != sum(D_YTD) %d (cents)", w, wytd, dytd[w])
		}
	}
	return res, nil
}

func intField(rec map[string][]byte, f string) (int64, error) {
	v, ok := rec[f]
	if !ok {
		return 0, fmt.Errorf("field %s missing", f)
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("field %s: %w", f, err)
	}
	return n, nil
}

// checkDistrict checks conditions 2 to 4 of (w, d) and returns D_YTD.
func checkDistrict(ctx context.Context, r ScanReader, w, d int64, violate func(string, ...any)) (int64, error) {
	rec, err := r.Read(ctx, TDistrict, DistrictKey(w, d), nil)
	if err != nil {
		return 0, err
	}
	ytd, err := intField(rec, "D_YTD")
	if err != nil {
		return 0, err
	}
	next, err := intField(rec, "D_NEXT_O_ID")
	if err != nil {
		return 0, err
	}
	// orders: max(O_ID), sum(O_OL_CNT)
	var maxO, sumOL int64
	err = scanDistrict(ctx, r, TOrder, OrderKey(w, d, 0), "O_W_ID", "O_D_ID", w, d, func(rec map[string][]byte) (string, error) {
		o, err := intField(rec, "O_ID")
		if err != nil {
			return "", err
		}
		n, err := intField(rec, "O_OL_CNT")
		if err != nil {
			return "", err
		}
		maxO = max(maxO, o)
		sumOL += n
		return OrderKey(w, d, o), nil
	})
	if err != nil {
		return 0, err
	}
	// new orders: max, min, count
	var maxNO, minNO, countNO int64
	err = scanDistrict(ctx, r, TNewOrder, OrderKey(w, d, 0), "NO_W_ID", "NO_D_ID", w, d, func(rec map[string][]byte) (string, error) {
		o, err := intField(rec, "NO_O_ID")
		if err != nil {
			return "", err
		}
		if countNO == 0 || o < minNO {
			minNO = o
		}
		maxNO = max(maxNO, o)
		countNO++
		return OrderKey(w, d, o), nil
	})
	if err != nil {
		return 0, err
	}
	// order lines: count
	var countOL int64
	err = scanDistrict(ctx, r, TOrderLine, OrderLineKey(w, d, 0, 0), "OL_W_ID", "OL_D_ID", w, d, func(rec map[string][]byte) (string, error) {
		o, err := intField(rec, "OL_O_ID")
		if err != nil {
			return "", err
		}
		n, err := intField(rec, "OL_NUMBER")
		if err != nil {
			return "", err
		}
		countOL++
		return OrderLineKey(w, d, o, n), nil
	})
	if err != nil {
		return 0, err
	}
	if next-1 != maxO || (countNO > 0 && maxO != maxNO) {
		violate("condition 2: district %d/%d: D_NEXT_O_ID-1 = %d, max(O_ID) = %d, max(NO_O_ID) = %d", w, d, next-1, maxO, maxNO)
	}
	if countNO > 0 && maxNO-minNO+1 != countNO {
		violate("condition 3: district %d/%d: max(NO_O_ID)-min(NO_O_ID)+1 = %d, new-order rows = %d", w, d, maxNO-minNO+1, countNO)
	}
	if sumOL != countOL {
		violate("condition 4: district %d/%d: sum(O_OL_CNT) = %d, order-line rows = %d", w, d, sumOL, countOL)
	}
	return ytd, nil
}

// scanPage is the number of records one Scan call asks for.
const scanPage = 500

// scanDistrict scans table from start while the records belong to (w, d)
// (fields wf, df); each returns its own key so the next page starts after it.
func scanDistrict(ctx context.Context, r ScanReader, table, start, wf, df string, w, d int64, each func(map[string][]byte) (string, error)) error {
	for {
		recs, err := r.Scan(ctx, table, start, scanPage, nil)
		if err != nil {
			return fmt.Errorf("scan %s: %w", table, err)
		}
		for _, rec := range recs {
			rw, err1 := intField(rec, wf)
			rd, err2 := intField(rec, df)
			if err1 != nil || err2 != nil || rw != w || rd != d {
				return nil // past the district
			}
			k, err := each(rec)
			if err != nil {
				return fmt.Errorf("%s: %w", table, err)
			}
			start = k + "\x00"
		}
		if len(recs) < scanPage {
			return nil
		}
	}
}

// ConsistencySQL checks the TPC-C consistency conditions 1 to 4 (see
// Consistency) on an SQL database loaded by this workload, with
// one aggregate query per condition in one read transaction.
func ConsistencySQL(ctx context.Context, begin BeginSQL) (*ConsistencyResult, error) {
	m, err := ReadMetaSQL(ctx, begin)
	if err != nil {
		return nil, err
	}
	W := m.Warehouses()
	res := &ConsistencyResult{Warehouses: int(W), Districts: int(W) * DistrictsPerWarehouse}
	tx, err := begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Abort(context.WithoutCancel(ctx)) //nolint:errcheck // read-only
	type check struct {
		name, q string
		row     func(scan func(...any) error) error
	}
	checks := []check{
		{"condition 1", "SELECT w.w_id, w.w_ytd, (SELECT SUM(d.d_ytd) FROM district d WHERE d.d_w_id = w.w_id) FROM warehouse w ORDER BY w.w_id",
			func(scan func(...any) error) error {
				var w, wytd, dytd int64
				if err := scan(&w, &wytd, &dytd); err != nil {
					return err
				}
				if wytd != dytd {
					res.Violations = append(res.Violations, fmt.Sprintf("condition 1: warehouse %d: W_YTD %d != sum(D_YTD) %d (cents)", w, wytd, dytd))
				}
				return nil
			}},
		{"conditions 2 and 3", "SELECT d.d_w_id, d.d_id, d.d_next_o_id, " +
			"(SELECT COALESCE(MAX(o.o_id), 0) FROM orders o WHERE o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id), " +
			"(SELECT COALESCE(MAX(n.no_o_id), 0) FROM new_order n WHERE n.no_w_id = d.d_w_id AND n.no_d_id = d.d_id), " +
			"(SELECT COALESCE(MIN(n.no_o_id), 0) FROM new_order n WHERE n.no_w_id = d.d_w_id AND n.no_d_id = d.d_id), " +
			"(SELECT COUNT(*) FROM new_order n WHERE n.no_w_id = d.d_w_id AND n.no_d_id = d.d_id) " +
			"FROM district d ORDER BY d.d_w_id, d.d_id",
			func(scan func(...any) error) error {
				var w, d, next, maxO, maxNO, minNO, countNO int64
				if err := scan(&w, &d, &next, &maxO, &maxNO, &minNO, &countNO); err != nil {
					return err
				}
				if next-1 != maxO || (countNO > 0 && maxO != maxNO) {
					res.Violations = append(res.Violations, fmt.Sprintf("condition 2: district %d/%d: D_NEXT_O_ID-1 = %d, max(O_ID) = %d, max(NO_O_ID) = %d", w, d, next-1, maxO, maxNO))
				}
				if countNO > 0 && maxNO-minNO+1 != countNO {
					res.Violations = append(res.Violations, fmt.Sprintf("condition 3: district %d/%d: max(NO_O_ID)-min(NO_O_ID)+1 = %d, new-order rows = %d", w, d, maxNO-minNO+1, countNO))
				}
				return nil
			}},
		{"condition 4", "SELECT d.d_w_id, d.d_id, " +
			"(SELECT COALESCE(SUM(o.o_ol_cnt), 0) FROM orders o WHERE o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id), " +
			"(SELECT COUNT(*) FROM order_line l WHERE l.ol_w_id = d.d_w_id AND l.ol_d_id = d.d_id) " +
			"FROM district d ORDER BY d.d_w_id, d.d_id",
			func(scan func(...any) error) error {
				var w, d, sumOL, countOL int64
				if err := scan(&w, &d, &sumOL, &countOL); err != nil {
					return err
				}
				if sumOL != countOL {
					res.Violations = append(res.Violations, fmt.Sprintf("condition 4: district %d/%d: sum(O_OL_CNT) = %d, order-line rows = %d", w, d, sumOL, countOL))
				}
				return nil
			}},
	}
	for _, c := range checks {
		if err := tx.Query(ctx, c.q, nil, c.row); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return res, nil
}
