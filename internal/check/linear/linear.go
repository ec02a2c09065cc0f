// Package linear is the linearizable checker: each key of a register
// history (reads, writes and compare-and-sets of single keys) must be
// linearizable as a register, checked with porcupine
// (github.com/anishathalye/porcupine, docs/papers.md) key by key, with a
// time limit per key: a key not decided within it is counted as
// undecided (the verdict is then unknown, never a silent pass). For a key
// that is not linearizable, porcupine's visualisation (an HTML page) is
// written next to the verdict.
package linear

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
)

// Name is the checker's name in scenarios and `faultbench check`.
const Name = "linearizable"

// Anomaly is the name of a key that is not linearizable.
const Anomaly = "nonlinearizable-key"

// Options configure a check.
type Options struct {
	// KeyTimeout is the time limit of one key's search (default 10 s).
	KeyTimeout time.Duration
	// Parallel is how many keys are checked at once (default: the CPUs).
	Parallel int
	// OutDir is where the visualisation of each failed key is written
	// (linearizable-<key>.html); empty: none is written.
	OutDir string
	// Visualise is how many failed keys are drawn (default 5).
	Visualise int
	// Examples is how many failed keys are explained (default 5).
	Examples int

	// checkKey replaces porcupine's search in tests.
	checkKey func(ops []porcupine.Operation, timeout time.Duration) porcupine.CheckResult
}

// Validate checks the options.
func (o Options) Validate() error {
	if o.KeyTimeout < 0 || o.Parallel < 0 || o.Visualise < 0 || o.Examples < 0 {
		return errors.New("linearizable: key timeout, parallel, visualise and examples must not be negative")
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.KeyTimeout == 0 {
		o.KeyTimeout = 10 * time.Second
	}
	if o.Parallel == 0 {
		o.Parallel = runtime.GOMAXPROCS(0)
	}
	if o.Visualise == 0 {
		o.Visualise = 5
	}
	if o.Examples == 0 {
		o.Examples = 5
	}
	if o.checkKey == nil {
		o.checkKey = func(ops []porcupine.Operation, timeout time.Duration) porcupine.CheckResult {
			return porcupine.CheckOperationsTimeout(model, ops, timeout)
		}
	}
	return o
}

// The register model's input, output and state.
type (
	input struct {
		f      history.Func
		v, new int64
	}
	output struct {
		has     bool // a read returned a value
		v       int64
		unknown bool // the operation's outcome is unknown
	}
	state struct {
		has bool
		v   int64
	}
)

func step(st, in, out any) (bool, any) {
	s, i, o := st.(state), in.(input), out.(output)
	switch i.f {
	case history.Read:
		return o.has == s.has && (!s.has || o.v == s.v), s
	case history.Write:
		return true, state{true, i.v}
	case history.CAS:
		match := s.has && s.v == i.v
		if o.unknown {
			if match {
				return true, state{true, i.new}
			}
			return true, s
		}
		if match {
			return true, state{true, i.new}
		}
		return false, s
	}
	return false, s
}

func describeOp(in, out any) string {
	i, o := in.(input), out.(output)
	switch i.f {
	case history.Read:
		if !o.has {
			return "read -> nil"
		}
		return fmt.Sprintf("read -> %d", o.v)
	case history.Write:
		if o.unknown {
			return fmt.Sprintf("write %d (unknown outcome)", i.v)
		}
		return fmt.Sprintf("write %d", i.v)
	case history.CAS:
		if o.unknown {
			return fmt.Sprintf("cas %d -> %d (unknown outcome)", i.v, i.new)
		}
		return fmt.Sprintf("cas %d -> %d", i.v, i.new)
	}
	return "?"
}

func describeState(st any) string {
	if s := st.(state); s.has {
		return fmt.Sprint(s.v)
	}
	return "nil"
}

// Model is the register (read, write, compare-and-set) of one key, the
// initial state having no value. An operation of unknown outcome is
// invoked but never returns: porcupine may place it anywhere after its
// invoke, including after everything else (it did not happen).
var model = porcupine.Model{
	Init:              func() any { return state{} },
	Step:              step,
	DescribeOperation: describeOp,
	DescribeState:     describeState,
}

// keyOps is one key's operations.
type keyOps struct {
	key string
	ops []porcupine.Operation
	idx []int // history positions of ops
}

type collector struct {
	byKey map[string]*keyOps
	n     int
}

func (c *collector) add(op *history.Op) error {
	pos := c.n
	c.n++
	if len(op.Mops) != 1 {
		return fmt.Errorf("operation %d has %d micro-operations: the linearizable checker takes single-key register operations (r, w, cas)", pos, len(op.Mops))
	}
	m := &op.Mops[0]
	if m.F != history.Read && m.F != history.Write && m.F != history.CAS || m.IsList {
		return fmt.Errorf("operation %d is %q on %q: the linearizable checker takes register reads, writes and compare-and-sets", pos, m.F, m.Key)
	}
	if op.Outcome == history.Fail || op.Outcome == history.Unknown && m.F == history.Read {
		return nil // took no effect, or changed nothing and told nothing
	}
	k := c.byKey[m.Key]
	if k == nil {
		k = &keyOps{key: m.Key}
		c.byKey[m.Key] = k
	}
	po := porcupine.Operation{ClientId: op.Process, Input: input{m.F, m.Value, m.New}, Call: op.Invoke, Return: op.Complete}
	out := output{has: m.HasValue, v: m.Value}
	if op.Outcome == history.Unknown {
		out.unknown = true
		po.Return = math.MaxInt64
	}
	po.Output = out
	k.ops = append(k.ops, po)
	k.idx = append(k.idx, pos)
	return nil
}

// Check reads the history file at path and checks it.
func Check(ctx context.Context, path string, opts Options) (verdict.Verdict, error) {
	start := time.Now()
	c := &collector{byKey: map[string]*keyOps{}}
	torn, err := history.Each(ctx, path, c.add)
	if err != nil {
		return verdict.Verdict{}, fmt.Errorf("linearizable check: %w", err)
	}
	v, err := check(ctx, c, opts)
	if torn {
		v.Notes = append(v.Notes, "the history's torn last line was skipped")
	}
	v.ElapsedMs = float64(time.Since(start).Microseconds()) / 1000
	return v, err
}

// CheckOps checks a history held in memory.
func CheckOps(ctx context.Context, ops []history.Op, opts Options) (verdict.Verdict, error) {
	start := time.Now()
	c := &collector{byKey: map[string]*keyOps{}}
	for i := range ops {
		if err := ops[i].Validate(); err != nil {
			return verdict.Verdict{}, fmt.Errorf("operation %d: %w", i, err)
		}
		if err := c.add(&ops[i]); err != nil {
			return verdict.Verdict{}, err
		}
	}
	v, err := check(ctx, c, opts)
	v.ElapsedMs = float64(time.Since(start).Microseconds()) / 1000
	return v, err
}

type keyResult struct {
	k   *keyOps
	res porcupine.CheckResult
}

func check(ctx context.Context, c *collector, opts Options) (verdict.Verdict, error) {
	if err := opts.Validate(); err != nil {
		return verdict.Verdict{}, err
	}
	opts = opts.withDefaults()
	v := verdict.Verdict{Checker: Name, Model: "register", Operations: c.n, AnomalyCounts: map[string]int{Anomaly: 0}}
	keys := make([]*keyOps, 0, len(c.byKey))
	for _, k := range c.byKey {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].key < keys[j].key })

	results := make([]keyResult, len(keys))
	var wg sync.WaitGroup
	work := make(chan int)
	for range min(opts.Parallel, max(len(keys), 1)) {
		wg.Go(func() {
			for i := range work {
				res := opts.checkKey(keys[i].ops, opts.KeyTimeout)
				results[i] = keyResult{keys[i], res}
			}
		})
	}
