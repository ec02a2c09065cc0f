package workload

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/properties"
)

func TestOpNames(t *testing.T) {
	want := []string{"READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE", "DELETE", "TXN"}
	got := OpNames()
	if len(got) != int(NumOps) || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("OpNames() = %v, want %v", got, want)
	}
	for i, n := range want {
		t.Run(n, func(t *testing.T) {
			if OpKind(i).String() != n {
				t.Errorf("OpKind(%d).String() = %q, want %q", i, OpKind(i).String(), n)
			}
		})
	}
	t.Run("out of range", func(t *testing.T) {
		if s := OpKind(200).String(); s != "OpKind(200)" {
			t.Errorf("got %q", s)
		}
	})
	t.Run("fresh slice", func(t *testing.T) {
		a := OpNames()
		a[0] = "x"
		if OpNames()[0] != "READ" {
			t.Error("OpNames returns shared state")
		}
	})
}

func TestValidationErrors(t *testing.T) {
	tests := []struct {
		name  string
		text  string // line 1 is always "recordcount=100" unless overridden
		key   string // the property the error must name
		where string // the source the error must name
	}{
		{"recordcount missing", "fieldcount=3", "recordcount", "property recordcount"},
		{"recordcount zero", "fieldcount=3\nrecordcount=0", "recordcount", "bad.properties:2"},
		{"recordcount not int", "recordcount=lots", "recordcount", "bad.properties:1"},
		{"operationcount negative", "recordcount=100\noperationcount=-1", "operationcount", "bad.properties:2"},
		{"fieldcount not int", "recordcount=100\n# comment\nfieldcount=abc", "fieldcount", "bad.properties:3"},
		{"fieldcount zero", "recordcount=100\nfieldcount=0", "fieldcount", "bad.properties:2"},
		{"fieldlength negative", "recordcount=100\nfieldlength=-1", "fieldlength", "bad.properties:2"},
		{"fieldlengthdistribution unknown", "recordcount=100\nfieldlengthdistribution=normal", "fieldlengthdistribution", "bad.properties:2"},
		{"fieldlengthdistribution histogram", "recordcount=100\nfieldlengthdistribution=histogram", "fieldlengthdistribution", "bad.properties:2"},
		{"minfieldlength above fieldlength", "recordcount=100\nfieldlengthdistribution=uniform\nfieldlength=10\nminfieldlength=11", "minfieldlength", "bad.properties:4"},
		{"readallfields not bool", "recordcount=100\nreadallfields=maybe", "readallfields", "bad.properties:2"},
		{"writeallfields not bool", "recordcount=100\nwriteallfields=2", "writeallfields", "bad.properties:2"},
		{"negative proportion", "recordcount=100\nupdateproportion=-0.1", "updateproportion", "bad.properties:2"},
		{"proportion not a number", "recordcount=100\nscanproportion=half", "scanproportion", "bad.properties:2"},
		{"all proportions zero", "recordcount=100\nreadproportion=0\nupdateproportion=0", "readproportion", "bad.properties:2"},
		{"requestdistribution unknown", "recordcount=100\n\nrequestdistribution=pareto", "requestdistribution", "bad.properties:3"},
		{"insertorder unknown", "recordcount=100\ninsertorder=random", "insertorder", "bad.properties:2"},
		{"zeropadding negative", "recordcount=100\nzeropadding=-1", "zeropadding", "bad.properties:2"},
		{"insertstart beyond recordcount", "recordcount=100\ninsertstart=100", "insertstart", "bad.properties:2"},
		{"insertcount too large", "recordcount=100\ninsertstart=50\ninsertcount=51", "insertcount", "bad.properties:3"},
		{"insertcount zero", "recordcount=100\ninsertcount=0", "insertcount", "bad.properties:2"},
		{"maxscanlength below min", "recordcount=100\nminscanlength=10\nmaxscanlength=5", "maxscanlength", "bad.properties:3"},
		{"minscanlength negative", "recordcount=100\nminscanlength=-1", "minscanlength", "bad.properties:2"},
		{"scanlengthdistribution unknown", "recordcount=100\nscanlengthdistribution=latest", "scanlengthdistribution", "bad.properties:2"},
		{"hotspotdatafraction above 1", "recordcount=100\nrequestdistribution=hotspot\nhotspotdatafraction=1.5", "hotspotdatafraction", "bad.properties:3"},
		{"hotspotopnfraction negative", "recordcount=100\nrequestdistribution=hotspot\nhotspotopnfraction=-1", "hotspotopnfraction", "bad.properties:3"},
		{"hotspot empty hot set", "recordcount=100\nrequestdistribution=hotspot\nhotspotdatafraction=0.001", "hotspotdatafraction", "bad.properties:3"},
		{"exponential percentile 100", "recordcount=100\nrequestdistribution=exponential\nexponential.percentile=100", "exponential.percentile", "bad.properties:3"},
		{"exponential frac zero", "recordcount=100\nrequestdistribution=exponential\nexponential.frac=0", "exponential.frac", "bad.properties:3"},
		{"retry limit negative", "recordcount=100\ncore_workload_insertion_retry_limit=-1", "core_workload_insertion_retry_limit", "bad.properties:2"},
		{"retry interval bad", "recordcount=100\ncore_workload_insertion_retry_interval=soon", "core_workload_insertion_retry_interval", "bad.properties:2"},
		{"retry alias and name", "recordcount=100\ncore_workload_insertion_retry_limit=1\ninsertionretrylimit=2", "insertionretrylimit", "bad.properties:3"},
		{"seed not int", "recordcount=100\nseed=abc", "seed", "bad.properties:2"},
		{"table empty", "recordcount=100\ntable=", "table", "bad.properties:2"},
		{"record too large", "recordcount=100\nfieldcount=1000\nfieldlength=1000000", "fieldlength", "bad.properties:3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := properties.New()
			if err := p.Load(strings.NewReader(tc.text), "bad.properties"); err != nil {
				t.Fatal(err)
			}
			_, err := New(p)
			if err == nil {
				t.Fatal("New succeeded, want an error")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.key) || !strings.Contains(msg, tc.where) {
				t.Errorf("error %q does not name property %q and source %q", msg, tc.key, tc.where)
			}
		})
	}
	t.Run("override names -p", func(t *testing.T) {
		p := properties.New()
		p.Set("recordcount", "100")
		p.Set("requestdistribution", "nope")
		_, err := New(p)
		if err == nil || !strings.Contains(err.Error(), "-p: property requestdistribution") {
			t.Fatalf("error %v, want it to name -p and requestdistribution", err)
		}
	})
}

