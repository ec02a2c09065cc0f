package tpcc

import (
	"strings"
	"testing"
	"time"
)

// TestCheckRules: every rule can be broken on its own, and a run that
// keeps them all breaks none (the txkv run: New-Order 54.8 %,
// Payment 22.5 % — Payment below its 43 %).
func TestCheckRules(t *testing.T) {
	ok := [OpLoad]time.Duration{time.Second, time.Second, time.Second, 10 * time.Second, 10 * time.Second}
	with := func(op int, d time.Duration) [OpLoad]time.Duration {
		p := ok
		p[op] = d
		return p
	}
	for _, tc := range []struct {
		name      string
		committed [OpLoad]int64
		p90       [OpLoad]time.Duration
		want      []string
	}{
		{"the standard mix, fast", [OpLoad]int64{450, 430, 40, 40, 40}, ok, nil},
		{"the minimums exactly", [OpLoad]int64{45, 43, 4, 4, 4}, ok, nil},
		{"the txkv run: Payment 22.5 %", [OpLoad]int64{548, 225, 76, 76, 75}, ok, []string{"PAYMENT is 22.50 %"}},
		{"Order-Status 3.9 %", [OpLoad]int64{451, 430, 39, 40, 40}, ok, []string{"ORDER-STATUS is 3.90 %"}},
		{"Delivery missing", [OpLoad]int64{490, 430, 40, 0, 40}, ok, []string{"DELIVERY is 0.00 %"}},
		{"Stock-Level below", [OpLoad]int64{460, 430, 40, 40, 30}, ok, []string{"STOCK-LEVEL is 3.00 %"}},
		{"New-Order over 5 s", [OpLoad]int64{450, 430, 40, 40, 40}, with(OpNewOrder, 5001*time.Millisecond), []string{"NEW-ORDER 90th percentile response time 5.001s"}},
		{"Payment at 5 s is within", [OpLoad]int64{450, 430, 40, 40, 40}, with(OpPayment, 5*time.Second), nil},
		{"Order-Status over 5 s", [OpLoad]int64{450, 430, 40, 40, 40}, with(OpOrderStatus, 6*time.Second), []string{"ORDER-STATUS 90th"}},
		{"Delivery over 80 s", [OpLoad]int64{450, 430, 40, 40, 40}, with(OpDelivery, 81*time.Second), []string{"DELIVERY 90th"}},
		{"Stock-Level 19 s is within", [OpLoad]int64{450, 430, 40, 40, 40}, with(OpStockLevel, 19*time.Second), nil},
		{"Stock-Level over 20 s", [OpLoad]int64{450, 430, 40, 40, 40}, with(OpStockLevel, 21*time.Second), []string{"STOCK-LEVEL 90th"}},
		{"nothing committed", [OpLoad]int64{}, [OpLoad]time.Duration{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckRules(tc.committed, tc.p90)
			if len(got) != len(tc.want) {
				t.Fatalf("CheckRules = %q, want %d violations %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("violation %q lacks %q", got[i], w)
				}
			}
		})
	}
}
