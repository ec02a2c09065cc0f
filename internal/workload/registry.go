package workload

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/appendset"
	"github.com/faultbench/faultbench/internal/workload/bank"
	"github.com/faultbench/faultbench/internal/workload/listappend"
	"github.com/faultbench/faultbench/internal/workload/program"
	"github.com/faultbench/faultbench/internal/workload/register"
	"github.com/faultbench/faultbench/internal/workload/rwregister"
	"github.com/faultbench/faultbench/internal/workload/tpcc"
)

// keyWorkload is YCSB's workload class property; its value selects the
// registered workload (Registry.New).
const keyWorkload = "workload"

// Entry is one registered workload: the value of the workload property
// that selects it and, for a program workload, its Kind.
type Entry struct {
	// Name selects the workload (workload=NAME) and names it in messages.
	Name string
	// Doc is one line: what the workload is.
	Doc string
	// Aliases are other values of the workload property that select it;
	// one with a leading * matches any value ending in the rest (YCSB's
	// "*.CoreWorkload" under any Java package).
	Aliases []string
	// Kind builds a program workload and carries its abilities (see
	// package program: checks through program.Checker). Nil is YCSB's
	// CoreWorkload, configured by the YCSB properties (docs/workloads.md);
	// the APM and transactional workload files are CoreWorkload files.
	Kind program.Kind
}

// Checks returns the checks the entry's workload owns (none for
// CoreWorkload, whose lost-writes check is the harness's own).
func (e Entry) Checks() []program.Check {
	if c, ok := e.Kind.(program.Checker); ok {
		return c.Checks()
	}
	return nil
}

// matches reports whether the workload property's value v selects e.
func (e Entry) matches(v string) bool {
	if v == e.Name {
		return true
	}
	for _, a := range e.Aliases {
		if suffix, ok := strings.CutPrefix(a, "*"); ok && strings.HasSuffix(v, suffix) || a == v {
			return true
		}
	}
	return false
}

// Registry holds the workloads a run may select. It is a value, built
// once (Builtin, NewRegistry) and passed to where workloads are built and
// scenarios validated.
type Registry struct {
	entries []Entry
	core    int // index of the CoreWorkload entry; -1 without one
}

// Entries returns the built-in workloads: YCSB's CoreWorkload (with the
// APM and transactional workload files, which configure it) and TPC-C.
// Adding a program workload is a package of its own plus one line here.
func Entries() []Entry {
	return []Entry{
		{Name: "core", Doc: "YCSB's CoreWorkload: row operations on keys drawn from a distribution (docs/workloads.md)",
			Aliases: []string{"*.CoreWorkload"}},
		{Name: "tpcc", Doc: "TPC-C: the five transactions of the standard mix on a warehouse database (docs/tpcc.md)",
			Kind: tpcc.Kind{}},
		{Name: "register", Doc: "reads and writes of unique values on a few contended keys, every operation recorded, with the check linearizable (docs/checks.md)",
			Kind: register.Kind{}},
		{Name: listappend.Name, Doc: "transactions of appends of unique values to lists and reads of whole lists on a few contended keys, every transaction recorded, for the check isolation (docs/checks.md)",
			Kind: listappend.Kind{}},
		{Name: "appendset", Doc: "appends of unique values to a few lists (Redis RPUSH), every operation recorded, with the check lost-appends over a final read of every list (docs/checks.md)",
			Kind: appendset.Kind{}},
		{Name: rwregister.Name, Doc: "transactions of reads and writes of unique values on a few contended registers, every transaction recorded, for the check isolation (docs/checks.md)",
			Kind: rwregister.Kind{}},
		{Name: bank.Name, Doc: "transfers between a few accounts that conserve the total, and reads of all accounts, every operation recorded, for the check bank (docs/checks.md)",
			Kind: bank.Kind{}},
	}
}

