package workload

import (
	"math"
	"math/rand/v2"
	"testing"
)

// drawKeys runs n run-phase operations of a read-only workload built from
// props and counts the record numbers drawn.
func drawKeys(t *testing.T, props string, n int) (*Workload, map[int64]float64) {
	t.Helper()
	w, _ := newFromText(t, "dist.properties", props)
	th := w.NewThread(3, 12345)
	counts := map[int64]float64{}
	var op Op
	for i := 0; i < n; i++ {
		th.Next(&op)
		if op.Kind != Read {
			t.Fatalf("op kind %v, want READ", op.Kind)
		}
		if op.Key != w.KeyName(op.KeyNum) {
			t.Fatalf("key %q does not belong to keynum %d", op.Key, op.KeyNum)
		}
		counts[op.KeyNum]++
		th.Done(&op, true)
	}
	return w, counts
}

func TestUniformKeys(t *testing.T) {
	const records, n = 1000, 200000
	_, counts := drawKeys(t, "recordcount=1000\nreadproportion=1\nupdateproportion=0\nrequestdistribution=uniform", n)
	obs := make([]float64, records)
	p := make([]float64, records)
	for k, c := range counts {
		if k < 0 || k >= records {
			t.Fatalf("key %d outside 0..%d", k, records-1)
		}
		obs[k] = c
	}
	for i := range p {
		p[i] = 1.0 / records
	}
	checkChi(t, "uniform over 1000 records", obs, p)
}

func TestUniformKeysInsertRange(t *testing.T) {
	_, counts := drawKeys(t, "recordcount=1000\ninsertstart=100\ninsertcount=50\nreadproportion=1\nupdateproportion=0", 20000)
	obs := make([]float64, 50)
	p := make([]float64, 50)
	for k, c := range counts {
		if k < 100 || k >= 150 {
			t.Fatalf("key %d outside insertstart..insertstart+insertcount-1 = 100..149", k)
		}
		obs[k-100] = c
	}
	for i := range p {
		p[i] = 1.0 / 50
	}
	checkChi(t, "uniform over insert range", obs, p)
}

// grayPMF is the exact distribution of the values YCSB's ZipfianGenerator
// (Gray et al.'s method) returns for n items with the given theta, derived
// from its inverse transform: item 0 if u*zeta(n) < 1, item 1 if below
// 1+0.5^theta, else floor(n*(eta*u-eta+1)^(1/(1-theta))).
func grayPMF(n int64, theta float64) []float64 {
	zetan := 0.0
	for i := int64(1); i <= n; i++ {
		zetan += 1 / math.Pow(float64(i), theta)
	}
	zeta2 := 1 + 1/math.Pow(2, theta)
	eta := (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta2/zetan)
	u1 := (1 + math.Pow(0.5, theta)) / zetan
	// P(X >= k) for k >= 2.
	ge := func(k int64) float64 {
		uk := 1 - (1-math.Pow(float64(k)/float64(n), 1-theta))/eta
		u := math.Max(u1, uk)
		if u >= 1 {
			return 0
		}
		return 1 - u
	}
	p := make([]float64, n)
	p[0] = 1 / zetan
	p[1] = math.Pow(0.5, theta) / zetan
	for k := int64(2); k < n; k++ {
		p[k] = ge(k) - ge(k+1)
	}
	return p
}

// zipfLaw is 1/(i+1)^theta normalised over n items.
func zipfLaw(n int64, theta float64) []float64 {
	p := make([]float64, n)
	s := 0.0
	for i := range p {
		p[i] = 1 / math.Pow(float64(i+1), theta)
		s += p[i]
	}
	for i := range p {
		p[i] /= s
	}
	return p
}

// mergeTail merges the bins from the first one whose expectation falls below
// minExp (for n samples) to the end into one bin.
func mergeTail(obs, p []float64, n, minExp float64) ([]float64, []float64) {
	for i := range p {
		if p[i]*n < minExp {
			o, q := 0.0, 0.0
			for j := i; j < len(p); j++ {
				o += obs[j]
				q += p[j]
			}
			return append(obs[:i:i], o), append(p[:i:i], q)
		}
	}
	return obs, p
}