func TestDefaults(t *testing.T) {
	w, p := newFromText(t, "t", "recordcount=500\nseed=77")
	checks := []struct {
		name      string
		got, want any
	}{
		{"table", w.Table(), "usertable"},
		{"recordcount", w.RecordCount(), int64(500)},
		{"operationcount", w.OperationCount(), int64(0)},
		{"insertstart", w.InsertStart(), int64(0)},
		{"insertcount", w.InsertCount(), int64(500)},
		{"fields", strings.Join(w.Fields(), ","), "field0,field1,field2,field3,field4,field5,field6,field7,field8,field9"},
		{"read", w.Proportion(Read), 0.95},
		{"update", w.Proportion(Update), 0.05},
		{"insert", w.Proportion(Insert), 0.0},
		{"distribution", w.RequestDistribution(), "uniform"},
		{"seed", w.Seed(), int64(77)},
		{"retry limit", w.InsertionRetryLimit(), 0},
		{"retry interval", w.InsertionRetryInterval(), 3 * time.Second},
		{"key", w.KeyName(0), "user6284781860667377211"},
		{"min scan", w.minScan, int64(1)},
		{"max scan", w.maxScan, int64(1000)},
		{"field length", w.fieldLength, int64(100)},
		{"unknown", len(p.Unknown()), 0},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		})
	}
	t.Run("seed from clock when unset", func(t *testing.T) {
		a, _ := newFromText(t, "t", "recordcount=5")
		time.Sleep(time.Microsecond)
		b, _ := newFromText(t, "t", "recordcount=5")
		if a.Seed() == b.Seed() {
			t.Errorf("two workloads without a seed property share seed %d", a.Seed())
		}
	})
	t.Run("retry settings and aliases", func(t *testing.T) {
		w, _ := newFromText(t, "t", "recordcount=5\ncore_workload_insertion_retry_limit=4\ncore_workload_insertion_retry_interval=2")
		if w.InsertionRetryLimit() != 4 || w.InsertionRetryInterval() != 2*time.Second {
			t.Errorf("retry %d %v", w.InsertionRetryLimit(), w.InsertionRetryInterval())
		}
		w, _ = newFromText(t, "t", "recordcount=5\ninsertionretrylimit=3\ninsertionretryinterval=250ms")
		if w.InsertionRetryLimit() != 3 || w.InsertionRetryInterval() != 250*time.Millisecond {
			t.Errorf("alias retry %d %v", w.InsertionRetryLimit(), w.InsertionRetryInterval())
		}
	})
}

