package etcd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// errCorrupt is wrapped by decodeRecord errors.
var errCorrupt = errors.New("corrupt record")

// encodeRecord encodes a record as the value of one etcd key: the number of
// fields as a uvarint, then for each field (sorted by name, so equal records
// encode equally) the name's length as a uvarint, the name, the value's
// length as a uvarint and the value.
func encodeRecord(values map[string][]byte) []byte {
	names := make([]string, 0, len(values))
	size := binary.MaxVarintLen64
	for name, v := range values {
		names = append(names, name)
		size += 2*binary.MaxVarintLen64 + len(name) + len(v)
	}
	slices.Sort(names)
	b := make([]byte, 0, size)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		v := values[name]
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

// decodeRecord decodes what encodeRecord wrote. With fields != nil only those
// fields are returned (missing ones are left out). Returned values share b's
// memory; b must not be modified afterwards.
func decodeRecord(b []byte, fields []string) (map[string][]byte, error) {
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
			out[string(name)] = val
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
// none) with the fields in values replacing or adding to its fields.
func mergeRecord(old []byte, values map[string][]byte) ([]byte, error) {
	if len(old) == 0 {
		return encodeRecord(values), nil
	}
	rec, err := decodeRecord(old, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range values {
		rec[k] = v
	}
	return encodeRecord(rec), nil
}
