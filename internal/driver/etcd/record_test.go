package etcd

import (
	"bytes"
	"errors"
	"maps"
	"math/rand/v2"
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
