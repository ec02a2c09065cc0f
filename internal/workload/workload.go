// Package workload implements YCSB's CoreWorkload for faultbench: which
// operation to issue next (read, update, insert, scan, read-modify-write and,
// as a faultbench extension, delete), on which key, with which fields and
// values.
//
// It follows YCSB's site.ycsb.workloads.CoreWorkload and its generators
// (ZipfianGenerator, ScrambledZipfianGenerator, SkewedLatestGenerator,
// HotspotIntegerGenerator, ExponentialGenerator, SequentialGenerator,
// CounterGenerator, AcknowledgedCounterGenerator, RandomByteIterator) property
// by property, so a YCSB workload file means the same thing here: keys are
// byte-identical to YCSB's ("user" followed by the decimal FNV-64 hash of the
// record number for insertorder=hashed), the load phase inserts the same key
// set, and the run phase draws operations and keys from the same
// distributions. Random numbers come from a per-thread math/rand/v2 source
// seeded from the run's seed and the thread id, so a run is repeatable; the
// individual draws are of course not the ones a Java YCSB run makes.
//
// A Workload is built once from properties with New and shared by all worker
// goroutines; each goroutine gets its own Thread from NewThread. See
// docs/workloads.md for every property, its default and the (few) differences
// from YCSB.
package workload