feed:
	for i := range keys {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return v, err
	}
	drawn := 0
	for _, r := range results {
		switch r.res {
		case porcupine.Unknown:
			v.Undecided++
			if v.Undecided <= opts.Examples {
				v.Notes = append(v.Notes, fmt.Sprintf("key %q (%d operations) was not decided within %s", r.k.key, len(r.k.ops), opts.KeyTimeout))
			}
		case porcupine.Illegal:
			an := explain(r.k, opts.KeyTimeout)
			if opts.OutDir != "" && drawn < opts.Visualise {
				path, err := visualise(r.k, opts)
				if err != nil {
					return v, err
				}
				v.Files = append(v.Files, path)
				an.Explanation += "\n  drawn in " + path
				drawn++
			}
			v.Add(an, opts.Examples)
		}
	}
	v.Judge()
	return v, nil
}

// explain says which operation of a non-linearizable key cannot be placed:
// the first (by invoke) outside the longest order porcupine could build.
func explain(k *keyOps, timeout time.Duration) verdict.Anomaly {
	_, info := porcupine.CheckOperationsVerbose(model, k.ops, timeout)
	var longest []int
	for _, part := range info.PartialLinearizations() {
		for _, l := range part {
			if len(l) > len(longest) {
				longest = l
			}
		}
	}
	in := make([]bool, len(k.ops))
	for _, i := range longest {
		in[i] = true
	}
	bad := -1
	for i := range k.ops {
		if !in[i] && (bad < 0 || k.ops[i].Call < k.ops[bad].Call) {
			bad = i
		}
	}
	an := verdict.Anomaly{Name: Anomaly}
	text := fmt.Sprintf("%s: key %q: no order of its %d operations is one of a register.", Anomaly, k.key, len(k.ops))
	if len(longest) > 0 {
		st := model.Init()
		for _, i := range longest {
			_, st = model.Step(st, k.ops[i].Input, k.ops[i].Output)
		}
		last := k.ops[longest[len(longest)-1]]
		text += fmt.Sprintf(" The longest order that holds places %d of them, ending with %s (invoked %.6f s) with the register at %s;",
			len(longest), describeOp(last.Input, last.Output), float64(last.Call)/1e9, describeState(st))
	}
	if bad >= 0 {
		o := k.ops[bad]
		ret := "never (unknown outcome)"
		if o.Return != math.MaxInt64 {
			ret = fmt.Sprintf("%.6f s", float64(o.Return)/1e9)
		}
		text += fmt.Sprintf(" operation %d of the history, process %d: %s, invoked %.6f s, completed %s, cannot be placed after it.",
			k.idx[bad], o.ClientId, describeOp(o.Input, o.Output), float64(o.Call)/1e9, ret)
		an.Ops = []int{k.idx[bad]}
		an.TimeNs = o.Call
		if o.Return != math.MaxInt64 {
			an.TimeNs = o.Return
		}
	}
	an.Explanation = text
	return an
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// visualise writes porcupine's drawing of a key's history.
func visualise(k *keyOps, opts Options) (string, error) {
	_, info := porcupine.CheckOperationsVerbose(model, k.ops, opts.KeyTimeout)
	name := unsafeName.ReplaceAllString(k.key, "_")
	if len(name) > 60 {
		name = name[:60]
	}
	path := filepath.Join(opts.OutDir, "linearizable-"+name+".html")
	for i := 2; ; i++ {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			break
		}
		path = filepath.Join(opts.OutDir, fmt.Sprintf("linearizable-%s-%d.html", name, i))
	}
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		return "", fmt.Errorf("drawing key %q: %w", k.key, err)
	}
	return path, nil
}