// NewRegistry returns a registry of es. A name, alias or check name given
// twice, an entry without a name, a check without a name or function, or
// two CoreWorkload entries (nil Kind) is an error: a programming error,
// caught by the registry test.
func NewRegistry(es ...Entry) (*Registry, error) {
	r := &Registry{core: -1}
	var errs []error
	names := map[string]string{}  // name or alias -> entry
	checks := map[string]string{} // check name -> entry
	for _, e := range es {
		if e.Name == "" || strings.HasPrefix(e.Name, "*") {
			errs = append(errs, fmt.Errorf("workload %q: a name is required and must not start with *", e.Name))
			continue
		}
		bad := false
		for _, n := range append([]string{e.Name}, e.Aliases...) {
			if other, dup := names[n]; dup {
				errs = append(errs, fmt.Errorf("workload %s: %q is already workload %s's", e.Name, n, other))
				bad = true
			}
		}
		for _, c := range e.Checks() {
			switch other, dup := checks[c.Name]; {
			case c.Name == "" || c.Run == nil && c.History == nil:
				errs = append(errs, fmt.Errorf("workload %s: check %q needs a name and a Run or History function", e.Name, c.Name))
				bad = true
			case dup:
				errs = append(errs, fmt.Errorf("workload %s: check %s is already workload %s's", e.Name, c.Name, other))
				bad = true
			}
		}
		if e.Kind == nil && r.core >= 0 {
			errs = append(errs, fmt.Errorf("workload %s: %s is already the CoreWorkload entry (nil Kind)", e.Name, r.entries[r.core].Name))
			bad = true
		}
		if bad {
			continue
		}
		for _, n := range append([]string{e.Name}, e.Aliases...) {
			names[n] = e.Name
		}
		for _, c := range e.Checks() {
			checks[c.Name] = e.Name
		}
		if e.Kind == nil {
			r.core = len(r.entries)
		}
		r.entries = append(r.entries, e)
	}
	return r, errors.Join(errs...)
}

// Builtin returns a registry of the built-in workloads (Entries).
func Builtin() *Registry {
	r, err := NewRegistry(Entries()...)
	if err != nil {
		panic("workload: " + err.Error()) // the registry test keeps this unreachable
	}
	return r
}

// Lookup returns the entry the workload property's value v selects; ""
// selects CoreWorkload.
func (r *Registry) Lookup(v string) (Entry, bool) {
	if v == "" && r.core >= 0 {
		return r.entries[r.core], true
	}
	for _, e := range r.entries {
		if e.matches(v) {
			return e, true
		}
	}
	return Entry{}, false
}

// Names lists the registered workloads' names, sorted.
func (r *Registry) Names() []string {
	out := make([]string, len(r.entries))
	for i, e := range r.entries {
		out[i] = e.Name
	}
	sort.Strings(out)
	return out
}

// CheckNames lists the names of every registered workload's checks, sorted.
func (r *Registry) CheckNames() []string {
	var out []string
	for _, e := range r.entries {
		for _, c := range e.Checks() {
			out = append(out, c.Name)
		}
	}
	sort.Strings(out)
	return out
}

// CheckOwner returns the entry whose workload owns the check name.
func (r *Registry) CheckOwner(name string) (Entry, bool) {
	for _, e := range r.entries {
		for _, c := range e.Checks() {
			if c.Name == name {
				return e, true
			}
		}
	}
	return Entry{}, false
}

// New builds the workload the workload property of p selects (declaring
// every key it knows, and the keys of IgnoredYCSBKeys, on p; see the
// package function New). A value no entry matches selects CoreWorkload,
// as YCSB files name Java classes faultbench does not have; the command
// line warns about it (experiment.CheckProperties).
func (r *Registry) New(p *properties.Properties) (*Workload, error) {
	p.Declare(Keys()...)
	p.Declare(IgnoredYCSBKeys()...)
	e, ok := r.Lookup(p.String(keyWorkload, ""))
	if !ok {
		if r.core < 0 {
			return nil, p.Error(keyWorkload, "unknown workload (registered: %s)", strings.Join(r.Names(), ", "))
		}
		e = r.entries[r.core]
	}
	if e.Kind != nil {
		return newProgram(e, p)
	}
	w, err := newCore(p)
	if err != nil {
		return nil, err
	}
	w.entry = e
	return w, nil
}
