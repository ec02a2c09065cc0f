package workload

import (
	"math"
	"math/rand/v2"
)

// Thread generates the operations of one worker goroutine. It owns a random
// source seeded from (seed, id) and the buffers the Ops it fills point into.
// A Thread is not safe for concurrent use; give every goroutine its own.
type Thread struct {
	w     *Workload
	opRng *rand.Rand // operation kinds only, so their sequence never depends on other threads
	rng   *rand.Rand // keys, fields, values, scan lengths

	keyZipf   zipfian // per-thread copy (latest grows its zeta as keys are added)
	scanZipf  zipfian
	fieldZipf zipfian

	keyBuf   []byte
	oneField [1]string
	values   map[string][]byte
	valBuf   []byte // fieldcount slots of fieldlength bytes
}

// NewThread returns the generator for worker id. seed is the run's seed
// (normally w.Seed()). The same (seed, id) always yields the same sequence of
// operation kinds (drawn from a random stream of their own). Keys, fields,
// values and scan lengths come from a second stream and repeat too, except
// where they depend on what other threads did: the shared insert and
// sequential counters, the "latest" and "exponential" distributions, and
// redraws of zipfian keys not inserted yet.
func (w *Workload) NewThread(id int, seed int64) *Thread {
	s := splitmix64(uint64(seed))
	i := splitmix64(uint64(int64(id)) + 0x632BE59BD9B4E019)
	t := &Thread{
		w:         w,
		opRng:     rand.New(rand.NewPCG(s, i)),
		rng:       rand.New(rand.NewPCG(splitmix64(s^0x5851F42D4C957F2D), splitmix64(i^0x14057B7EF767814F))),
		keyZipf:   w.keyZipf,
		scanZipf:  w.scanZipf,
		fieldZipf: w.fieldLenZipf,
		keyBuf:    make([]byte, 0, 64),
		values:    make(map[string][]byte, len(w.fields)),
		valBuf:    make([]byte, int64(len(w.fields))*w.fieldLength),
	}
	return t
}

// NextLoad fills op with the next load-phase insert: the next record number
// of the sequence insertstart .. insertstart+insertcount-1 shared by all
// Threads of the workload, and values for all fields. It returns false, and
// leaves op untouched, when the sequence is exhausted.
func (t *Thread) NextLoad(op *Op) bool {
	w := t.w
	n := w.loadNext.Add(1) - 1
	if n >= w.insertCount {
		return false
	}
	keynum := w.insertStart + n
	op.Kind = Insert
	op.KeyNum = keynum
	op.Key = t.key(keynum)
	op.Fields = nil
	op.Values = t.allValues()
	op.ScanLen = 0
	op.TxnOps = 0
	op.ack = false
	return true
}

// Next fills op with the next run-phase operation, as YCSB's
// CoreWorkload.doTransaction chooses it. Buffers of the previous op of this
// Thread are reused (see Op). A run-phase insert takes its record number from
// the shared insert sequence, which starts at recordcount; call Done for every
// op Next returned, once it completed (whether it succeeded or not), so that
// the inserted key becomes visible to the other operations.
func (t *Thread) Next(op *Op) {
	if t.w.txnOps > 0 {
		t.nextTxn(op)
		return
	}
	t.nextRow(op)
}

// nextRow fills op with the next row operation from the operation mix.
func (t *Thread) nextRow(op *Op) {
	w := t.w
	kind := t.chooseOp()
	op.Kind = kind
	op.Fields = nil
	op.Values = nil
	op.ScanLen = 0
	op.TxnOps = 0
	op.ack = false
	switch kind {
	case Read:
		op.KeyNum = t.nextKeynum()
		op.Key = t.key(op.KeyNum)
		if !w.readAllFields {
			op.Fields = t.randomField()
		} else if w.readAllFieldsByName {
			op.Fields = w.fields
		}
	case Update:
		op.KeyNum = t.nextKeynum()
		op.Key = t.key(op.KeyNum)
		op.Values = t.writeValues()
	case Insert:
		op.KeyNum = w.txInsert.next()
		op.Key = t.key(op.KeyNum)
		op.Values = t.allValues()
		op.ack = true
	case Scan:
		op.KeyNum = t.nextKeynum()
		op.Key = t.key(op.KeyNum)
		op.ScanLen = int(t.scanLength())
		if !w.readAllFields {
			op.Fields = t.randomField()
		}
	case ReadModifyWrite:
		op.KeyNum = t.nextKeynum()
		op.Key = t.key(op.KeyNum)
		if !w.readAllFields {
			op.Fields = t.randomField()
		}
		op.Values = t.writeValues()
	case Delete:
		op.KeyNum = t.nextKeynum()
		op.Key = t.key(op.KeyNum)
	}
}

