package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrCorrupt is returned when a record cannot be decoded.
var ErrCorrupt = errors.New("corrupt record")

// Encoder appends primitive values to a byte slice.
type Encoder struct{ B []byte }

// Uvarint appends v.
func (e *Encoder) Uvarint(v uint64) { e.B = binary.AppendUvarint(e.B, v) }

// U64 appends v as 8 bytes.
func (e *Encoder) U64(v uint64) { e.B = binary.BigEndian.AppendUint64(e.B, v) }

// Bytes appends a length-prefixed byte string.
func (e *Encoder) Bytes(b []byte) {
	e.Uvarint(uint64(len(b)))
	e.B = append(e.B, b...)
}

// String appends a length-prefixed string.
func (e *Encoder) String(s string) {
	e.Uvarint(uint64(len(s)))
	e.B = append(e.B, s...)
}

// Writes appends a list of writes.
func (e *Encoder) Writes(ws []Write) {
	e.Uvarint(uint64(len(ws)))
	for _, w := range ws {
		e.String(w.Table)
		e.String(w.Key)
		if w.Delete {
			e.B = append(e.B, 1)
		} else {
			e.B = append(e.B, 0)
		}
		e.Uvarint(uint64(len(w.Fields)))
		for _, f := range w.Fields {
			e.String(f.Name)
			e.Bytes(f.Value)
		}
	}
}

// Decoder reads what Encoder wrote; the first error sticks.
type Decoder struct {
	B   []byte
	Err error
}

func (d *Decoder) fail() {
	if d.Err == nil {
		d.Err = ErrCorrupt
	}
	d.B = nil
}

// Uvarint reads a uvarint.
func (d *Decoder) Uvarint() uint64 {
	if d.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.B)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.B = d.B[n:]
	return v
}

// U64 reads 8 bytes.
func (d *Decoder) U64() uint64 {
	if d.Err != nil || len(d.B) < 8 {
		d.fail()
		return 0
	}
	v := binary.BigEndian.Uint64(d.B)
	d.B = d.B[8:]
	return v
}

// Byte reads one byte.
func (d *Decoder) Byte() byte {
	if d.Err != nil || len(d.B) < 1 {
		d.fail()
		return 0
	}
	v := d.B[0]
	d.B = d.B[1:]
	return v
}

// Bytes reads a length-prefixed byte string (a copy).
func (d *Decoder) Bytes() []byte {
	n := d.Uvarint()
	if d.Err != nil || uint64(len(d.B)) < n {
		d.fail()
		return nil
	}
	out := make([]byte, n)
	copy(out, d.B[:n])
	d.B = d.B[n:]
	return out
}

// String reads a length-prefixed string.
func (d *Decoder) String() string {
	n := d.Uvarint()
	if d.Err != nil || uint64(len(d.B)) < n {
		d.fail()
		return ""
	}
	s := string(d.B[:n])
	d.B = d.B[n:]
	return s
}

// Writes reads a list of writes.
func (d *Decoder) Writes() []Write {
	n := d.Uvarint()
	if d.Err != nil || n > uint64(len(d.B)) {
		d.fail()
		return nil
	}
	ws := make([]Write, 0, n)
	for i := uint64(0); i < n && d.Err == nil; i++ {
		var w Write
		w.Table = d.String()
		w.Key = d.String()
		w.Delete = d.Byte() == 1
		nf := d.Uvarint()
		if d.Err != nil || nf > uint64(len(d.B)) {
			d.fail()
			return nil
		}
		if nf > 0 {
			w.Fields = make([]Field, nf)
			for j := range w.Fields {
				w.Fields[j].Name = d.String()
				w.Fields[j].Value = d.Bytes()
			}
		}
		ws = append(ws, w)
	}
	return ws
}

// TxnRecord is one committed transaction in the coordinator's recovery log.
type TxnRecord struct {
	TS       uint64
	ClientID uint64
	TxnID    uint64
	Writes   []Write
}

// AppendTxnRecord encodes r onto b.
func AppendTxnRecord(b []byte, r *TxnRecord) []byte {
	e := Encoder{B: b}
	e.U64(r.TS)
	e.Uvarint(r.ClientID)
	e.Uvarint(r.TxnID)
	e.Writes(r.Writes)
	return e.B
}

// DecodeTxnRecord decodes a record written by AppendTxnRecord.
func DecodeTxnRecord(b []byte) (TxnRecord, error) {
	d := Decoder{B: b}
	var r TxnRecord
	r.TS = d.U64()
	r.ClientID = d.Uvarint()
	r.TxnID = d.Uvarint()
	r.Writes = d.Writes()
	if d.Err == nil && len(d.B) != 0 {
		d.Err = ErrCorrupt
	}
	if d.Err != nil {
		return r, fmt.Errorf("transaction record: %w", d.Err)
	}
	return r, nil
}

// TSOf returns the timestamp of an encoded TxnRecord without decoding it.
func TSOf(b []byte) uint64 {
	if len(b) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}
