package elle

import (
	"fmt"
	"slices"

	"github.com/faultbench/faultbench/internal/history"
)

// Workload kinds the checker understands.
const (
	ListAppend = "list-append"
	RWRegister = "rw-register"
)

type kv struct {
	k int32
	v int64
}

// wrec is what is known of one written value: its writer and, for
// rw-register, the version the writer read of the key before writing it.
type wrec struct {
	txn int32
	// intermediate: the writer wrote the key again later in the same
	// transaction (a read of this value is an intermediate read).
	intermediate bool
	// hasPred: the writer read the key before writing (predNil: it read
	// no value; else pred is the value it read).
	hasPred, predNil bool
	pred             int64
}

type txn struct {
	invoke, complete int64
	process          int32
	mopStart, mopEnd int32
	outcome          history.Outcome
}

const (
	fRead uint8 = iota
	fWrite
	fAppend
	fOther
)

// cmop is a micro-operation, compact: a read keeps its length and last
// element (list-append: its elements are a prefix of the key's longest
// read) or its value (rw-register).
type cmop struct {
	v   int64 // written / appended value; read: last element or value
	key int32
	n   int32 // list read: length; register read: 1 with a value, 0 without
	f   uint8
	bad bool // a read that contradicts the version order: no edges from it
}

// localKey is a transaction's own view of a key (internal consistency).
type localKey struct {
	key   int32
	known bool    // a read fixed the whole state
	list  []int64 // list: the expected list (known) or the appended suffix
	has   bool    // register: holds a value
	val   int64
}

func (a *analyzer) keyID(k string) int32 {
	if id, ok := a.keyIDs[k]; ok {
		return id
	}
	id := int32(len(a.keys))
	a.keyIDs[k] = id
	a.keys = append(a.keys, k)
	a.longest = append(a.longest, nil)
	a.longestBy = append(a.longestBy, -1)
	return id
}

func (a *analyzer) local(k int32) *localKey {
	for i := range a.locals {
		if a.locals[i].key == k {
			return &a.locals[i]
		}
	}
	a.locals = append(a.locals, localKey{key: k})
	l := &a.locals[len(a.locals)-1]
	l.list = l.list[:0]
	return l
}

func (a *analyzer) setKind(kind string) error {
	if a.kind == "" {
		a.kind = kind
		return nil
	}
	if a.kind != kind {
		return fmt.Errorf("the history mixes %s and %s micro-operations; the isolation checker takes one workload", a.kind, kind)
	}
	return nil
}

// add ingests the next operation of the history.
func (a *analyzer) add(op *history.Op) error {
	id := int32(len(a.txns))
	t := txn{invoke: op.Invoke, complete: op.Complete, process: int32(op.Process), outcome: op.Outcome,
		mopStart: int32(len(a.mops))}
	a.locals = a.locals[:0]
	ok := op.Outcome == history.OK
	for i := range op.Mops {
		m := &op.Mops[i]
		k := a.keyID(m.Key)
		c := cmop{key: k, f: fOther}
		switch m.F {
		case history.Append:
			if err := a.setKind(ListAppend); err != nil {
				return err
			}
			c.f, c.v = fAppend, m.Value
			if err := a.write(id, k, m.Value, op, i); err != nil {
				return err
			}
			l := a.local(k)
			l.list = append(l.list, m.Value)
		case history.Write:
			if err := a.setKind(RWRegister); err != nil {
				return err
			}
			c.f, c.v = fWrite, m.Value
			if err := a.write(id, k, m.Value, op, i); err != nil {
				return err
			}
			l := a.local(k)
			l.known, l.has, l.val = true, true, m.Value
		case history.Read:
			c.f = fRead
			if !ok {
				break
			}
			if m.IsList {
				if err := a.setKind(ListAppend); err != nil {
					return err
				}
				a.readList(id, k, m.List, &c)
			} else {
				if a.kind == ListAppend {
					return fmt.Errorf("operation %d reads key %q as a register in a list-append history", id, m.Key)
				}
				a.readRegister(id, k, m, &c)
			}
		}
		a.mops = append(a.mops, c)
	}
	t.mopEnd = int32(len(a.mops))
	a.txns = append(a.txns, t)
	return nil
}