func TestDeclaredKeys(t *testing.T) {
	p := properties.New()
	p.Set("recordcount", "10")
	for _, k := range IgnoredYCSBKeys() {
		p.Set(k, "x")
	}
	p.Set("requestdistribution", "uniform")
	p.Set("hotspotdatafraction", "not read for uniform")
	p.Set("exponential.frac", "not read either")
	p.Set("nosuchkey", "1")
	if _, err := New(p); err != nil {
		t.Fatal(err)
	}
	u := p.Unknown()
	if len(u) != 1 || !strings.HasPrefix(u[0], "nosuchkey ") {
		t.Errorf("Unknown() = %v, want only nosuchkey", u)
	}
	t.Run("ignored list", func(t *testing.T) {
		ig := strings.Join(IgnoredYCSBKeys(), " ")
		for _, k := range []string{"workload", "db", "exporter", "measurementtype", "histogram.buckets",
			"hdrhistogram.fileoutput"} {
			if !strings.Contains(" "+ig+" ", " "+k+" ") {
				t.Errorf("%s missing from IgnoredYCSBKeys", k)
			}
		}
		// honoured by the run (experiment.ReadSettings and the command
		// line), so never warned as ignored
		for _, k := range []string{"status.interval", "measurement.interval", "exportfile", "hdrhistogram.percentiles", "dotransactions"} {
			if strings.Contains(" "+ig+" ", " "+k+" ") {
				t.Errorf("%s is honoured, but IgnoredYCSBKeys lists it", k)
			}
		}
		for _, k := range Keys() {
			if strings.Contains(" "+ig+" ", " "+k+" ") {
				t.Errorf("%s is both read and ignored", k)
			}
		}
	})
}

// opMix counts op kinds over n operations.
func opMix(t *testing.T, props string, n int) [NumOps]float64 {
	t.Helper()
	w, _ := newFromText(t, "mix.properties", props)
	th := w.NewThread(1, 99)
	var counts [NumOps]float64
	var op Op
	for i := 0; i < n; i++ {
		th.Next(&op)
		counts[op.Kind]++
		th.Done(&op, true)
	}
	return counts
}

func TestOperationProportions(t *testing.T) {
	tests := []struct {
		name  string
		props string
		want  [NumOps]float64
	}{
		{"workloada mix", "recordcount=1000\nreadproportion=0.5\nupdateproportion=0.5", [NumOps]float64{0.5, 0.5, 0, 0, 0, 0}},
		{"defaults 95/5", "recordcount=1000", [NumOps]float64{0.95, 0.05, 0, 0, 0, 0}},
		{"all six", "recordcount=1000\nreadproportion=0.3\nupdateproportion=0.2\ninsertproportion=0.1\nscanproportion=0.2\nreadmodifywriteproportion=0.1\ndeleteproportion=0.1",
			[NumOps]float64{0.3, 0.2, 0.1, 0.2, 0.1, 0.1}},
		{"weights need not sum to 1", "recordcount=1000\nreadproportion=3\nupdateproportion=1", [NumOps]float64{0.75, 0.25, 0, 0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			counts := opMix(t, tc.props, 100000)
			var obs, p []float64
			for k := OpKind(0); k < NumOps; k++ {
				if tc.want[k] == 0 {
					if counts[k] != 0 {
						t.Errorf("%v drawn %v times, want never", k, counts[k])
					}
					continue
				}
				obs = append(obs, counts[k])
				p = append(p, tc.want[k])
			}
			if len(obs) > 1 {
				checkChi(t, tc.name, obs, p)
			}
		})
	}
}

