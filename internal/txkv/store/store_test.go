package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/faultbench/faultbench/internal/txkv/wire"
)

func fields(kv ...string) []wire.Field {
	var out []wire.Field
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, wire.Field{Name: kv[i], Value: []byte(kv[i+1])})
	}
	return out
}

func get(t *testing.T, r *Region, key string, ts uint64) map[string]string {
	t.Helper()
	fs, ok := r.Read("t", key, nil, ts)
	if !ok {
		return nil
	}
	m := map[string]string{}
	for _, f := range fs {
		m[f.Name] = string(f.Value)
	}
	return m
}

func TestSnapshotReads(t *testing.T) {
	r := New(wire.Region{ID: 1})
	r.Apply(10, &wire.Write{Table: "t", Key: "k", Fields: fields("a", "1", "b", "1")})
	r.Apply(20, &wire.Write{Table: "t", Key: "k", Fields: fields("a", "2")})
	r.Apply(30, &wire.Write{Table: "t", Key: "k", Delete: true})
	r.Apply(40, &wire.Write{Table: "t", Key: "k", Fields: fields("b", "4")})
	// idempotent replay, out of order
	r.Apply(20, &wire.Write{Table: "t", Key: "k", Fields: fields("a", "2")})
	r.Apply(10, &wire.Write{Table: "t", Key: "k", Fields: fields("a", "1", "b", "1")})
	cases := []struct {
		ts   uint64
		want map[string]string
	}{
		{5, nil},
		{10, map[string]string{"a": "1", "b": "1"}},
		{25, map[string]string{"a": "2", "b": "1"}},
		{30, nil},
		{45, map[string]string{"b": "4"}},
	}
	for _, c := range cases {
		got := get(t, r, "k", c.ts)
		if len(got) != len(c.want) {
			t.Errorf("ts %d: got %v want %v", c.ts, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("ts %d: got %v want %v", c.ts, got, c.want)
			}
		}
	}
	if fs, ok := r.Read("t", "k", []string{"a"}, 25); !ok || len(fs) != 1 || string(fs[0].Value) != "2" {
		t.Errorf("field read: %v %v", fs, ok)
	}
	if n := r.Prune(25); n == 0 {
		t.Error("prune dropped nothing")
	}
	if got := get(t, r, "k", 25); got["a"] != "2" || got["b"] != "1" {
		t.Errorf("after prune at 25: %v", got)
	}
	if got := get(t, r, "k", 45); got["b"] != "4" || len(got) != 1 {
		t.Errorf("after prune at 45: %v", got)
	}
}

func TestFlushAndLoad(t *testing.T) {
	dir := t.TempDir()
	r := New(wire.Region{ID: 3})
	for i, k := range []string{"b", "a", "c"} {
		r.Apply(uint64(10+i), &wire.Write{Table: "t", Key: k, Fields: fields("f", k)})
	}
	r.Apply(20, &wire.Write{Table: "t", Key: "a", Delete: true})
	if r.MemBytes() == 0 {
		t.Fatal("empty memstore")
	}
	p, err := r.Flush(dir, "s1", nil)
	if err != nil || p == "" {
		t.Fatalf("flush: %q %v", p, err)
	}
	if r.MemBytes() != 0 {
		t.Error("memstore not emptied")
	}
	r.Apply(30, &wire.Write{Table: "t", Key: "d", Fields: fields("f", "d")})
	if _, err := r.Flush(dir, "s1", nil); err != nil {
		t.Fatal(err)
	}
	r2 := New(wire.Region{ID: 3})
	ld, err := r2.LoadDir(dir)
	if err != nil || ld.Files != 2 {
		t.Fatalf("load: %+v, %v", ld, err)
	}
	if !Equal(r, r2) {
		t.Fatal("loaded region differs")
	}
	rows := r2.Scan("t", "", 10, nil, 100)
	if len(rows) != 3 || rows[0].Key != "b" || rows[2].Key != "d" {
		t.Errorf("scan: %+v", rows)
	}
	// a corrupt file is an error, a temp file is ignored
	ents, _ := os.ReadDir(dir)
	b, _ := os.ReadFile(filepath.Join(dir, ents[0].Name()))
	b[len(b)/2] ^= 0xff
	os.WriteFile(filepath.Join(dir, "x.rf.tmp"), b, 0o644)
	os.WriteFile(filepath.Join(dir, ents[0].Name()), b, 0o644)
	if _, err := New(wire.Region{}).LoadDir(dir); err == nil {
		t.Error("corrupt file loaded")
	}
}

// TestDeleteThenWriteInOneTransaction: a write-set that deletes a row and
// writes fields of it (delete, then write, in one transaction) leaves the
// row with only the new fields at its version, also after a flush to a
// region file and a reload, and pruning keeps it.
func TestDeleteThenWriteInOneTransaction(t *testing.T) {
	dir := t.TempDir()
	r := New(wire.Region{ID: 1})
	r.Apply(10, &wire.Write{Table: "t", Key: "k", Fields: fields("a", "1", "b", "1")})
	r.Apply(20, &wire.Write{Table: "t", Key: "k", Delete: true, Fields: fields("b", "2")})
	check := func(name string, r *Region) {
		t.Helper()
		for _, c := range []struct {
			ts   uint64
			want map[string]string
		}{
			{10, map[string]string{"a": "1", "b": "1"}},
			{20, map[string]string{"b": "2"}},
			{30, map[string]string{"b": "2"}},
		} {
			got := get(t, r, "k", c.ts)
			if len(got) != len(c.want) || got["a"] != c.want["a"] || got["b"] != c.want["b"] {
				t.Errorf("%s: ts %d: got %v, want %v", name, c.ts, got, c.want)
			}
		}
	}
	check("memstore", r)
	if _, err := r.Flush(dir, "s1", nil); err != nil {
		t.Fatal(err)
	}
	loaded := New(wire.Region{ID: 1})
	if _, err := loaded.LoadDir(dir); err != nil {
		t.Fatal(err)
	}
	check("reloaded", loaded)
	r.Prune(25)
	if got := get(t, r, "k", 25); len(got) != 1 || got["b"] != "2" {
		t.Errorf("pruned at 25: ts 25: got %v, want b=2", got)
	}
}