// Done reports that op, returned by Next, has completed. For a run-phase
// insert it acknowledges the record number (YCSB's
// AcknowledgedCounterGenerator), which lets the key chooser pick it from then
// on. Like YCSB, which acknowledges in a finally block, the number is
// acknowledged whether or not the insert succeeded (ok is not consulted), so
// that one failed insert does not hide every later one. Done for other ops,
// load-phase ops, or a second time for the same op does nothing.
func (t *Thread) Done(op *Op, ok bool) {
	_ = ok
	if op.ack {
		op.ack = false
		t.w.txInsert.acknowledge(op.KeyNum)
	}
}

// chooseOp is YCSB's DiscreteGenerator over the positive proportions.
func (t *Thread) chooseOp() OpKind {
	c := t.w.choice
	if len(c) == 1 {
		// YCSB still draws a number here; skipping it changes no outcome.
		return c[0].kind
	}
	val := t.opRng.Float64()
	for _, e := range c {
		if val < e.pw {
			return e.kind
		}
		val -= e.pw
	}
	// Only reachable through rounding of the normalised weights.
	return c[len(c)-1].kind
}

// nextKeynum is CoreWorkload.nextKeynum: a key from the request distribution
// that has already been inserted (at most the acknowledged insert limit).
func (t *Thread) nextKeynum() int64 {
	w := t.w
	if w.dist == distExponential {
		for {
			last := w.txInsert.last()
			x := -math.Log(t.rng.Float64()) / w.expGamma
			// YCSB: last - (int)x, retried while negative.
			if x < float64(last)+1 {
				return last - int64(x)
			}
		}
	}
	for {
		k := t.keyChoice()
		if k <= w.txInsert.last() {
			return k
		}
	}
}

// keyChoice draws one value from the request distribution (YCSB's keychooser).
func (t *Thread) keyChoice() int64 {
	w := t.w
	switch w.dist {
	case distZipfian:
		// ScrambledZipfianGenerator: zipfian over 10^16 items, then hashed
		// into the key range.
		v := t.keyZipf.next(t.rng)
		return w.zipfMin + fnvhash64(v)%w.zipfItems
	case distLatest:
		// SkewedLatestGenerator: the most recently acknowledged insert is
		// the most popular.
		max := w.txInsert.last()
		return max - t.keyZipf.nextLong(t.rng, max)
	case distHotspot:
		if t.rng.Float64() < w.hotOpn {
			return w.hotLow + t.rng.Int64N(w.hotIntvl)
		}
		return w.hotLow + w.hotIntvl + t.rng.Int64N(w.coldIntvl)
	case distSequential:
		return w.insertStart + (w.seqNext.Add(1)-1)%w.insertCount
	default: // distUniform
		return w.insertStart + t.rng.Int64N(w.insertCount)
	}
}

func (t *Thread) scanLength() int64 {
	w := t.w
	if w.scanDist == lenZipfian {
		return t.scanZipf.next(t.rng)
	}
	return w.minScan + t.rng.Int64N(w.maxScan-w.minScan+1)
}

func (t *Thread) fieldLength() int64 {
	w := t.w
	switch w.fieldLenDist {
	case lenUniform:
		return w.minFieldLen + t.rng.Int64N(w.fieldLength-w.minFieldLen+1)
	case lenZipfian:
		return t.fieldZipf.next(t.rng)
	default:
		return w.fieldLength
	}
}

func (t *Thread) randomFieldIndex() int {
	return int(t.rng.Int64N(int64(len(t.w.fields))))
}

func (t *Thread) randomField() []string {
	t.oneField[0] = t.w.fields[t.randomFieldIndex()]
	return t.oneField[:]
}

// key builds the key string; this is the one allocation per operation.
func (t *Thread) key(keynum int64) string {
	t.keyBuf = t.w.appendKey(t.keyBuf[:0], keynum)
	return string(t.keyBuf)
}

// value fills field i's slot with a fresh random value of the next field
// length and returns it.
func (t *Thread) value(i int) []byte {
	n := t.fieldLength()
	off := int64(i) * t.w.fieldLength
	b := t.valBuf[off : off+n : off+n]
	fillRandomValue(t.rng, b)
	return b
}

// allValues is CoreWorkload.buildValues.
func (t *Thread) allValues() map[string][]byte {
	clear(t.values)
	for i, f := range t.w.fields {
		t.values[f] = t.value(i)
	}
	return t.values
}

// writeValues is buildValues with writeallfields=true, else
// buildSingleValue (one random field).
func (t *Thread) writeValues() map[string][]byte {
	if t.w.writeAllFields {
		return t.allValues()
	}
	clear(t.values)
	i := t.randomFieldIndex()
	t.values[t.w.fields[i]] = t.value(i)
	return t.values
}