func TestDeterminism(t *testing.T) {
	for _, file := range []string{"workloada", "workloade", "workloadf", "apm-rs"} {
		t.Run(file, func(t *testing.T) {
			trace := func(id int, seed int64) string {
				w, _ := loadWorkloadFile(t, file)
				th := w.NewThread(id, seed)
				var b strings.Builder
				var op Op
				for i := 0; i < 300; i++ {
					th.Next(&op)
					fmt.Fprintf(&b, "%v %d %s %v %d|", op.Kind, op.KeyNum, op.Key, op.Fields, op.ScanLen)
					for _, f := range w.Fields() {
						if v, ok := op.Values[f]; ok {
							fmt.Fprintf(&b, "%s=%s;", f, v)
						}
					}
					th.Done(&op, true)
				}
				return b.String()
			}
			a, b := trace(2, 1234), trace(2, 1234)
			if a != b {
				t.Error("same (seed, id) gave different sequences")
			}
			if a == trace(3, 1234) {
				t.Error("different thread ids gave the same sequence")
			}
			if a == trace(2, 1235) {
				t.Error("different seeds gave the same sequence")
			}
		})
	}
}

func TestOpKindsIndependentOfOtherThreads(t *testing.T) {
	kinds := func(disturb bool) (string, string) {
		w, _ := loadWorkloadFile(t, "workloade") // zipfian with inserts: keys depend on shared state
		if disturb {
			other := w.NewThread(9, 5)
			var op Op
			for i := 0; i < 500; i++ {
				other.Next(&op)
				other.Done(&op, true)
			}
		}
		th := w.NewThread(1, 5)
		var ks, keys strings.Builder
		var op Op
		for i := 0; i < 2000; i++ {
			th.Next(&op)
			ks.WriteString(op.Kind.String())
			keys.WriteString(op.Key)
			th.Done(&op, true)
		}
		return ks.String(), keys.String()
	}
	k1, keys1 := kinds(false)
	k2, keys2 := kinds(true)
	if k1 != k2 {
		t.Error("another thread's inserts changed this thread's operation kinds")
	}
	if keys1 == keys2 {
		t.Error("keys did not change although another thread inserted first; the test lost its point")
	}
}