import (
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// OpKind is the kind of one workload operation.
type OpKind uint8

// The operation kinds, in YCSB's operation-chooser order. NumOps is the
// number of kinds, for arrays indexed by OpKind.
const (
	Read OpKind = iota
	Update
	Insert
	Scan
	ReadModifyWrite
	Delete
	// Txn is a transaction of txn.ops row operations (faultbench
	// extension, see txn.go); the run phase issues only Txn ops when
	// txn.ops > 0.
	Txn
	NumOps
)

// String returns the operation name YCSB uses in its summary ("READ",
// "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE") and "DELETE".
func (k OpKind) String() string {
	switch k {
	case Read:
		return "READ"
	case Update:
		return "UPDATE"
	case Insert:
		return "INSERT"
	case Scan:
		return "SCAN"
	case ReadModifyWrite:
		return "READ-MODIFY-WRITE"
	case Delete:
		return "DELETE"
	case Txn:
		return "TXN"
	}
	return "OpKind(" + strconv.Itoa(int(k)) + ")"
}

// OpNames returns the names of all operation kinds; index i is OpKind(i).
// The slice is fresh on every call.
func OpNames() []string {
	names := make([]string, NumOps)
	for k := OpKind(0); k < NumOps; k++ {
		names[k] = k.String()
	}
	return names
}

// Op is one operation to perform, filled by Thread.NextLoad or Thread.Next.
//
// Fields, Values and the byte slices in Values belong to the Thread and are
// overwritten by its next NextLoad or Next call: a driver must finish with
// them before it returns and must not retain or modify them. Key is an
// ordinary string and may be kept.
type Op struct {
	// Kind is the operation kind.
	Kind OpKind
	// KeyNum is the record number the key was built from (before hashing).
	KeyNum int64
	// Key is the database key, exactly YCSB's buildKeyName(KeyNum).
	Key string
	// Fields lists the fields to read for Read, Scan and the read half of
	// ReadModifyWrite; nil means all fields. It is nil for the other kinds.
	Fields []string
	// Values holds the field values to write for Insert (all fields),
	// Update and the write half of ReadModifyWrite (one random field, or all
	// with writeallfields=true); nil for Read, Scan and Delete.
	Values map[string][]byte
	// ScanLen is the number of records to scan for Scan; 0 otherwise.
	ScanLen int
	// TxnOps is the number of row operations of a Txn op (fill them with
	// Thread.NextTxnOp); 0 otherwise.
	TxnOps int

	// ack is set on a run-phase insert whose key must be acknowledged by
	// Thread.Done.
	ack bool
}

type keyDist uint8

const (
	distUniform keyDist = iota
	distZipfian
	distLatest
	distHotspot
	distSequential
	distExponential
)

type lenDist uint8

const (
	lenConstant lenDist = iota
	lenUniform
	lenZipfian
)

// Property names, YCSB's spelling.
const (
	keyTable                 = "table"
	keyRecordCount           = "recordcount"
	keyOperationCount        = "operationcount"
	keyFieldCount            = "fieldcount"
	keyFieldNamePrefix       = "fieldnameprefix"
	keyFieldLength           = "fieldlength"
	keyFieldLengthDist       = "fieldlengthdistribution"
	keyMinFieldLength        = "minfieldlength"
	keyReadAllFields         = "readallfields"
	keyReadAllFieldsByName   = "readallfieldsbyname"
	keyWriteAllFields        = "writeallfields"
	keyReadProportion        = "readproportion"
	keyUpdateProportion      = "updateproportion"
	keyInsertProportion      = "insertproportion"
	keyScanProportion        = "scanproportion"
	keyRMWProportion         = "readmodifywriteproportion"
	keyDeleteProportion      = "deleteproportion"
	keyRequestDist           = "requestdistribution"
	keyInsertOrder           = "insertorder"
	keyZeroPadding           = "zeropadding"
	keyInsertStart           = "insertstart"
	keyInsertCount           = "insertcount"
	keyMaxScanLength         = "maxscanlength"
	keyMinScanLength         = "minscanlength"
	keyScanLengthDist        = "scanlengthdistribution"
	keyHotspotDataFraction   = "hotspotdatafraction"
	keyHotspotOpnFraction    = "hotspotopnfraction"
	keyExponentialPercentile = "exponential.percentile"
	keyExponentialFrac       = "exponential.frac"
	keyRetryLimit            = "core_workload_insertion_retry_limit"
	keyRetryInterval         = "core_workload_insertion_retry_interval"
	keyRetryLimitAlias       = "insertionretrylimit"
	keyRetryIntervalAlias    = "insertionretryinterval"
	keySeed                  = "seed"
)

// Keys returns every property key the workload reads (including the
// faultbench aliases and extensions), not the ignored YCSB keys. The slice is
// fresh on every call.
func Keys() []string {
	return []string{
		keyTable, keyRecordCount, keyOperationCount, keyFieldCount, keyFieldNamePrefix,
		keyFieldLength, keyFieldLengthDist, keyMinFieldLength, keyReadAllFields,
		keyReadAllFieldsByName, keyWriteAllFields, keyReadProportion, keyUpdateProportion,
		keyInsertProportion, keyScanProportion, keyRMWProportion, keyDeleteProportion,
		keyRequestDist, keyInsertOrder, keyZeroPadding, keyInsertStart, keyInsertCount,
		keyMaxScanLength, keyMinScanLength, keyScanLengthDist, keyHotspotDataFraction,
		keyHotspotOpnFraction, keyExponentialPercentile, keyExponentialFrac,
		keyRetryLimit, keyRetryInterval, keyRetryLimitAlias, keyRetryIntervalAlias, keySeed, keyTxnOps,
	}
}

// IgnoredYCSBKeys returns YCSB properties that faultbench accepts in workload
// files and on the command line but does not act on (YCSB's class names,
// its measurement and export settings, which faultbench replaces with its own
// recorder, and CoreWorkload features faultbench does not implement). New
// declares them, so they are not reported as unknown; the command line should
// warn "ignored YCSB property X" for each one that is set. Client settings
// that faultbench honours itself (threadcount, target, maxexecutiontime, ...)
// are not in this list. The slice is fresh on every call.
func IgnoredYCSBKeys() []string {
	return []string{
		"workload",                    // Java class of the workload, or the name of a registered workload (Registry.New)
		"db",                          // Java class of the DB binding; faultbench takes a target
		"exporter",                    // measurement exporter class
		"measurementtype",             // histogram|hdrhistogram|timeseries|raw
		"measurement.trackjvm",        // JVM statistics
		"measurement.raw.output_file", // raw measurement output
		"measurement.raw.no_summary",  // raw measurement summary switch
		"histogram.buckets",           // old histogram bucket count
		"hdrhistogram.fileoutput",     // YCSB's own .hdr interval log
		"hdrhistogram.output.path",    // path of that log
		"timeseries.granularity",      // YCSB time-series measurement step
		"reportlatencyforeacherror",   // per-error latency series
		"latencytrackederrors",        // error names with their own series
		"dataintegrity",               // deterministic values + VERIFY; faultbench has its own checks
		"fieldlengthhistogram",        // file for fieldlengthdistribution=histogram (unsupported)
	}
}

// Workload is a configured YCSB CoreWorkload. It is immutable after New except
// for the goroutine-safe shared sequences (load keys, run-phase insert keys
// with their acknowledgement window, the sequential key counter) and is
// shared by all Threads.
type Workload struct {
	table          string
	recordCount    int64
	operationCount int64
	insertStart    int64
	insertCount    int64

	fields       []string
	fieldLenDist lenDist
	fieldLength  int64
	minFieldLen  int64
	fieldLenZipf zipfian

	readAllFields       bool
	readAllFieldsByName bool
	writeAllFields      bool

	proportions [NumOps]float64 // as given
	choice      []opWeight      // kinds with proportion > 0, YCSB order, weight/sum

	dist      keyDist
	distName  string
	keyZipf   zipfian // scrambled zipfian's base generator, or latest's zipfian
	zipfMin   int64   // scrambled zipfian: min
	zipfItems int64   // scrambled zipfian: item count (max-min+1)
	hotLow    int64
	hotIntvl  int64
	coldIntvl int64
	hotOpn    float64
	expGamma  float64

	ordered     bool
	zeroPadding int

	scanDist lenDist
	minScan  int64
	maxScan  int64
	scanZipf zipfian

	retryLimit    int
	retryInterval time.Duration

	seed int64

	txnOps int // row operations per transaction; 0 = no transactions

	entry Entry           // the registry entry it was built from
	prog  program.Program // a program workload's operations (TPC-C's transactions); nil for CoreWorkload

	loadNext atomic.Int64 // load sequence offset from insertStart
	seqNext  atomic.Int64 // sequential request distribution counter
	txInsert *ackCounter  // run-phase insert keys
}

type opWeight struct {
	kind OpKind
	pw   float64
}

// New builds a workload from p. It declares every key it knows (and the keys
// of IgnoredYCSBKeys) on p, so p.Unknown() afterwards lists only keys nobody
// knows. Invalid values are reported with the property name and where it was
// set. New does not modify any value in p.
//
// The workload property selects the workload among the built-in ones
// (Builtin().New); see Registry.New.
func New(p *properties.Properties) (*Workload, error) {
	return Builtin().New(p)
}

// newCore builds YCSB's CoreWorkload from p.
func newCore(p *properties.Properties) (*Workload, error) {
	w := &Workload{}
	var err error
	fail := func(e error) (*Workload, error) { return nil, e }

	w.table = p.String(keyTable, "usertable")
	if w.table == "" {
		return fail(p.Error(keyTable, "must not be empty"))
	}

	// Record and operation counts.
	if w.recordCount, err = p.Int(keyRecordCount, 0); err != nil {
		return fail(err)
	}
	if w.recordCount < 1 {
		return fail(p.Error(keyRecordCount, "must be at least 1 (the number of records the load phase inserts and the run phase draws keys from)"))
	}
	if w.operationCount, err = p.Int(keyOperationCount, 0); err != nil {
		return fail(err)
	}
	if w.operationCount < 0 {
		return fail(p.Error(keyOperationCount, "must not be negative (0 means no operation limit)"))
	}
	if w.insertStart, err = p.Int(keyInsertStart, 0); err != nil {
		return fail(err)
	}
	if w.insertStart < 0 || w.insertStart >= w.recordCount {
		return fail(p.Error(keyInsertStart, "must be at least 0 and below recordcount (%d)", w.recordCount))
	}
	if w.insertCount, err = p.Int(keyInsertCount, w.recordCount-w.insertStart); err != nil {
		return fail(err)
	}
	if w.insertCount < 1 {
		return fail(p.Error(keyInsertCount, "must be at least 1"))
	}
	if w.insertStart+w.insertCount > w.recordCount {
		return fail(p.Error(keyInsertCount, "insertstart (%d) + insertcount (%d) must not exceed recordcount (%d)",
			w.insertStart, w.insertCount, w.recordCount))
	}

	// Fields and values.
	fieldCount, err := p.Int(keyFieldCount, 10)
	if err != nil {
		return fail(err)
	}
	if fieldCount < 1 || fieldCount > 1<<20 {
		return fail(p.Error(keyFieldCount, "must be between 1 and %d", 1<<20))
	}
	prefix := p.String(keyFieldNamePrefix, "field")
	w.fields = make([]string, fieldCount)
	for i := range w.fields {
		w.fields[i] = prefix + strconv.Itoa(i)
	}
	if w.fieldLength, err = p.Int(keyFieldLength, 100); err != nil {
		return fail(err)
	}
	if w.minFieldLen, err = p.Int(keyMinFieldLength, 1); err != nil {
		return fail(err)
	}
	const maxFieldLength = 64 << 20
	if w.fieldLength < 0 || w.fieldLength > maxFieldLength {
		return fail(p.Error(keyFieldLength, "must be between 0 and %d bytes", maxFieldLength))
	}
	const maxRecordBytes = 256 << 20
	if fieldCount*w.fieldLength > maxRecordBytes {
		return fail(p.Error(keyFieldLength, "records of fieldcount (%d) * fieldlength (%d) bytes exceed %d MiB", fieldCount, w.fieldLength, maxRecordBytes>>20))
	}
	switch d := p.String(keyFieldLengthDist, "constant"); d {
	case "constant":
		w.fieldLenDist = lenConstant
	case "uniform", "zipfian":
		if w.minFieldLen < 0 || w.minFieldLen > w.fieldLength {
			return fail(p.Error(keyMinFieldLength, "must be between 0 and fieldlength (%d)", w.fieldLength))
		}
		w.fieldLenDist = lenUniform
		if d == "zipfian" {
			w.fieldLenDist = lenZipfian
			w.fieldLenZipf = newZipfian(w.minFieldLen, w.fieldLength, zipfianConstant)
		}
	case "histogram":
		return fail(p.Error(keyFieldLengthDist, "the histogram field length distribution is not supported by faultbench; use constant, uniform or zipfian"))
	default:
		return fail(p.Error(keyFieldLengthDist, "unknown field length distribution; use constant, uniform or zipfian"))
	}
	if w.readAllFields, err = p.Bool(keyReadAllFields, true); err != nil {
		return fail(err)
	}
	if w.readAllFieldsByName, err = p.Bool(keyReadAllFieldsByName, false); err != nil {
		return fail(err)
	}
	if w.writeAllFields, err = p.Bool(keyWriteAllFields, false); err != nil {
		return fail(err)
	}

	// Operation mix.
	propKeys := [numRowOps]string{keyReadProportion, keyUpdateProportion, keyInsertProportion,
		keyScanProportion, keyRMWProportion, keyDeleteProportion}
	propDefaults := [numRowOps]float64{0.95, 0.05, 0, 0, 0, 0}
	sum := 0.0
	for k := OpKind(0); k < numRowOps; k++ {
		v, err := p.Float(propKeys[k], propDefaults[k])
		if err != nil {
			return fail(err)
		}
		if v < 0 || v != v || v > 1e300 {
			return fail(p.Error(propKeys[k], "must be a non-negative number"))
		}
		w.proportions[k] = v
		sum += v
	}
	if sum == 0 {
		return fail(p.Error(keyReadProportion, "all operation proportions (readproportion, updateproportion, insertproportion, scanproportion, readmodifywriteproportion, deleteproportion) are 0; at least one must be positive"))
	}
	for k := OpKind(0); k < numRowOps; k++ {
		if w.proportions[k] > 0 {
			w.choice = append(w.choice, opWeight{kind: k, pw: w.proportions[k] / sum})
		}
	}

	if err := w.initTxn(p); err != nil {
		return fail(err)
	}

	// Key naming.
	switch o := p.String(keyInsertOrder, "hashed"); o {
	case "hashed":
		w.ordered = false
	case "ordered":
		w.ordered = true
	default:
		return fail(p.Error(keyInsertOrder, "must be hashed or ordered"))
	}
	zp, err := p.Int(keyZeroPadding, 1)
	if err != nil {
		return fail(err)
	}
	if zp < 0 || zp > 1024 {
		return fail(p.Error(keyZeroPadding, "must be between 0 and 1024"))
	}
	w.zeroPadding = int(zp)

	// Request distribution.
	w.distName = p.String(keyRequestDist, "uniform")
	if err := w.initKeyChooser(p); err != nil {
		return fail(err)
	}

	// Scan length.
	if w.minScan, err = p.Int(keyMinScanLength, 1); err != nil {
		return fail(err)
	}
	if w.maxScan, err = p.Int(keyMaxScanLength, 1000); err != nil {
		return fail(err)
	}
	if w.minScan < 0 {
		return fail(p.Error(keyMinScanLength, "must not be negative"))
	}
	if w.maxScan < w.minScan || w.maxScan > 1<<31-1 {
		return fail(p.Error(keyMaxScanLength, "must be at least minscanlength (%d) and at most %d", w.minScan, 1<<31-1))
	}
	switch d := p.String(keyScanLengthDist, "uniform"); d {
	case "uniform":
		w.scanDist = lenUniform
	case "zipfian":
		w.scanDist = lenZipfian
		w.scanZipf = newZipfian(w.minScan, w.maxScan, zipfianConstant)
	default:
		return fail(p.Error(keyScanLengthDist, "must be uniform or zipfian"))
	}

	// Insertion retries (the load phase's runner applies them).
	if err := w.initRetries(p); err != nil {
		return fail(err)
	}

	// Seed.
	if w.seed, err = p.Int(keySeed, time.Now().UnixNano()); err != nil {
		return fail(err)
	}

	if w.proportions[Insert] > 0 {
		w.txInsert = newAckCounter(w.recordCount)
	} else {
		// No run-phase inserts: the acknowledged limit stays recordcount-1
		// and needs no window.
		w.txInsert = newAckCounterNoWindow(w.recordCount)
	}
	return w, nil
}

func (w *Workload) initKeyChooser(p *properties.Properties) error {
	switch w.distName {
	case "uniform":
		w.dist = distUniform
	case "sequential":
		w.dist = distSequential
	case "zipfian":
		// YCSB sizes the scrambled zipfian's key space for the inserts the
		// run is expected to make (2 is YCSB's fudge factor) so that the
		// popular keys do not move as records are added; keys not inserted
		// yet are skipped when drawn.
		w.dist = distZipfian
		expectedNew := int64(float64(w.operationCount) * w.proportions[Insert] * 2.0)
		w.zipfMin = w.insertStart
		max := w.insertStart + w.insertCount + expectedNew
		w.zipfItems = max - w.zipfMin + 1
		w.keyZipf = newZipfianZeta(0, scrambledItemCount, zipfianConstant, scrambledZetan)
	case "latest":
		w.dist = distLatest
		// SkewedLatestGenerator(basis) builds ZipfianGenerator(basis.lastValue())
		// where the basis is the run-phase insert counter, whose last
		// acknowledged value starts at recordcount-1.
		w.keyZipf = newZipfian(0, w.recordCount-2, zipfianConstant)
	case "hotspot":
		w.dist = distHotspot
		hd, err := p.Float(keyHotspotDataFraction, 0.2)
		if err != nil {
			return err
		}
		if !(hd >= 0 && hd <= 1) {
			return p.Error(keyHotspotDataFraction, "must be between 0 and 1")
		}
		ho, err := p.Float(keyHotspotOpnFraction, 0.8)
		if err != nil {
			return err
		}
		if !(ho >= 0 && ho <= 1) {
			return p.Error(keyHotspotOpnFraction, "must be between 0 and 1")
		}
		interval := w.insertCount
		w.hotLow = w.insertStart
		w.hotIntvl = int64(float64(interval) * hd)
		w.coldIntvl = interval - w.hotIntvl
		w.hotOpn = ho
		if w.hotIntvl == 0 && ho > 0 {
			return p.Error(keyHotspotDataFraction, "the hot set is empty (%d records * %g < 1) but hotspotopnfraction is %g", interval, hd, ho)
		}
		if w.coldIntvl == 0 && ho < 1 {
			return p.Error(keyHotspotDataFraction, "the cold set is empty but hotspotopnfraction is %g (below 1)", ho)
		}
	case "exponential":
		w.dist = distExponential
		pct, err := p.Float(keyExponentialPercentile, 95)
		if err != nil {
			return err
		}
		if !(pct > 0 && pct < 100) {
			return p.Error(keyExponentialPercentile, "must be above 0 and below 100")
		}
		frac, err := p.Float(keyExponentialFrac, 0.8571428571)
		if err != nil {
			return err
		}
		if !(frac > 0) || frac > 1e300 {
			return p.Error(keyExponentialFrac, "must be above 0")
		}
		w.expGamma = -math.Log(1.0-pct/100.0) / (float64(w.recordCount) * frac)
	default:
		return p.Error(keyRequestDist, "unknown request distribution; use uniform, zipfian, latest, hotspot, sequential or exponential")
	}
	return nil
}

func (w *Workload) initRetries(p *properties.Properties) error {
	limitKey, intervalKey := keyRetryLimit, keyRetryInterval
	if p.Has(keyRetryLimitAlias) {
		if p.Has(keyRetryLimit) {
			return p.Error(keyRetryLimitAlias, "is an alias of %s, which is set too; set only one", keyRetryLimit)
		}
		limitKey = keyRetryLimitAlias
	}
	if p.Has(keyRetryIntervalAlias) {
		if p.Has(keyRetryInterval) {
			return p.Error(keyRetryIntervalAlias, "is an alias of %s, which is set too; set only one", keyRetryInterval)
		}
		intervalKey = keyRetryIntervalAlias
	}
	limit, err := p.Int(limitKey, 0)
	if err != nil {
		return err
	}
	if limit < 0 || limit > 1<<31-1 {
		return p.Error(limitKey, "must be between 0 and %d", 1<<31-1)
	}
	w.retryLimit = int(limit)
	if w.retryInterval, err = p.Duration(intervalKey, 3*time.Second, time.Second); err != nil {
		return err
	}
	if w.retryInterval < 0 {
		return p.Error(intervalKey, "must not be negative")
	}
	return nil
}

// Table returns the table name (property table, default usertable).
func (w *Workload) Table() string { return w.table }

// RecordCount returns the number of records (property recordcount).
func (w *Workload) RecordCount() int64 { return w.recordCount }

// OperationCount returns the number of run-phase operations in total
// (property operationcount); 0 means unbounded.
func (w *Workload) OperationCount() int64 { return w.operationCount }

// InsertStart returns the first record number this instance loads (property
// insertstart, default 0).
func (w *Workload) InsertStart() int64 { return w.insertStart }

// InsertCount returns the number of records this instance loads (property
// insertcount, default recordcount-insertstart).
func (w *Workload) InsertCount() int64 { return w.insertCount }

// Fields returns the field names (fieldnameprefix followed by 0..fieldcount-1).
// The slice is shared: do not modify it.
func (w *Workload) Fields() []string { return w.fields }

// Seed returns the seed of the run: property seed, or a value derived from
// the clock when it is not set. Record it to repeat the run.
func (w *Workload) Seed() int64 { return w.seed }

// RequestDistribution returns the request distribution's name (property
// requestdistribution).
func (w *Workload) RequestDistribution() string { return w.distName }

// Proportion returns the share of run-phase operations of kind k, normalised
// so that the shares of all kinds sum to 1.
func (w *Workload) Proportion(k OpKind) float64 {
	for _, c := range w.choice {
		if c.kind == k {
			return c.pw
		}
	}
	return 0
}

// InsertionRetryLimit returns how many times the load phase should retry a
// failed insert (property core_workload_insertion_retry_limit, alias
// insertionretrylimit; default 0).
func (w *Workload) InsertionRetryLimit() int { return w.retryLimit }

// InsertionRetryInterval returns the mean pause between insert retries
// (property core_workload_insertion_retry_interval, alias
// insertionretryinterval, in seconds or Go duration syntax; default 3s).
// YCSB sleeps a random time in [0.8, 1.2) times this interval.
func (w *Workload) InsertionRetryInterval() time.Duration { return w.retryInterval }

// KeyName returns the database key of record keynum exactly as YCSB's
// CoreWorkload.buildKeyName does: "user", then zeros up to zeropadding
// digits, then the decimal record number, hashed with YCSB's fnvhash64 unless
// insertorder=ordered.
func (w *Workload) KeyName(keynum int64) string {
	var buf [64]byte
	return string(w.appendKey(buf[:0], keynum))
}

func (w *Workload) appendKey(dst []byte, keynum int64) []byte {
	if !w.ordered {
		keynum = fnvhash64(keynum)
	}
	var tmp [24]byte
	digits := strconv.AppendInt(tmp[:0], keynum, 10)
	dst = append(dst, "user"...)
	for i := len(digits); i < w.zeroPadding; i++ {
		dst = append(dst, '0')
	}
	return append(dst, digits...)
}

// String describes the workload in one line, for logs.
func (w *Workload) String() string {
	return fmt.Sprintf("CoreWorkload{table=%s records=%d ops=%d dist=%s read=%g update=%g insert=%g scan=%g rmw=%g delete=%g}",
		w.table, w.recordCount, w.operationCount, w.distName,
		w.Proportion(Read), w.Proportion(Update), w.Proportion(Insert), w.Proportion(Scan),
		w.Proportion(ReadModifyWrite), w.Proportion(Delete))
}