func TestZipfianGenerator(t *testing.T) {
	const items, n = 100, 1000000
	z := newZipfian(0, items-1, zipfianConstant)
	r := rand.New(rand.NewPCG(1, 2))
	obs := make([]float64, items)
	for i := 0; i < n; i++ {
		v := z.next(r)
		if v < 0 || v >= items {
			t.Fatalf("zipfian value %d outside 0..%d", v, items-1)
		}
		obs[v]++
	}
	t.Run("matches Gray's method exactly, every item", func(t *testing.T) {
		checkChi(t, "zipfian vs Gray pmf", append([]float64(nil), obs...), grayPMF(items, zipfianConstant))
	})
	t.Run("matches 1/i^0.99 where Gray's method is exact", func(t *testing.T) {
		// Gray's method returns items 0 and 1 with exactly Zipf's
		// probabilities; for the rest it approximates (item 2 gets about
		// 15% more than 1/3^0.99 for 100 items), so the tail is one bin.
		law := zipfLaw(items, zipfianConstant)
		tail := 1 - law[0] - law[1]
		checkChi(t, "zipfian vs 1/i^0.99 (bins 0, 1, rest)",
			[]float64{obs[0], obs[1], n - obs[0] - obs[1]}, []float64{law[0], law[1], tail})
	})
	t.Run("close to 1/i^0.99 item by item", func(t *testing.T) {
		law := zipfLaw(items, zipfianConstant)
		for i := range law {
			got := obs[i] / n
			if math.Abs(got/law[i]-1) > 0.2 {
				t.Errorf("item %d: frequency %.5f, Zipf's law %.5f (more than 20%% off)", i, got, law[i])
			}
		}
	})
	t.Run("min offset", func(t *testing.T) {
		z := newZipfian(10, 19, zipfianConstant)
		seen := map[int64]bool{}
		for i := 0; i < 10000; i++ {
			v := z.next(r)
			if v < 10 || v > 19 {
				t.Fatalf("value %d outside 10..19", v)
			}
			seen[v] = true
		}
		if !seen[10] || !seen[19] {
			t.Errorf("range ends not drawn: %v", seen)
		}
	})
}

func TestScrambledZipfianKeys(t *testing.T) {
	const n = 200000
	w, counts := drawKeys(t, "recordcount=1000\noperationcount=1000\nreadproportion=1\nupdateproportion=0\nrequestdistribution=zipfian", n)
	// YCSB: ScrambledZipfianGenerator(insertstart, insertstart+insertcount+expectednewkeys),
	// here 0..1000 inclusive (no inserts expected), so 1001 items; key 1000
	// does not exist yet and is redrawn.
	if w.zipfItems != 1001 {
		t.Fatalf("scrambled item count %d, want 1001", w.zipfItems)
	}
	for k := range counts {
		if k < 0 || k > 999 {
			t.Fatalf("key %d outside 0..999", k)
		}
	}
	// The most popular underlying item (0) lands on fnvhash64(0) % 1001, the
	// next on fnvhash64(1) % 1001.
	first, second := refHash(0)%1001, refHash(1)%1001
	t.Logf("hottest keys expected at %d and %d", first, second)
	best, bestN := int64(-1), 0.0
	for k, c := range counts {
		if c > bestN {
			best, bestN = k, c
		}
	}
	if best != first {
		t.Errorf("hottest key %d, want fnvhash64(0)%%1001 = %d", best, first)
	}
	// Item 0 of a 10^16-item zipfian with zeta 26.469 has probability
	// 1/26.469; rejections of key 1000 scale it up slightly.
	share := counts[first] / n
	if share < 0.034 || share > 0.042 {
		t.Errorf("hottest key share %.4f, want about 1/26.47 = 0.0378", share)
	}
	if counts[second] < counts[first]/2.5 || counts[second] > counts[first]/1.5 {
		t.Errorf("second key count %.0f vs hottest %.0f, want ratio about 2^0.99", counts[second], counts[first])
	}
}

func TestScrambledZipfianExpectsNewKeys(t *testing.T) {
	w, _ := newFromText(t, "t", "recordcount=1000\noperationcount=10000\nreadproportion=0.9\nupdateproportion=0\ninsertproportion=0.1\nrequestdistribution=zipfian")
	// expectednewkeys = (int)(10000 * 0.1 * 2.0) = 2000; range 0..3000 inclusive.
	if w.zipfMin != 0 || w.zipfItems != 3001 {
		t.Errorf("scrambled range min %d items %d, want 0 and 3001", w.zipfMin, w.zipfItems)
	}
}

