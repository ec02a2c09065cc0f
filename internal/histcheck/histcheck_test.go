package histcheck

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
)

func write(t *testing.T, ops []history.Op) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), history.FileName)
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ops {
		if err := w.Write(&ops[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func op(p int, s, e int64, mops ...history.Mop) history.Op {
	return history.Op{Process: p, Invoke: s, Complete: e, Mops: mops}
}

func TestCheck(t *testing.T) {
	list := func(k string, v ...int64) history.Mop {
		return history.Mop{F: history.Read, Key: k, IsList: true, List: append([]int64{}, v...)}
	}
	app := func(k string, v int64) history.Mop { return history.Mop{F: history.Append, Key: k, Value: v} }
	reg := func(f history.Func, k string, v int64, has bool) history.Mop {
		return history.Mop{F: f, Key: k, Value: v, HasValue: has}
	}
	writeSkew := []history.Op{op(0, 0, 10, list("x"), list("y"), app("x", 1)), op(1, 0, 10, list("x"), list("y"), app("y", 1)),
		op(2, 20, 30, list("x", 1), list("y", 1))}
	stale := []history.Op{op(0, 0, 10, reg(history.Write, "x", 1, false)), op(0, 20, 30, reg(history.Write, "x", 2, false)),
		op(1, 40, 50, reg(history.Read, "x", 1, true))}
	bankOps := []history.Op{op(0, 0, 1, reg(history.Write, "a", 10, false), reg(history.Write, "b", 10, false)),
		op(1, 2, 3, reg(history.Read, "a", 10, true), reg(history.Read, "b", 11, true))}
	setOps := []history.Op{op(0, 0, 1, app("s", 1)), op(1, 2, 3, list("s", 1)), op(1, 4, 5, list("s"))}
	tests := []struct {
		name    string
		ops     []history.Op
		checker string
		opts    Options
		valid   verdict.Valid
		anomaly string
	}{
		{"isolation serializable", writeSkew, "isolation", Options{Model: "serializable"}, verdict.False, "G2-item"},
		{"isolation snapshot", writeSkew, "isolation", Options{Model: "snapshot-isolation"}, verdict.True, "G2-item"},
		{"linearizable", stale, "linearizable", Options{OutDir: t.TempDir()}, verdict.False, "nonlinearizable-key"},
		{"bank", bankOps, "bank", Options{}, verdict.False, "wrong-total"},
		{"set", setOps, "set", Options{}, verdict.False, "lost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Check(context.Background(), write(t, tt.ops), tt.checker, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if v.Valid != tt.valid || v.AnomalyCounts[tt.anomaly] != 1 || v.Checker != tt.checker {
				t.Fatalf("%s", v.Line())
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	path := write(t, nil)
	for _, tt := range []struct {
		name, path, checker string
		opts                Options
		want                string
	}{
		{"unknown checker", path, "knossos", Options{}, "unknown checker"},
		{"unknown model", path, "isolation", Options{Model: "snapshot"}, "unknown consistency model"},
		{"no history", filepath.Join(t.TempDir(), "none"), "isolation", Options{}, "no history"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Check(context.Background(), tt.path, tt.checker, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

// TestCheckPath: a run directory's verdict is written next to its history;
// a directory without one is refused.
func TestCheckPath(t *testing.T) {
	path := write(t, []history.Op{op(0, 0, 10, history.Mop{F: history.Write, Key: "x", Value: 1}),
		op(1, 20, 30, history.Mop{F: history.Read, Key: "x", Value: 2, HasValue: true})})
	dir := filepath.Dir(path)
	res, err := CheckPath(context.Background(), dir, "linearizable", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed() || res.File != filepath.Join(dir, "checks", "linearizable.json") || !strings.Contains(res.Text(), "drawn: ") {
		t.Fatalf("%+v\n%s", res, res.Text())
	}
	if _, err := os.Stat(res.File); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckPath(context.Background(), t.TempDir(), "linearizable", Options{}); !errors.Is(err, ErrNoHistory) {
		t.Fatalf("err %v", err)
	}
	res, err = CheckPath(context.Background(), path, "isolation", Options{})
	if err != nil || res.File != "" {
		t.Fatalf("%v %+v", err, res)
	}
}