func TestFieldsAndValues(t *testing.T) {
	t.Run("defaults: read all, write one", func(t *testing.T) {
		w, _ := newFromText(t, "t", "recordcount=100\nreadproportion=0.5\nupdateproportion=0.5")
		th := w.NewThread(0, 1)
		var op Op
		for i := 0; i < 1000; i++ {
			th.Next(&op)
			switch op.Kind {
			case Read:
				if op.Fields != nil || op.Values != nil {
					t.Fatalf("read with fields %v values %v, want nil, nil", op.Fields, op.Values)
				}
			case Update:
				if op.Fields != nil || len(op.Values) != 1 {
					t.Fatalf("update with fields %v and %d values, want nil and 1", op.Fields, len(op.Values))
				}
				for f, v := range op.Values {
					if !strings.HasPrefix(f, "field") || len(v) != 100 {
						t.Fatalf("update field %q with %d bytes", f, len(v))
					}
				}
			}
		}
	})
	t.Run("readallfields=false writeallfields=true", func(t *testing.T) {
		w, _ := newFromText(t, "t", "recordcount=100\nreadallfields=false\nwriteallfields=true\nfieldcount=4\nreadproportion=1\nupdateproportion=1\nscanproportion=1\nreadmodifywriteproportion=1")
		th := w.NewThread(0, 1)
		var op Op
		seen := map[string]bool{}
		for i := 0; i < 2000; i++ {
			th.Next(&op)
			if op.Kind != Update && len(op.Fields) != 1 {
				t.Fatalf("%v with fields %v, want exactly one", op.Kind, op.Fields)
			}
			if op.Kind == Update || op.Kind == ReadModifyWrite {
				if len(op.Values) != 4 {
					t.Fatalf("%v with %d values, want all 4", op.Kind, len(op.Values))
				}
			}
			if op.Kind == Read {
				seen[op.Fields[0]] = true
			}
		}
		if len(seen) != 4 {
			t.Errorf("reads touched fields %v, want all 4", seen)
		}
	})
	t.Run("readallfieldsbyname", func(t *testing.T) {
		w, _ := newFromText(t, "t", "recordcount=100\nreadallfieldsbyname=true\nfieldcount=3\nfieldnameprefix=f\nreadproportion=1\nupdateproportion=0")
		th := w.NewThread(0, 1)
		var op Op
		th.Next(&op)
		if strings.Join(op.Fields, ",") != "f0,f1,f2" {
			t.Errorf("fields %v, want f0,f1,f2", op.Fields)
		}
	})
	t.Run("YCSB byte alphabet", func(t *testing.T) {
		w, _ := newFromText(t, "t", "recordcount=100\nfieldlength=997")
		th := w.NewThread(0, 5)
		var op Op
		hist := [6][128]int{}
		for th.NextLoad(&op) {
			for _, v := range op.Values {
				if len(v) != 997 {
					t.Fatalf("value of %d bytes, want 997", len(v))
				}
				for i, c := range v {
					if c < 0x20 || c > 0x7f {
						t.Fatalf("byte %#x outside 0x20..0x7f", c)
					}
					hist[i%6][c]++
				}
			}
		}
		// Positions 0 and 3 of every six use mask 31 (0x20..0x3f),
		// 1 and 4 mask 63 (0x20..0x5f), 2 and 5 mask 95 (0x20..0x3f and
		// 0x60..0x7f), as in RandomByteIterator.
		allowed := func(pos int, c int) bool {
			switch pos {
			case 0, 3:
				return c >= 0x20 && c <= 0x3f
			case 1, 4:
				return c >= 0x20 && c <= 0x5f
			default:
				return (c >= 0x20 && c <= 0x3f) || (c >= 0x60 && c <= 0x7f)
			}
		}
		for pos := range hist {
			for c, n := range hist[pos] {
				if n > 0 && !allowed(pos, c) {
					t.Errorf("position %d: byte %#x not in YCSB's alphabet", pos, c)
				}
				if n == 0 && allowed(pos, c) {
					t.Errorf("position %d: byte %#x never produced", pos, c)
				}
			}
		}
	})
	t.Run("partial group", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 1))
		for n := 0; n <= 25; n++ {
			b := bytes.Repeat([]byte{0}, n)
			fillRandomValue(r, b)
			if bytes.IndexByte(b, 0) >= 0 {
				t.Fatalf("length %d: unfilled byte in %q", n, b)
			}
		}
	})
	t.Run("field length distributions", func(t *testing.T) {
		tests := []struct {
			props    string
			min, max int
			mode     int // most frequent length, -1 = do not check
		}{
			{"fieldlengthdistribution=constant\nfieldlength=33", 33, 33, 33},
			{"fieldlengthdistribution=uniform\nfieldlength=40\nminfieldlength=5", 5, 40, -1},
			{"fieldlengthdistribution=zipfian\nfieldlength=40\nminfieldlength=5", 5, 40, 5},
			{"fieldlengthdistribution=uniform\nfieldlength=40", 1, 40, -1},
		}
		for _, tc := range tests {
			w, _ := newFromText(t, "t", "recordcount=2000\n"+tc.props)
			th := w.NewThread(0, 3)
			var op Op
			count := map[int]int{}
			for th.NextLoad(&op) {
				for _, v := range op.Values {
					count[len(v)]++
				}
			}
			mode, modeN := -1, 0
			for l, n := range count {
				if l < tc.min || l > tc.max {
					t.Errorf("%q: length %d outside %d..%d", tc.props, l, tc.min, tc.max)
				}
				if n > modeN {
					mode, modeN = l, n
				}
			}
			if count[tc.min] == 0 || count[tc.max] == 0 {
				t.Errorf("%q: range ends %d..%d not both produced", tc.props, tc.min, tc.max)
			}
			if tc.mode >= 0 && mode != tc.mode {
				t.Errorf("%q: most frequent length %d, want %d", tc.props, mode, tc.mode)
			}
		}
	})
}