// write records a written or appended value.
func (a *analyzer) write(id, k int32, v int64, op *history.Op, i int) error {
	key := kv{k, v}
	if w, dup := a.writers[key]; dup {
		return fmt.Errorf("value %d is written to key %q by operations %d and %d: the isolation checker needs every written value unique per key", v, op.Mops[i].Key, w.txn, id)
	}
	w := wrec{txn: id}
	for j := i + 1; j < len(op.Mops); j++ {
		if n := &op.Mops[j]; (n.F == history.Append || n.F == history.Write) && n.Key == op.Mops[i].Key {
			w.intermediate = true
			break
		}
	}
	if op.Outcome == history.OK && op.Mops[i].F == history.Write {
		// the version this write follows, when the transaction read it first
		for j := i - 1; j >= 0; j-- {
			n := &op.Mops[j]
			if n.Key != op.Mops[i].Key {
				continue
			}
			if n.F == history.Read && !n.IsList {
				w.hasPred, w.predNil, w.pred = true, !n.HasValue, n.Value
			}
			break
		}
	}
	a.writers[key] = w
	return nil
}

func (a *analyzer) readList(id, k int32, list []int64, c *cmop) {
	c.n = int32(len(list))
	if len(list) > 0 {
		c.v = list[len(list)-1]
	}
	// duplicates within the read
	if len(list) > 1 {
		clear(a.dupSeen)
		for _, v := range list {
			if _, dup := a.dupSeen[v]; dup {
				a.report(DuplicateElems, []int32{id}, func() string {
					return fmt.Sprintf("%s read %s = %s, which holds %d more than once: every appended value is unique, so the list holds a duplicate.",
						a.tn(id), a.keys[k], fmtList(list), v)
				})
				c.bad = true
				break
			}
			a.dupSeen[v] = struct{}{}
		}
	}
	// the transaction's own appends and reads of the key
	l := a.local(k)
	inconsistent := true
	switch {
	case l.known && !slices.Equal(list, l.list):
		a.report(Internal, []int32{id}, func() string {
			return fmt.Sprintf("%s read %s = %s, but its own earlier reads and appends of %s say it must be %s.",
				a.tn(id), a.keys[k], fmtList(list), a.keys[k], fmtList(l.list))
		})
	case !l.known && len(l.list) > 0 && (len(list) < len(l.list) || !slices.Equal(list[len(list)-len(l.list):], l.list)):
		a.report(Internal, []int32{id}, func() string {
			return fmt.Sprintf("%s read %s = %s, which does not end with its own earlier appends %s.",
				a.tn(id), a.keys[k], fmtList(list), fmtList(l.list))
		})
	default:
		inconsistent = false
	}
	// an inconsistent read still extends the version order, but gives no
	// edges: which of the transaction's views would they be of?
	defer func() { c.bad = c.bad || inconsistent }()
	l.known = true
	l.list = append(l.list[:0], list...)
	if c.bad {
		return
	}
	// a prefix of the longest read so far, or extending it
	long := a.longest[k]
	n := min(len(long), len(list))
	if !slices.Equal(long[:n], list[:n]) {
		c.bad = true
		a.report(IncompatibleOrds, []int32{a.longestBy[k], id}, func() string {
			return fmt.Sprintf("%s read %s = %s and %s read %s = %s: neither is a prefix of the other, so no single order of appends explains both.",
				a.tn(a.longestBy[k]), a.keys[k], fmtList(long), a.tn(id), a.keys[k], fmtList(list))
		})
		return
	}
	if len(list) > len(long) {
		a.longest[k] = append(long, list[len(long):]...)
		a.longestBy[k] = id
	}
}

func (a *analyzer) readRegister(id, k int32, m *history.Mop, c *cmop) {
	if m.HasValue {
		c.n, c.v = 1, m.Value
	}
	l := a.local(k)
	if l.known && (l.has != m.HasValue || l.has && l.val != m.Value) {
		want := "no value"
		if l.has {
			want = fmt.Sprint(l.val)
		}
		a.report(Internal, []int32{id}, func() string {
			return fmt.Sprintf("%s read %s = %s, but its own earlier reads and writes of %s say it must be %s.",
				a.tn(id), a.keys[k], fmtReg(c), a.keys[k], want)
		})
	}
	l.known, l.has, l.val = true, m.HasValue, m.Value
}

func fmtReg(c *cmop) string {
	if c.n == 0 {
		return "nil"
	}
	return fmt.Sprint(c.v)
}

// fmtList prints a list, long ones shortened to their first and last
// elements.
func fmtList(l []int64) string {
	const keep = 4
	if len(l) <= 2*keep {
		return fmt.Sprint(l)
	}
	return fmt.Sprintf("%v ... %v (%d elements)", l[:keep], l[len(l)-keep:], len(l))
}
