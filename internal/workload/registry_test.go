package workload

import (
	"context"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// fakeKind is a program workload kind with the checks it is given.
type fakeKind struct{ checks []program.Check }

func (fakeKind) New(*properties.Properties, int64) (program.Program, error) { return nil, nil }

func (k fakeKind) Checks() []program.Check { return k.checks }

func okCheck(name string) program.Check {
	return program.Check{Name: name, Run: func(context.Context, program.Program, program.DB) (program.Verdict, error) {
		return program.Verdict{OK: true}, nil
	}}
}

// TestBuiltin checks the built-in registry: CoreWorkload and TPC-C, what
// selects each, and TPC-C's check.
func TestBuiltin(t *testing.T) {
	reg, err := NewRegistry(Entries()...)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(reg.Names(), " "); got != "appendset bank core list-append register rw-register tpcc" {
		t.Errorf("Names() = %q", got)
	}
	if got := strings.Join(reg.CheckNames(), " "); got != "lost-appends tpcc-consistency" {
		t.Errorf("CheckNames() = %q", got)
	}
	if e, ok := reg.CheckOwner("tpcc-consistency"); !ok || e.Name != "tpcc" {
		t.Errorf("CheckOwner(tpcc-consistency) = %v, %v", e.Name, ok)
	}
	if _, ok := reg.CheckOwner("lost-writes"); ok {
		t.Error("lost-writes is no workload's check")
	}
	for _, tc := range []struct {
		value, want string
		ok          bool
	}{
		{"", "core", true},
		{"core", "core", true},
		{"site.ycsb.workloads.CoreWorkload", "core", true},
		{"com.yahoo.ycsb.workloads.CoreWorkload", "core", true},
		{"tpcc", "tpcc", true},
		{"site.ycsb.workloads.RestWorkload", "", false},
		{"TPCC", "", false},
	} {
		t.Run(tc.value, func(t *testing.T) {
			e, ok := reg.Lookup(tc.value)
			if ok != tc.ok || e.Name != tc.want {
				t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tc.value, e.Name, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestRegistryNew checks that the workload property selects the workload
// and that a value no entry matches runs CoreWorkload.
func TestRegistryNew(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
		program          bool
	}{
		{"no workload property", "recordcount=10\n", "core", false},
		{"YCSB class", "workload=site.ycsb.workloads.CoreWorkload\nrecordcount=10\n", "core", false},
		{"unknown class", "workload=site.ycsb.workloads.RestWorkload\nrecordcount=10\n", "core", false},
		{"tpcc", "workload=tpcc\ntpcc.items=100\ntpcc.customers-per-district=30\n", "tpcc", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, p := newFromText(t, tc.name, tc.text)
			if w.Name() != tc.want || (w.Program() != nil) != tc.program {
				t.Errorf("workload %q (program %v), want %q (%v)", w.Name(), w.Program() != nil, tc.want, tc.program)
			}
			if u := p.Unknown(); len(u) > 0 {
				t.Errorf("unknown %v", u)
			}
		})
	}
	t.Run("no CoreWorkload entry", func(t *testing.T) {
		reg, err := NewRegistry(Entry{Name: "x", Kind: fakeKind{}})
		if err != nil {
			t.Fatal(err)
		}
		p := properties.New()
		p.Set("workload", "y")
		if _, err := reg.New(p); err == nil || !strings.Contains(err.Error(), "unknown workload (registered: x)") {
			t.Errorf("error %v", err)
		}
	})
}

// TestNewRegistryRefuses checks every programming error NewRegistry
// catches, and that a good extra entry is accepted.
func TestNewRegistryRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra Entry
		want  string // "" accepted
	}{
		{"a new workload", Entry{Name: "x", Kind: fakeKind{[]program.Check{okCheck("x-check")}}}, ""},
		{"no name", Entry{Kind: fakeKind{}}, "a name is required"},
		{"name like a pattern", Entry{Name: "*x", Kind: fakeKind{}}, "must not start with *"},
		{"name twice", Entry{Name: "tpcc", Kind: fakeKind{}}, `"tpcc" is already workload tpcc's`},
		{"alias of another", Entry{Name: "x", Aliases: []string{"core"}, Kind: fakeKind{}}, `"core" is already workload core's`},
		{"check twice", Entry{Name: "x", Kind: fakeKind{[]program.Check{okCheck("tpcc-consistency")}}}, "check tpcc-consistency is already workload tpcc's"},
		{"check without a name", Entry{Name: "x", Kind: fakeKind{[]program.Check{okCheck("")}}}, "needs a name and a Run or History function"},
		{"check without a function", Entry{Name: "x", Kind: fakeKind{[]program.Check{{Name: "c"}}}}, "needs a name and a Run or History function"},
		{"two CoreWorkloads", Entry{Name: "core2"}, "core is already the CoreWorkload entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := NewRegistry(append(Entries(), tc.extra)...)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := reg.Lookup(tc.extra.Name); !ok {
					t.Errorf("%s not registered", tc.extra.Name)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
