package etcd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// errCorrupt is wrapped by decodeRecord errors.
var errCorrupt = errors.New("corrupt record")

// encodeRecord encodes a record as the value of one etcd key: the number of
// fields as a uvarint, then for each field (sorted by name, so equal records
// encode equally) the name's length as a uvarint, the name, the value's
// length as a uvarint and the value.
func encodeRecord(values map[string][]byte) []byte {
	var buf [16]string // no allocation for YCSB's 10 fields
	names := buf[:0]
	size := binary.MaxVarintLen64
	for name, v := range values {
		names = append(names, name)
		size += 2*binary.MaxVarintLen64 + len(name) + len(v)
	}
	slices.Sort(names)
	b := make([]byte, 0, size)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		b = appendField(b, name, values[name])
	}
	return b
}

// appendField appends one field's encoding to b.
func appendField[N string | []byte](b []byte, name N, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// fieldNames interns the field names of decoded records: a record's map
// keys are then the same few strings for every read instead of one new
// string per field per read (YCSB's ten made most of the driver's own
// allocations per read). It holds at most maxInterned names; others are
// allocated as before. The zero value is ready; safe for concurrent use.
type fieldNames struct {
	m  atomic.Pointer[map[string]string] // copied on write
	mu sync.Mutex                        // serialises writers
}

const maxInterned = 1024

// get returns name as a string, interned when there is room.
func (t *fieldNames) get(name []byte) string {
	if t == nil {
		return string(name)
	}
	if m := t.m.Load(); m != nil {
		if s, ok := (*m)[string(name)]; ok {
			return s
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.m.Load()
	var n int
	if old != nil {
		if s, ok := (*old)[string(name)]; ok {
			return s
		}
		n = len(*old)
	}
	s := string(name)
	if n >= maxInterned {
		return s
	}
	next := make(map[string]string, n+1)
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	next[s] = s
	t.m.Store(&next)
	return s
}

// decodeRecord decodes what encodeRecord wrote. With fields != nil only those
// fields are returned (missing ones are left out). Returned values share b's
// memory; b must not be modified afterwards.
func decodeRecord(b []byte, fields []string) (map[string][]byte, error) {
	return decodeRecordNames(b, fields, nil)
}

// decodeRecordNames is decodeRecord with the field names taken from names
// (nil: allocated per field).
func decodeRecordNames(b []byte, fields []string, names *fieldNames) (map[string][]byte, error) {
	n, off, err := uvarint(b, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: field count: %v", errCorrupt, err)
	}
	// Each field takes at least two bytes: a bound that keeps corrupt input
	// from allocating a huge map.
	if n > uint64(len(b)-off)/2 {
		return nil, fmt.Errorf("%w: %d fields in %d bytes", errCorrupt, n, len(b))
	}
	want := func(string) bool { return true }
	capacity := int(n)
	if fields != nil {
		set := make(map[string]struct{}, len(fields))
		for _, f := range fields {
			set[f] = struct{}{}
		}
		want = func(name string) bool { _, ok := set[name]; return ok }
		capacity = min(capacity, len(fields))
	}
	out := make(map[string][]byte, capacity)
	for i := range n {
		var name, val []byte
		if name, off, err = chunk(b, off); err != nil {
			return nil, fmt.Errorf("%w: name of field %d: %v", errCorrupt, i, err)
		}
		if val, off, err = chunk(b, off); err != nil {
			return nil, fmt.Errorf("%w: value of field %q: %v", errCorrupt, name, err)
		}
		if want(string(name)) {
			out[names.get(name)] = val
		}
	}
	if off != len(b) {
		return nil, fmt.Errorf("%w: %d trailing bytes", errCorrupt, len(b)-off)
	}
	return out, nil
}

func uvarint(b []byte, off int) (uint64, int, error) {
	v, n := binary.Uvarint(b[off:])
	switch {
	case n == 0:
		return 0, off, errors.New("truncated")
	case n < 0:
		return 0, off, errors.New("length overflows 64 bits")
	}
	return v, off + n, nil
}

// chunk reads a uvarint length and that many bytes.
func chunk(b []byte, off int) ([]byte, int, error) {
	l, off, err := uvarint(b, off)
	if err != nil {
		return nil, off, err
	}
	if l > uint64(len(b)-off) {
		return nil, off, fmt.Errorf("length %d exceeds the %d bytes left", l, len(b)-off)
	}
	end := off + int(l)
	return b[off:end:end], end, nil
}

// mergeRecord returns the encoding of old (an encoded record, or nil for
// none) with the fields in values replacing or adding to its fields. It
// merges old's fields, which encodeRecord wrote in name order, with
// values' in one pass, without decoding old into a map (an old record not
// in name order is merged through one).
func mergeRecord(old []byte, values map[string][]byte) ([]byte, error) {
	if len(old) == 0 {
		return encodeRecord(values), nil
	}
	var buf [16]string
	names := buf[:0]
	size := binary.MaxVarintLen64 + len(old)
	for name, v := range values {
		names = append(names, name)
		size += 2*binary.MaxVarintLen64 + len(name) + len(v)
	}
	slices.Sort(names)
	n, off, err := uvarint(old, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: field count: %v", errCorrupt, err)
	}
	if n > uint64(len(old)-off)/2 {
		return nil, fmt.Errorf("%w: %d fields in %d bytes", errCorrupt, n, len(old))
	}
	// the fields go after room for the count, which is known at the end
	out := make([]byte, binary.MaxVarintLen64, size)
	count, j := uint64(0), 0
	var prev []byte
	for i := range n {
		var name, val []byte
		if name, off, err = chunk(old, off); err != nil {
			return nil, fmt.Errorf("%w: name of field %d: %v", errCorrupt, i, err)
		}
		if val, off, err = chunk(old, off); err != nil {
			return nil, fmt.Errorf("%w: value of field %q: %v", errCorrupt, name, err)
		}
		if i > 0 && bytes.Compare(prev, name) >= 0 {
			return mergeByMap(old, values)
		}
		prev = name
		for j < len(names) && names[j] < string(name) {
			out = appendField(out, names[j], values[names[j]])
			j++
			count++
		}
		if j < len(names) && names[j] == string(name) {
			out = appendField(out, names[j], values[names[j]])
			j++
		} else {
			out = appendField(out, name, val)
		}
		count++
	}
	if off != len(old) {
		return nil, fmt.Errorf("%w: %d trailing bytes", errCorrupt, len(old)-off)
	}
	for ; j < len(names); j++ {
		out = appendField(out, names[j], values[names[j]])
		count++
	}
	var hdr [binary.MaxVarintLen64]byte
	h := binary.PutUvarint(hdr[:], count)
	start := binary.MaxVarintLen64 - h
	copy(out[start:], hdr[:h])
	return out[start:], nil
}

// mergeByMap is mergeRecord through a decoded map.
func mergeByMap(old []byte, values map[string][]byte) ([]byte, error) {
	rec, err := decodeRecord(old, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range values {
		rec[k] = v
	}
	return encodeRecord(rec), nil
}
