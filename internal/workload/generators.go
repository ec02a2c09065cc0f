package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// YCSB's FNV-64 constants (site.ycsb.Utils).
const (
	fnvOffsetBasis64 uint64 = 0xCBF29CE484222325
	fnvPrime64       uint64 = 1099511628211
)

// fnvhash64 is YCSB's Utils.fnvhash64: FNV-1a over the eight low-to-high
// bytes of val, then Java's Math.abs (so math.MinInt64 stays negative, as in
// Java).
func fnvhash64(val int64) int64 {
	h := fnvOffsetBasis64
	v := uint64(val)
	for i := 0; i < 8; i++ {
		h ^= v & 0xff
		h *= fnvPrime64
		v >>= 8
	}
	s := int64(h)
	if s < 0 {
		s = -s // wraps for math.MinInt64 exactly like Java's Math.abs
	}
	return s
}

// YCSB's zipfian constants (ZipfianGenerator.ZIPFIAN_CONSTANT and
// ScrambledZipfianGenerator's precomputed zeta for 10^16 items).
const (
	zipfianConstant    = 0.99
	scrambledItemCount = 10000000000000000 // ScrambledZipfianGenerator.ITEM_COUNT
	scrambledZetan     = 26.46902820178302 // ScrambledZipfianGenerator.ZETAN
)

// zipfian is YCSB's ZipfianGenerator (Gray et al., "Quickly Generating
// Billion-Record Synthetic Databases", SIGMOD 1994): item base is the most
// popular, base+1 the next, and so on. It is a value type: a Thread keeps its
// own copy, because nextLong with a growing item count (the "latest"
// distribution) extends zeta incrementally, as YCSB does under a lock.
type zipfian struct {
	base         int64
	items        int64 // item count at construction; YCSB keeps using it in eta
	theta        float64
	alpha        float64
	zeta2theta   float64
	halfPowTheta float64 // 0.5^theta
	zetan        float64
	countForZeta int64
	eta          float64
}

// zetaStatic is YCSB's ZipfianGenerator.zetastatic(st, n, theta, initialsum).
func zetaStatic(st, n int64, theta, initial float64) float64 {
	sum := initial
	for i := st; i < n; i++ {
		sum += 1 / math.Pow(float64(i+1), theta)
	}
	return sum
}

// newZipfian returns a generator for min..max inclusive.
func newZipfian(min, max int64, theta float64) zipfian {
	return newZipfianZeta(min, max, theta, zetaStatic(0, max-min+1, theta, 0))
}

// newZipfianZeta returns a generator for min..max with a precomputed zeta.
func newZipfianZeta(min, max int64, theta, zetan float64) zipfian {
	z := zipfian{
		base:         min,
		items:        max - min + 1,
		theta:        theta,
		alpha:        1.0 / (1.0 - theta),
		zeta2theta:   zetaStatic(0, 2, theta, 0),
		halfPowTheta: math.Pow(0.5, theta),
		zetan:        zetan,
		countForZeta: max - min + 1,
	}
	z.eta = z.computeEta()
	return z
}

func (z *zipfian) computeEta() float64 {
	return (1 - math.Pow(2.0/float64(z.items), 1-z.theta)) / (1 - z.zeta2theta/z.zetan)
}

// nextLong is ZipfianGenerator.nextLong(itemcount). Growing itemcount extends
// zeta incrementally; a smaller itemcount keeps the larger zeta (YCSB's
// allowitemcountdecrease=false).
func (z *zipfian) nextLong(r *rand.Rand, itemcount int64) int64 {
	if itemcount > z.countForZeta {
		z.zetan = zetaStatic(z.countForZeta, itemcount, z.theta, z.zetan)
		z.countForZeta = itemcount
		z.eta = z.computeEta()
	}
	u := r.Float64()
	uz := u * z.zetan
	if uz < 1.0 {
		return z.base
	}
	if uz < 1.0+z.halfPowTheta {
		return z.base + 1
	}
	return z.base + int64(float64(itemcount)*math.Pow(z.eta*u-z.eta+1, z.alpha))
}

// next draws from the constructed item range.
func (z *zipfian) next(r *rand.Rand) int64 { return z.nextLong(r, z.items) }

