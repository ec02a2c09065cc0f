package bank

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
)

func deposit(accts ...int64) history.Op {
	op := history.Op{Name: "deposit"}
	for i, b := range accts {
		op.Mops = append(op.Mops, history.Mop{F: history.Write, Key: string(rune('a' + i)), Value: b})
	}
	return op
}

func transfer(o history.Outcome, from, to string, amount int64) history.Op {
	return history.Op{Name: "transfer", Outcome: o, Invoke: 1, Complete: 2, Mops: []history.Mop{
		{F: history.Add, Key: from, Value: -amount}, {F: history.Add, Key: to, Value: amount}}}
}

func readAll(bal ...int64) history.Op {
	op := history.Op{Name: "read", Invoke: 3, Complete: 4}
	for i, b := range bal {
		op.Mops = append(op.Mops, history.Mop{F: history.Read, Key: string(rune('a' + i)), Value: b, HasValue: true})
	}
	return op
}

func TestBank(t *testing.T) {
	missing := readAll(10, 10)
	missing.Mops = append(missing.Mops, history.Mop{F: history.Read, Key: "c"})
	tests := []struct {
		name  string
		ops   []history.Op
		opts  Options
		want  map[string]int
		valid verdict.Valid
	}{
		{"conserved", []history.Op{deposit(10, 10, 10), transfer(history.OK, "a", "b", 5), readAll(5, 15, 10), transfer(history.Unknown, "b", "c", 3), readAll(5, 12, 13)},
			Options{}, map[string]int{}, verdict.True},
		{"money created", []history.Op{deposit(10, 10, 10), transfer(history.OK, "a", "b", 5), readAll(10, 15, 10)},
			Options{}, map[string]int{WrongTotal: 1}, verdict.False},
		{"account lost", []history.Op{deposit(10, 10, 10), missing}, Options{}, map[string]int{WrongTotal: 1}, verdict.False},
		{"negative balance", []history.Op{deposit(10, 10, 10), readAll(-5, 25, 10)}, Options{}, map[string]int{NegativeBalance: 1}, verdict.False},
		{"negative allowed", []history.Op{deposit(10, 10, 10), readAll(-5, 25, 10)}, Options{AllowNegative: true}, map[string]int{NegativeBalance: 1}, verdict.True},
		{"partial read not judged", []history.Op{deposit(10, 10, 10), readAll(1)}, Options{}, map[string]int{}, verdict.True},
		{"given total", []history.Op{readAll(10, 10)}, Options{Total: 30}, map[string]int{WrongTotal: 1}, verdict.False},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := CheckOps(context.Background(), tt.ops, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{WrongTotal, NegativeBalance} {
				if v.AnomalyCounts[name] != tt.want[name] {
					t.Errorf("%s = %d, want %d", name, v.AnomalyCounts[name], tt.want[name])
				}
			}
			if v.Valid != tt.valid {
				t.Errorf("%s, want valid %s", v.Line(), tt.valid)
			}
			for _, a := range v.Anomalies {
				if !strings.Contains(a.Explanation, "operation ") {
					t.Errorf("explanation %q", a.Explanation)
				}
			}
		})
	}
	if _, err := CheckOps(context.Background(), []history.Op{readAll(1, 2)}, Options{}); err == nil {
		t.Error("no total and no deposits: no error")
	}
}

func TestCheckFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), history.FileName)
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []history.Op{deposit(10, 10), readAll(10, 11)} {
		if err := w.Write(&op); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	v, err := Check(context.Background(), path, Options{})
	if err != nil || v.Valid != verdict.False || v.Operations != 2 {
		t.Fatalf("%v %s", err, v.Line())
	}
}
