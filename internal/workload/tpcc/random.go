package tpcc

import (
	"hash/fnv"
	"math/rand/v2"
	"strconv"
)

// The NURand A constants of the TPC-C specification (clause 2.1.6).
const (
	aLast = 255  // C_LAST: NURand(255, 0, 999)
	aCID  = 1023 // C_ID: NURand(1023, 1, 3000)
	aItem = 8191 // OL_I_ID: NURand(8191, 1, 100000)
)

// Constants are the C values of NURand (clause 2.1.6): one per A for the
// load and one per A for the run. The run's C for C_LAST must differ from
// the load's by a delta in [65, 119] other than 96 and 112 (clause
// 2.1.6.1); the others are unconstrained.
type Constants struct {
	LoadLast, LoadCID, LoadItem int64
	RunLast, RunCID, RunItem    int64
}

// validDelta reports whether the C_LAST delta between load and run obeys
// clause 2.1.6.1.
func validDelta(load, run int64) bool {
	d := run - load
	if d < 0 {
		d = -d
	}
	return d >= 65 && d <= 119 && d != 96 && d != 112
}

// NewConstants chooses load constants from seed.
func NewConstants(seed int64) Constants {
	r := newRand(seed, 0xC0)
	return Constants{
		LoadLast: r.Int64N(aLast + 1), LoadCID: r.Int64N(aCID + 1), LoadItem: r.Int64N(aItem + 1),
	}
}

// WithRun returns c with run constants chosen from seed; RunLast obeys the
// delta rule against LoadLast.
func (c Constants) WithRun(seed int64) Constants {
	r := newRand(seed, 0xC1)
	c.RunCID = r.Int64N(aCID + 1)
	c.RunItem = r.Int64N(aItem + 1)
	for {
		c.RunLast = r.Int64N(aLast + 1)
		if validDelta(c.LoadLast, c.RunLast) {
			return c
		}
	}
}

// nurand is NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
func nurand(r *rand.Rand, a, c, x, y int64) int64 {
	return (((uniform(r, 0, a) | uniform(r, x, y)) + c) % (y - x + 1)) + x
}

// uniform returns a random integer in [lo, hi].
func uniform(r *rand.Rand, lo, hi int64) int64 { return lo + r.Int64N(hi-lo+1) }

// newRand returns a deterministic generator for the seed and a stream id.
func newRand(seed int64, stream uint64) *rand.Rand { return rand.New(newPCG(seed, stream)) }

func newPCG(seed int64, stream uint64) *rand.PCG {
	return rand.NewPCG(uint64(seed)^0x9E3779B97F4A7C15, stream*0xBF58476D1CE4E5B9+1)
}

// streamOf hashes integers into a stream id for newRand.
func streamOf(parts ...int64) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, p := range parts {
		for i := range b {
			b[i] = byte(p >> (8 * i))
		}
		h.Write(b[:])
	}
	return h.Sum64()
}

// syllables are the C_LAST syllables (clause 4.3.2.3).
var syllables = [10]string{"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"}

// LastName returns the customer last name of number n in [0, 999]: the
// syllables of its three digits.
func LastName(n int64) string {
	return syllables[n/100] + syllables[(n/10)%10] + syllables[n%10]
}

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// astring is a random a-string of length [lo, hi] (clause 4.3.2.2).
func astring(r *rand.Rand, lo, hi int) string {
	n := lo + r.IntN(hi-lo+1)
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[r.IntN(len(alnum))]
	}
	return string(b)
}

// nstring is a random numeric string of length [lo, hi].
func nstring(r *rand.Rand, lo, hi int) string {
	n := lo + r.IntN(hi-lo+1)
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + r.IntN(10))
	}
	return string(b)
}

// zip is a zip code: four random digits and "11111" (clause 4.3.2.7).
func zip(r *rand.Rand) string { return nstring(r, 4, 4) + "11111" }

// data is an I_DATA or S_DATA value: [26, 50] characters, 10 % of them
// containing "ORIGINAL" at a random position (clause 4.3.3.1).
func data(r *rand.Rand) string {
	s := astring(r, 26, 50)
	if r.IntN(10) == 0 {
		p := r.IntN(len(s) - 8 + 1)
		s = s[:p] + "ORIGINAL" + s[p+8:]
	}
	return s
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
