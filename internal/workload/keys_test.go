package workload

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/faultbench/faultbench/internal/properties"
)

// refHash is YCSB's Utils.fnvhash64 computed independently: the standard
// library's FNV-1a (64 bit) over the eight little-endian bytes of v, then
// Java's Math.abs.
func refHash(v int64) int64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	h.Write(b[:])
	s := int64(h.Sum64())
	if s < 0 {
		s = -s
	}
	return s
}

func TestFNVHash64(t *testing.T) {
	tests := []struct {
		name string
		in   int64
		want int64
	}{
		// Known values: keynum 0 is YCSB's well-known first key
		// user6284781860667377211.
		{"zero", 0, 6284781860667377211},
		{"one", 1, refHash(1)},
		{"two", 2, refHash(2)},
		{"999", 999, refHash(999)},
		{"large", 1 << 40, refHash(1 << 40)},
		{"negative", -5, refHash(-5)},
		{"max", math.MaxInt64, refHash(math.MaxInt64)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := fnvhash64(tc.in); got != tc.want {
				t.Errorf("fnvhash64(%d) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
	t.Run("reference agrees with the known key 0", func(t *testing.T) {
		if refHash(0) != 6284781860667377211 {
			t.Fatalf("reference implementation broken: %d", refHash(0))
		}
	})
	t.Run("sweep", func(t *testing.T) {
		for v := int64(-1000); v < 100000; v += 7 {
			if fnvhash64(v) != refHash(v) {
				t.Fatalf("fnvhash64(%d) = %d, reference %d", v, fnvhash64(v), refHash(v))
			}
		}
	})
}

// loadProps reads workloads/name and applies -p style overrides.
func loadProps(t testing.TB, name string, overrides ...string) *properties.Properties {
	t.Helper()
	p := properties.New()
	if err := p.LoadFile("../../workloads/" + name); err != nil {
		t.Fatal(err)
	}
	for _, o := range overrides {
		if err := p.ParseOverride(o); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func loadWorkloadFile(t *testing.T, name string, overrides ...string) (*Workload, *properties.Properties) {
	t.Helper()
	p := loadProps(t, name, overrides...)
	w, err := New(p)
	if err != nil {
		t.Fatalf("New(%s): %v", name, err)
	}
	return w, p
}

func TestLoadKeysWorkloadA(t *testing.T) {
	w, _ := loadWorkloadFile(t, "workloada")
	th := w.NewThread(0, 1)
	var op Op
	var keys []string
	for th.NextLoad(&op) {
		if op.Kind != Insert {
			t.Fatalf("load op kind %v", op.Kind)
		}
		if len(op.Values) != 10 {
			t.Fatalf("load op has %d values, want 10", len(op.Values))
		}
		keys = append(keys, op.Key)
	}
	if len(keys) != 1000 {
		t.Fatalf("load produced %d keys, want 1000", len(keys))
	}
	known := map[int]string{
		0:   "user6284781860667377211",
		1:   "user8517097267634966620",
		2:   "user1820151046732198393",
		999: "user2071219101098386137",
	}
	for i, want := range known {
		t.Run("known key "+strconv.Itoa(i), func(t *testing.T) {
			if keys[i] != want {
				t.Errorf("load key %d = %q, want %q", i, keys[i], want)
			}
		})
	}
	t.Run("all 1000 match reference", func(t *testing.T) {
		for i, k := range keys {
			if want := "user" + strconv.FormatInt(refHash(int64(i)), 10); k != want {
				t.Fatalf("load key %d = %q, want %q", i, k, want)
			}
			if w.KeyName(int64(i)) != k {
				t.Fatalf("KeyName(%d) = %q, load key %q", i, w.KeyName(int64(i)), k)
			}
		}
	})
	t.Run("exhausted stays exhausted", func(t *testing.T) {
		op := Op{Key: "untouched"}
		if th.NextLoad(&op) || w.NewThread(1, 1).NextLoad(&op) {
			t.Fatal("NextLoad returned true after the sequence was exhausted")
		}
		if op.Key != "untouched" {
			t.Fatal("NextLoad modified op when exhausted")
		}
	})
}

func TestKeyName(t *testing.T) {
	tests := []struct {
		name   string
		props  string
		keynum int64
		want   string
	}{
		{"hashed default", "recordcount=10", 0, "user6284781860667377211"},
		{"ordered", "recordcount=10\ninsertorder=ordered", 5, "user5"},
		{"ordered zeropadding 8", "recordcount=10\ninsertorder=ordered\nzeropadding=8", 5, "user00000005"},
		{"ordered zeropadding shorter than number", "recordcount=10\ninsertorder=ordered\nzeropadding=2", 12345, "user12345"},
		{"ordered zeropadding 0", "recordcount=10\ninsertorder=ordered\nzeropadding=0", 7, "user7"},
		{"hashed zeropadding 25", "recordcount=10\nzeropadding=25", 0, "user0000006284781860667377211"},
		{"hashed zeropadding below hash length", "recordcount=10\nzeropadding=5", 1, "user8517097267634966620"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := newFromText(t, "test.properties", tc.props)
			if got := w.KeyName(tc.keynum); got != tc.want {
				t.Errorf("KeyName(%d) = %q, want %q", tc.keynum, got, tc.want)
			}
		})
	}
}

func TestOrderedLoadSequence(t *testing.T) {
	w, _ := newFromText(t, "t", "recordcount=100\ninsertorder=ordered\nzeropadding=4\ninsertstart=10\ninsertcount=5")
	th := w.NewThread(0, 1)
	var op Op
	var got []string
	for th.NextLoad(&op) {
		got = append(got, op.Key)
	}
	want := "user0010 user0011 user0012 user0013 user0014"
	if strings.Join(got, " ") != want {
		t.Errorf("load keys %v, want %s", got, want)
	}
}

func TestConcurrentLoadCoversRangeOnce(t *testing.T) {
	const threads = 8
	w, _ := newFromText(t, "t", "recordcount=20000\ninsertstart=1000\ninsertcount=15000")
	var mu sync.Mutex
	var all []int64
	var wg sync.WaitGroup
	for i := 0; i < threads; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			th := w.NewThread(id, 42)
			var op Op
			var mine []int64
			for th.NextLoad(&op) {
				if op.Key != w.KeyName(op.KeyNum) {
					t.Errorf("key %q for keynum %d", op.Key, op.KeyNum)
				}
				mine = append(mine, op.KeyNum)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	if len(all) != 15000 {
		t.Fatalf("loaded %d records, want 15000", len(all))
	}
	for i, k := range all {
		if k != int64(1000+i) {
			t.Fatalf("record %d is %d, want %d (duplicate or gap)", i, k, 1000+i)
		}
	}
}

func TestShippedWorkloadFiles(t *testing.T) {
	entries, err := os.ReadDir("../../workloads")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"workloada": true, "workloadb": true, "workloadc": true, "workloadd": true,
		"workloade": true, "workloadf": true, "apm-r": true, "apm-rw": true, "apm-w": true,
		"apm-rs": true, "apm-rsw": true, "thumbtack": true}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.Contains(name, ".") {
			continue // workload files have no extension; embed.go and the like are not workloads
		}
		delete(want, name)
		t.Run(name, func(t *testing.T) {
			w, p := loadWorkloadFile(t, name)
			if u := p.Unknown(); len(u) > 0 {
				t.Errorf("unknown keys: %v", u)
			}
			if prog := w.Program(); prog != nil { // workload=tpcc: its own transactions
				term := prog.NewTerminal(0, 7)
				for i := 0; i < 2000; i++ {
					if op, _ := term.Next(); op < 0 || op >= len(prog.OpNames()) {
						t.Fatalf("operation index %d of %v", op, prog.OpNames())
					}
				}
				return
			}
			th := w.NewThread(0, 7)
			var op Op
			for i := 0; i < 2000; i++ {
				th.Next(&op)
				if op.KeyNum < 0 {
					t.Fatalf("negative keynum %d", op.KeyNum)
				}
				th.Done(&op, true)
			}
		})
	}
	for name := range want {
		t.Errorf("workloads/%s is missing", name)
	}
}

func TestShippedMixes(t *testing.T) {
	tests := []struct {
		file string
		dist string
		mix  [NumOps]float64
	}{
		{"workloada", "zipfian", [NumOps]float64{Read: 0.5, Update: 0.5}},
		{"workloadb", "zipfian", [NumOps]float64{Read: 0.95, Update: 0.05}},
		{"workloadc", "zipfian", [NumOps]float64{Read: 1}},
		{"workloadd", "latest", [NumOps]float64{Read: 0.95, Insert: 0.05}},
		{"workloade", "zipfian", [NumOps]float64{Scan: 0.95, Insert: 0.05}},
		{"workloadf", "zipfian", [NumOps]float64{Read: 0.5, ReadModifyWrite: 0.5}},
		{"apm-r", "uniform", [NumOps]float64{Read: 0.95, Insert: 0.05}},
		{"apm-rw", "uniform", [NumOps]float64{Read: 0.5, Insert: 0.5}},
		{"apm-w", "uniform", [NumOps]float64{Read: 0.01, Insert: 0.99}},
		{"apm-rs", "uniform", [NumOps]float64{Read: 0.47, Scan: 0.47, Insert: 0.06}},
		{"apm-rsw", "uniform", [NumOps]float64{Read: 0.25, Scan: 0.25, Insert: 0.5}},
		{"thumbtack", "zipfian", [NumOps]float64{Read: 0.5, Update: 0.5}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			w, _ := loadWorkloadFile(t, tc.file)
			if w.RequestDistribution() != tc.dist {
				t.Errorf("distribution %s, want %s", w.RequestDistribution(), tc.dist)
			}
			for k := OpKind(0); k < NumOps; k++ {
				if math.Abs(w.Proportion(k)-tc.mix[k]) > 1e-12 {
					t.Errorf("%v proportion %g, want %g", k, w.Proportion(k), tc.mix[k])
				}
			}
		})
	}
	t.Run("thumbtack record shape", func(t *testing.T) {
		w, _ := loadWorkloadFile(t, "thumbtack")
		th := w.NewThread(0, 1)
		var op Op
		if !th.NextLoad(&op) {
			t.Fatal("no load op")
		}
		size := 0
		for f, v := range op.Values {
			if len(f) != 2 || len(v) != 10 {
				t.Errorf("field %q with %d bytes, want 2-byte name and 10 bytes", f, len(v))
			}
			size += len(f) + len(v)
		}
		if size != 120 || len(op.Key) != 23 {
			t.Errorf("record %d bytes, key %d bytes; want 120 and 23", size, len(op.Key))
		}
	})
}

func TestDocsListEveryProperty(t *testing.T) {
	b, err := os.ReadFile("../../docs/workloads.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, k := range append(Keys(), IgnoredYCSBKeys()...) {
		if !strings.Contains(doc, "`"+k+"`") {
			t.Errorf("docs/workloads.md does not mention `%s`", k)
		}
	}
}
