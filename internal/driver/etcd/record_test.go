package etcd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func equalRecords(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

func TestRecordRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []map[string][]byte{
		{},
		{"field0": {}},
		{"": []byte("empty name")},
		{"field0": []byte("v0"), "field1": bytes.Repeat([]byte{0, 0xff}, 300)},
	}
	for range 50 {
		m := map[string][]byte{}
		for i := range rng.IntN(12) {
			v := make([]byte, rng.IntN(200))
			for j := range v {
				v[j] = byte(rng.UintN(256))
			}
			m["field"+strings.Repeat("x", i)] = v
		}
		cases = append(cases, m)
	}
	for _, m := range cases {
		b := encodeRecord(m)
		got, err := decodeRecord(b, nil)
		if err != nil {
			t.Fatalf("decode(encode(%v)): %v", m, err)
		}
		if !equalRecords(got, m) {
			t.Fatalf("round trip: got %v want %v", got, m)
		}
		if !bytes.Equal(encodeRecord(got), b) {
			t.Fatalf("encoding is not deterministic for %v", m)
		}
	}
	// The encoding is compact: 1 count byte, then 1+len per name and value.
	b := encodeRecord(map[string][]byte{"f": []byte("abc")})
	if want := []byte{1, 1, 'f', 3, 'a', 'b', 'c'}; !bytes.Equal(b, want) {
		t.Errorf("encoding % x, want % x", b, want)
	}
	// YCSB's default record (docs/targets-etcd.md quotes this size).
	ycsb := map[string][]byte{}
	for i := range 10 {
		ycsb["field"+string(rune('0'+i))] = make([]byte, 100)
	}
	if n := len(encodeRecord(ycsb)); n != 1081 {
		t.Errorf("10 fields of 100 bytes encode to %d bytes, want 1081", n)
	}
}

func TestDecodeFields(t *testing.T) {
	b := encodeRecord(map[string][]byte{"a": []byte("1"), "b": []byte("2"), "c": []byte("3")})
	got, err := decodeRecord(b, []string{"c", "a", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string][]byte{"a": []byte("1"), "c": []byte("3")}; !equalRecords(got, want) {
		t.Errorf("fields a,c: got %v", got)
	}
	got, err = decodeRecord(b, []string{})
	if err != nil || len(got) != 0 {
		t.Errorf("no fields: %v %v", got, err)
	}
}

func TestDecodeCorrupt(t *testing.T) {
	good := encodeRecord(map[string][]byte{"name": []byte("value")})
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"truncated value", good[:len(good)-1]},
		{"truncated name", good[:3]},
		{"trailing bytes", append(append([]byte{}, good...), 0)},
		{"huge count", []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0}},
		{"varint overflow", []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"length past end", []byte{1, 9, 'a'}},
	} {
		if _, err := decodeRecord(tc.b, nil); !errors.Is(err, errCorrupt) {
			t.Errorf("%s: decode(% x) = %v, want a corrupt-record error", tc.name, tc.b, err)
		}
	}
}

func TestMergeRecord(t *testing.T) {
	old := encodeRecord(map[string][]byte{"a": []byte("1"), "b": []byte("2")})
	merged, err := mergeRecord(old, map[string][]byte{"b": []byte("22"), "c": []byte("3")})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := decodeRecord(merged, nil)
	if want := map[string][]byte{"a": []byte("1"), "b": []byte("22"), "c": []byte("3")}; !equalRecords(got, want) {
		t.Errorf("merge: %v", got)
	}
	fresh, err := mergeRecord(nil, map[string][]byte{"x": []byte("y")})
	if err != nil || !bytes.Equal(fresh, encodeRecord(map[string][]byte{"x": []byte("y")})) {
		t.Errorf("merge into nothing: %v %v", fresh, err)
	}
	if _, err := mergeRecord([]byte{5}, nil); !errors.Is(err, errCorrupt) {
		t.Errorf("merge into corrupt: %v", err)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(map[string][]byte{"field0": []byte("value")}))
	f.Add([]byte{})
	f.Add([]byte{2, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeRecord(b, nil)
		if err != nil {
			return
		}
		again, err := decodeRecord(encodeRecord(rec), nil)
		if err != nil || !equalRecords(rec, again) {
			t.Fatalf("re-encoding % x changed it: %v %v", b, again, err)
		}
	})
}

// TestMergeRecordAsMap checks the one-pass merge against merging through
// a decoded map, byte for byte, including old records out of name order
// or with a name twice (merged through the map).
func TestMergeRecordAsMap(t *testing.T) {
	// raw encodes fields in the order given
	raw := func(kv ...string) []byte {
		b := binary.AppendUvarint(nil, uint64(len(kv)/2))
		for i := 0; i+1 < len(kv); i += 2 {
			b = appendField(b, kv[i], []byte(kv[i+1]))
		}
		return b
	}
	ycsb := map[string][]byte{}
	for i := range 10 {
		ycsb["field"+strconv.Itoa(i)] = bytes.Repeat([]byte{byte('a' + i)}, 100)
	}
	for _, tc := range []struct {
		name   string
		old    []byte
		values map[string][]byte
	}{
		{"replace one of ten", encodeRecord(ycsb), map[string][]byte{"field3": []byte("x")}},
		{"add before, between and after", raw("b", "1", "d", "2"), map[string][]byte{"a": nil, "c": []byte("3"), "e": []byte("4")}},
		{"replace all", raw("a", "1", "b", "2"), map[string][]byte{"a": []byte("11"), "b": []byte("22")}},
		{"nothing to merge", raw("a", "1"), map[string][]byte{}},
		{"empty record", raw(), map[string][]byte{"a": []byte("1")}},
		{"old out of order", raw("b", "1", "a", "2"), map[string][]byte{"c": []byte("3")}},
		{"old with a name twice", raw("a", "1", "a", "2"), map[string][]byte{"b": []byte("3")}},
		{"a long count", encodeRecord(manyFields(200)), map[string][]byte{"f0": []byte("z"), "zz": []byte("y")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mergeRecord(tc.old, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			want, err := mergeByMap(tc.old, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("merge = % x\nwant    % x", got, want)
			}
		})
	}
	if _, err := mergeRecord(append(encodeRecord(ycsb), 0), map[string][]byte{"a": nil}); !errors.Is(err, errCorrupt) {
		t.Errorf("trailing bytes: %v", err)
	}
}

func manyFields(n int) map[string][]byte {
	m := map[string][]byte{}
	for i := range n {
		m["f"+strconv.Itoa(i)] = []byte{byte(i)}
	}
	return m
}

// TestFieldNamesInterned checks that decoded records share their field
// names (no allocation per field once seen) and that the table stays
// bounded and correct past its size.
func TestFieldNamesInterned(t *testing.T) {
	rec := encodeRecord(manyFields(10))
	var names fieldNames
	with := testing.AllocsPerRun(100, func() { _, _ = decodeRecordNames(rec, nil, &names) })
	without := testing.AllocsPerRun(100, func() { _, _ = decodeRecordNames(rec, nil, nil) })
	if with > without-10 {
		t.Fatalf("allocations per decode: %.0f interned, %.0f not: want at least the 10 names fewer", with, without)
	}
	for i := range maxInterned + 10 {
		n := "name" + strconv.Itoa(i)
		if got := names.get([]byte(n)); got != n {
			t.Fatalf("get(%q) = %q", n, got)
		}
	}
	if m := names.m.Load(); len(*m) > maxInterned {
		t.Fatalf("%d names interned, bound %d", len(*m), maxInterned)
	}
}