func TestScanLengths(t *testing.T) {
	tests := []struct {
		name     string
		props    string
		min, max int
	}{
		{"uniform default", "", 1, 1000},
		{"workloade", "maxscanlength=100", 1, 100},
		{"uniform min", "minscanlength=5\nmaxscanlength=9", 5, 9},
		{"zipfian", "scanlengthdistribution=zipfian\nminscanlength=2\nmaxscanlength=50", 2, 50},
		{"single length", "minscanlength=7\nmaxscanlength=7", 7, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := newFromText(t, "t", "recordcount=100\nreadproportion=0\nupdateproportion=0\nscanproportion=1\n"+tc.props)
			th := w.NewThread(0, 1)
			var op Op
			lo, hi := 1<<30, -1
			counts := map[int]int{}
			for i := 0; i < 50000; i++ {
				th.Next(&op)
				if op.Kind != Scan {
					t.Fatalf("kind %v", op.Kind)
				}
				if op.ScanLen < tc.min || op.ScanLen > tc.max {
					t.Fatalf("scan length %d outside %d..%d", op.ScanLen, tc.min, tc.max)
				}
				lo, hi = min(lo, op.ScanLen), max(hi, op.ScanLen)
				counts[op.ScanLen]++
			}
			if lo != tc.min || hi != tc.max {
				t.Errorf("scan lengths covered %d..%d, want %d..%d", lo, hi, tc.min, tc.max)
			}
			if strings.Contains(tc.props, "zipfian") && counts[tc.min] <= counts[tc.min+1] {
				t.Errorf("zipfian scan lengths: %d drawn %d times, %d drawn %d times; want the minimum most popular",
					tc.min, counts[tc.min], tc.min+1, counts[tc.min+1])
			}
		})
	}
}

func TestRunInsertsAndDone(t *testing.T) {
	w, _ := newFromText(t, "t", "recordcount=100\nreadproportion=0\nupdateproportion=0\ninsertproportion=1")
	th := w.NewThread(0, 1)
	var op Op
	th.Next(&op)
	if op.Kind != Insert || op.KeyNum != 100 || len(op.Values) != 10 {
		t.Fatalf("first run insert: %v keynum %d, %d values; want INSERT 100 with 10 values", op.Kind, op.KeyNum, len(op.Values))
	}
	if w.txInsert.last() != 99 {
		t.Fatalf("limit %d before Done, want 99", w.txInsert.last())
	}
	th.Done(&op, false)
	if w.txInsert.last() != 100 {
		t.Fatalf("limit %d after Done (even failed), want 100", w.txInsert.last())
	}
	th.Done(&op, true) // second Done is a no-op
	if w.txInsert.last() != 100 {
		t.Fatalf("limit %d after a second Done, want 100", w.txInsert.last())
	}
	t.Run("load ops are not acknowledged", func(t *testing.T) {
		th.NextLoad(&op)
		th.Done(&op, true)
		if w.txInsert.last() != 100 {
			t.Fatalf("limit moved to %d by a load op", w.txInsert.last())
		}
	})
	t.Run("out of order acknowledgements", func(t *testing.T) {
		ops := make([]Op, 5)
		for i := range ops {
			th.Next(&ops[i])
		}
		for _, i := range []int{1, 2, 4} {
			th.Done(&ops[i], true)
		}
		if w.txInsert.last() != 100 {
			t.Fatalf("limit %d with 101 unacknowledged, want 100", w.txInsert.last())
		}
		th.Done(&ops[0], true)
		if w.txInsert.last() != 103 {
			t.Fatalf("limit %d, want 103 (104 still pending)", w.txInsert.last())
		}
		th.Done(&ops[3], true)
		if w.txInsert.last() != 105 {
			t.Fatalf("limit %d, want 105", w.txInsert.last())
		}
	})
}