func TestLatestKeys(t *testing.T) {
	const records, n = 1000, 300000
	_, counts := drawKeys(t, "recordcount=1000\nreadproportion=1\nupdateproportion=0\nrequestdistribution=latest", n)
	if counts[0] != 0 {
		t.Errorf("key 0 drawn %v times; YCSB's SkewedLatestGenerator never returns it before inserts", counts[0])
	}
	// Offset from the newest record (999) follows ZipfianGenerator with
	// recordcount-1 = 999 items.
	p := grayPMF(records-1, zipfianConstant)
	obs := make([]float64, records-1)
	for k, c := range counts {
		if k < 1 || k > 999 {
			t.Fatalf("key %d outside 1..999", k)
		}
		obs[999-k] = c
	}
	o, q := mergeTail(obs, p, n, 20)
	checkChi(t, "latest offsets vs Gray pmf", o, q)
}

func TestLatestFollowsInserts(t *testing.T) {
	w, _ := newFromText(t, "t", "recordcount=1000\nreadproportion=0.5\nupdateproportion=0\ninsertproportion=0.5\nrequestdistribution=latest")
	th := w.NewThread(0, 9)
	var op Op
	inserted := int64(999)
	newestHits, reads := 0, 0
	for i := 0; i < 20000; i++ {
		th.Next(&op)
		switch op.Kind {
		case Insert:
			if op.KeyNum != inserted+1 {
				t.Fatalf("insert keynum %d, want %d", op.KeyNum, inserted+1)
			}
			inserted = op.KeyNum
		case Read:
			if op.KeyNum > inserted {
				t.Fatalf("read of keynum %d before it was inserted (newest %d)", op.KeyNum, inserted)
			}
			reads++
			if op.KeyNum == inserted {
				newestHits++
			}
		}
		th.Done(&op, true)
	}
	// The newest record is the zipfian's item 0: about 1/zeta(n) of reads,
	// 1/zeta(11000) ~ 0.1 here.
	share := float64(newestHits) / float64(reads)
	if share < 0.08 || share > 0.14 {
		t.Errorf("newest record got %.3f of reads, want about 0.1", share)
	}
}

func TestHotspotKeys(t *testing.T) {
	const n = 200000
	_, counts := drawKeys(t, "recordcount=1000\nreadproportion=1\nupdateproportion=0\nrequestdistribution=hotspot\nhotspotdatafraction=0.2\nhotspotopnfraction=0.8", n)
	// Hot set 0..199 (10 bins of 20 keys, 8% each), cold set 200..999
	// (8 bins of 100 keys, 2.5% each).
	obs := make([]float64, 18)
	for k, c := range counts {
		switch {
		case k < 0 || k > 999:
			t.Fatalf("key %d outside 0..999", k)
		case k < 200:
			obs[k/20] += c
		default:
			obs[10+(k-200)/100] += c
		}
	}
	p := make([]float64, 18)
	for i := range p {
		if i < 10 {
			p[i] = 0.08
		} else {
			p[i] = 0.025
		}
	}
	checkChi(t, "hotspot 80/20", obs, p)
}

func TestSequentialKeys(t *testing.T) {
	w, _ := newFromText(t, "t", "recordcount=100\ninsertstart=10\ninsertcount=5\nreadproportion=1\nupdateproportion=0\nrequestdistribution=sequential")
	a, b := w.NewThread(0, 1), w.NewThread(1, 1)
	var op Op
	var got []int64
	for i := 0; i < 6; i++ {
		a.Next(&op)
		got = append(got, op.KeyNum)
		b.Next(&op)
		got = append(got, op.KeyNum)
	}
	want := []int64{10, 11, 12, 13, 14, 10, 11, 12, 13, 14, 10, 11}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sequential keys %v, want %v (one sequence shared by all threads)", got, want)
		}
	}
}

func TestExponentialKeys(t *testing.T) {
	const n = 200000
	w, counts := drawKeys(t, "recordcount=1000\nreadproportion=1\nupdateproportion=0\nrequestdistribution=exponential", n)
	// Offset d = 999 - key is floor(x) for x exponential with rate gamma,
	// conditioned on x < 1000; 95% of the untruncated mass lies below
	// 1000*0.8571428571.
	gamma := -math.Log(1-0.95) / (1000 * 0.8571428571)
	if math.Abs(w.expGamma-gamma) > 1e-15 {
		t.Fatalf("gamma %g, want %g", w.expGamma, gamma)
	}
	F := func(x float64) float64 { return 1 - math.Exp(-gamma*x) }
	obs := make([]float64, 10)
	p := make([]float64, 10)
	for k, c := range counts {
		if k < 0 || k > 999 {
			t.Fatalf("key %d outside 0..999", k)
		}
		obs[(999-k)/100] += c
	}
	for j := range p {
		p[j] = (F(float64(100*(j+1))) - F(float64(100*j))) / F(1000)
	}
	checkChi(t, "exponential offsets", obs, p)
}