// ackWindowSize is AcknowledgedCounterGenerator.WINDOW_SIZE (2^20).
const ackWindowSize = 1 << 20

// ackCounter is YCSB's AcknowledgedCounterGenerator: it hands out increasing
// record numbers for run-phase inserts and publishes, as last(), only the
// highest number below which every handed-out number has been acknowledged.
// next and last are lock-free; acknowledge takes a small mutex.
type ackCounter struct {
	counter atomic.Int64 // next number to hand out
	limit   atomic.Int64 // highest contiguously acknowledged number

	mu     sync.Mutex
	window []bool // acknowledged but not yet contiguous; guarded by mu
}

func newAckCounter(start int64) *ackCounter {
	a := newAckCounterNoWindow(start)
	a.window = make([]bool, ackWindowSize)
	return a
}

// newAckCounterNoWindow is an ackCounter for workloads without run-phase
// inserts: last() is start-1 forever and acknowledge must not be called.
func newAckCounterNoWindow(start int64) *ackCounter {
	a := &ackCounter{}
	a.counter.Store(start)
	a.limit.Store(start - 1)
	return a
}

func (a *ackCounter) next() int64 { return a.counter.Add(1) - 1 }

func (a *ackCounter) last() int64 { return a.limit.Load() }

// acknowledge marks v as done and advances last() over every contiguous
// acknowledged number. YCSB uses tryLock here and may leave the limit behind
// until the next acknowledgement; a plain lock never does.
func (a *ackCounter) acknowledge(v int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.window == nil {
		panic("workload: acknowledge on a workload without inserts")
	}
	// The window holds limit+1 .. limit+ackWindowSize. YCSB only notices
	// an overflow when two pending numbers share a slot; checking the
	// distance also catches the case where v would land on the slot of the
	// still unacknowledged limit+1.
	if v-a.limit.Load() > ackWindowSize {
		panic(fmt.Sprintf("workload: too many unacknowledged insertion keys (%d is more than %d past the acknowledged %d; was Thread.Done called for every insert?)",
			v, ackWindowSize, a.limit.Load()))
	}
	slot := v & (ackWindowSize - 1)
	if a.window[slot] {
		panic(fmt.Sprintf("workload: insertion key %d acknowledged twice", v))
	}
	a.window[slot] = true
	idx := a.limit.Load() + 1
	for a.window[idx&(ackWindowSize-1)] {
		a.window[idx&(ackWindowSize-1)] = false
		idx++
	}
	a.limit.Store(idx - 1)
}

// fillRandomValue fills buf like YCSB's RandomByteIterator: every six bytes
// come from one 32-bit random number, byte i of the group taking bits
// shifted by 0, 5, 10, 15, 20, 25 masked with 31, 63, 95, 31, 63, 95 and
// offset by ' ', so the bytes are ASCII 0x20..0x7F with YCSB's per-position
// alphabet.
func fillRandomValue(r *rand.Rand, buf []byte) {
	i := 0
	for ; i+12 <= len(buf); i += 12 {
		x := r.Uint64()
		put6(buf[i:i+6:i+6], uint32(x))
		put6(buf[i+6:i+12:i+12], uint32(x>>32))
	}
	for i < len(buf) {
		n := min(6, len(buf)-i)
		putN(buf[i:i+n], r.Uint32())
		i += n
	}
}

func put6(b []byte, x uint32) {
	_ = b[5]
	b[0] = byte(x&31) + ' '
	b[1] = byte((x>>5)&63) + ' '
	b[2] = byte((x>>10)&95) + ' '
	b[3] = byte((x>>15)&31) + ' '
	b[4] = byte((x>>20)&63) + ' '
	b[5] = byte((x>>25)&95) + ' '
}

// putN fills the first len(b) (<= 6) bytes as RandomByteIterator does for a
// final partial group.
func putN(b []byte, x uint32) {
	shifts := [6]uint{0, 5, 10, 15, 20, 25}
	masks := [6]uint32{31, 63, 95, 31, 63, 95}
	for j := range b {
		b[j] = byte((x>>shifts[j])&masks[j]) + ' '
	}
}

// splitmix64 is a bijective 64-bit mixer used to derive thread seeds.
func splitmix64(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}