func TestConcurrentRunWithInserts(t *testing.T) {
	for _, dist := range []string{"latest", "zipfian", "exponential", "uniform"} {
		t.Run(dist, func(t *testing.T) {
			w, _ := newFromText(t, "t", "recordcount=1000\noperationcount=40000\nreadproportion=0.5\nupdateproportion=0.2\ninsertproportion=0.3\nrequestdistribution="+dist)
			const threads, per = 8, 5000
			var inserts sync.Map
			var wg sync.WaitGroup
			for g := 0; g < threads; g++ {
				wg.Add(1)
				go func(id int) {
					defer wg.Done()
					th := w.NewThread(id, 1)
					var op Op
					for i := 0; i < per; i++ {
						before := w.txInsert.last()
						th.Next(&op)
						switch op.Kind {
						case Insert:
							if _, dup := inserts.LoadOrStore(op.KeyNum, true); dup || op.KeyNum < 1000 {
								t.Errorf("insert keynum %d duplicated or below recordcount", op.KeyNum)
							}
						default:
							if after := w.txInsert.last(); op.KeyNum < 0 || op.KeyNum > after {
								t.Errorf("%v of keynum %d beyond the acknowledged limit %d (was %d)", op.Kind, op.KeyNum, after, before)
							}
						}
						th.Done(&op, true)
					}
				}(g)
			}
			wg.Wait()
			n := int64(0)
			inserts.Range(func(any, any) bool { n++; return true })
			if got, want := w.txInsert.last(), 999+n; got != want {
				t.Errorf("final limit %d, want %d after %d inserts", got, want, n)
			}
		})
	}
}

func TestAckCounterConcurrent(t *testing.T) {
	a := newAckCounter(1000)
	const workers, per = 8, 5000
	var wg sync.WaitGroup
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 0))
			var pending []int64
			for i := 0; i < per; i++ {
				v := a.next()
				if l := a.last(); l >= v {
					t.Errorf("limit %d reached unacknowledged %d", l, v)
					return
				}
				pending = append(pending, v)
				if r.IntN(3) == 0 {
					for _, p := range pending {
						a.acknowledge(p)
					}
					pending = pending[:0]
				}
			}
			for _, p := range pending {
				a.acknowledge(p)
			}
		}(g)
	}
	wg.Wait()
	if got, want := a.last(), int64(1000+workers*per-1); got != want {
		t.Errorf("final limit %d, want %d", got, want)
	}
}

func TestAckCounterPanics(t *testing.T) {
	tests := []struct {
		name string
		run  func(a *ackCounter)
	}{
		{"two pending keys share a slot", func(a *ackCounter) {
			for i := 0; i < ackWindowSize+2; i++ {
				a.next()
			}
			a.acknowledge(1) // 0 stays pending, so 1 stays in the window
			a.acknowledge(ackWindowSize + 1)
		}},
		{"key lands on the pending limit's slot", func(a *ackCounter) {
			for i := 0; i < ackWindowSize+1; i++ {
				a.next()
			}
			a.acknowledge(ackWindowSize) // 0 pending; YCSB would treat 0 as acknowledged here
		}},
		{"double acknowledgement", func(a *ackCounter) {
			a.next()
			a.next()
			a.acknowledge(1)
			a.acknowledge(1)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAckCounter(0)
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tc.run(a)
		})
	}
	t.Run("full window without overflow", func(t *testing.T) {
		a := newAckCounter(0)
		for i := 0; i < ackWindowSize; i++ {
			a.next()
		}
		for v := int64(ackWindowSize - 1); v >= 1; v-- {
			a.acknowledge(v) // 0..2^20-1 pending: exactly the window
		}
		if a.last() != -1 {
			t.Fatalf("limit %d with 0 pending, want -1", a.last())
		}
		a.acknowledge(0)
		if a.last() != ackWindowSize-1 {
			t.Errorf("limit %d, want %d", a.last(), ackWindowSize-1)
		}
	})
}
