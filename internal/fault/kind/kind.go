// Package kind describes fault kinds: what each is called, the family it
// belongs to, which restore actions undo it, how a report labels and
// colours it, and the parameters it takes with their types and checks.
//
// It is the one place that knows fault kinds by name. The fault package
// implements them (internal/fault: one Fault per kind, registered together
// with its Kind); analysis pairs injections with restores and the report
// colours faults from a Registry of Kinds, so neither needs to import what
// breaks clusters. This package imports the standard library only
// (internal/targets/layers_test.go enforces it).
//
// A Registry is a value: Builtin returns a fresh one holding faultbench's
// own kinds, and a caller (a test) may Add more.
package kind

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Family groups fault kinds by what they break. Events carry it next to the
// action (event.Event.Family), so a reader can tell a network fault from a
// process fault without knowing every action.
type Family string

// The families of fault kinds.
const (
	Process  Family = "process"  // a node's process dies or starts: kill, stop, start, restart
	Pause    Family = "pause"    // a node's process is frozen: pause, resume
	Network  Family = "network"  // packets between nodes: partition, loss, bandwidth, delay, heal
	Disk     Family = "disk"     // a node's storage
	Clock    Family = "clock"    // a node's clock
	Resource Family = "resource" // CPU, memory, file descriptors of a node
	Scale    Family = "scale"    // the cluster's membership: add-node, remove-node
	Client   Family = "client"   // the load's client instead of a node: crash-client
)

// RGB is a colour as 0xRRGGBB.
type RGB uint32

// Hex renders the colour as CSS writes it: "#d62728".
func (c RGB) Hex() string { return fmt.Sprintf("#%06x", uint32(c)&0xffffff) }

// Grey is the colour of a fault whose kind is not known.
const Grey RGB = 0x7f7f7f

// Kind is one fault kind.
type Kind struct {
	// Name is the action as written in a schedule and on the command line
	// (kill, partition, add-node ...): a lower-case plain name.
	Name string
	// Family is what the kind breaks (or repairs).
	Family Family
	// Restores are the actions whose fault-restore undoes a fault of this
	// kind (kill: start; pause: resume; partition: heal). Empty: nothing in
	// a schedule undoes it (restart, add-node), or the kind is itself a
	// restore (start, resume, heal).
	Restores []string
	// Label names the kind in a report's fault spans ("" means Name).
	Label string
	// Color is the colour of the kind's fault spans in a report.
	Color RGB
	// Params are the parameters a schedule step of this kind may set.
	Params []Param
	// Check, if set, checks the parameters together once each has passed
	// its own Validate (add-node: streaming has no effect without
	// bootstrap). Its error is blamed on the parameter it names; return a
	// *ParamError to say which.
	Check func(Values) error
}

// DisplayLabel is the kind's label in a report: Label, else Name.
func (k Kind) DisplayLabel() string {
	if k.Label != "" {
		return k.Label
	}
	return k.Name
}

// Param returns the kind's parameter name.
func (k Kind) Param(name string) (Param, bool) {
	for _, p := range k.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// Undoes reports whether a fault-restore by action restore undoes a fault
// of this kind.
func (k Kind) Undoes(restore string) bool { return slices.Contains(k.Restores, restore) }

var plainName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// Validate checks the kind's declaration: a plain name, a family, distinct
// parameters of known types, each with a plain name.
func (k Kind) Validate() error {
	var errs []error
	if !plainName.MatchString(k.Name) {
		errs = append(errs, fmt.Errorf("fault kind name %q: want a lower-case plain name (letters, digits, '-')", k.Name))
	}
	if k.Family == "" {
		errs = append(errs, fmt.Errorf("fault kind %q: no family", k.Name))
	}
	seen := map[string]bool{}
	for _, p := range k.Params {
		if !plainName.MatchString(p.Name) {
			errs = append(errs, fmt.Errorf("fault kind %q: parameter name %q: want a lower-case plain name", k.Name, p.Name))
		}
		if seen[p.Name] {
			errs = append(errs, fmt.Errorf("fault kind %q: parameter %q declared twice", k.Name, p.Name))
		}
		seen[p.Name] = true
		if !p.Type.known() {
			errs = append(errs, fmt.Errorf("fault kind %q: parameter %q has unknown type %q (known: %s)", k.Name, p.Name, p.Type, strings.Join(typeNames(), ", ")))
		}
	}
	return errors.Join(errs...)
}

// Description is a kind as a run directory records it (summary.json's
// fault_kinds): what analysis and a report need, without the parameters.
type Description struct {
	Name     string   `json:"name"`
	Family   Family   `json:"family"`
	Restores []string `json:"restores,omitempty"`
	Label    string   `json:"label,omitempty"`
	Color    string   `json:"color"` // "#rrggbb"
}

// Describe returns k's Description.
func (k Kind) Describe() Description {
	return Description{Name: k.Name, Family: k.Family, Restores: k.Restores, Label: k.Label, Color: k.Color.Hex()}
}

// Kind returns the kind d describes (without parameters).
func (d Description) Kind() (Kind, error) {
	var c uint32
	if _, err := fmt.Sscanf(d.Color, "#%06x", &c); err != nil || len(d.Color) != 7 {
		return Kind{}, fmt.Errorf("fault kind %q: colour %q: want #rrggbb", d.Name, d.Color)
	}
	k := Kind{Name: d.Name, Family: d.Family, Restores: d.Restores, Label: d.Label, Color: RGB(c)}
	return k, k.Validate()
}

// Registry holds fault kinds by name. It is not safe for concurrent
// changes; build it before use.
type Registry struct{ m map[string]Kind }

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{m: map[string]Kind{}} }

// Add adds k, or replaces the kind of the same name; a kind that does not
// validate is refused.
func (r *Registry) Add(k Kind) error {
	if err := k.Validate(); err != nil {
		return err
	}
	r.m[k.Name] = k
	return nil
}

// AddBare adds a kind known by its name only (no family, no parameters),
// unless one of that name exists: a fault a caller registered without a
// description pairs by label and node alone and is drawn grey.
func (r *Registry) AddBare(name string) {
	if _, ok := r.m[name]; !ok {
		r.m[name] = Kind{Name: name, Color: Grey}
	}
}

// AddDescriptions adds the kinds a run directory recorded (replacing kinds
// of the same names); the error lists those that do not validate.
func (r *Registry) AddDescriptions(ds []Description) error {
	var errs []error
	for _, d := range ds {
		k, err := d.Kind()
		if err == nil {
			err = r.Add(k)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Lookup returns the kind called name.
func (r *Registry) Lookup(name string) (Kind, bool) {
	if r == nil {
		return Kind{}, false
	}
	k, ok := r.m[name]
	return k, ok
}

// Names lists the kinds' names, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// FamilyOf is the family of action, "" when no kind has that name.
func (r *Registry) FamilyOf(action string) Family {
	k, _ := r.Lookup(action)
	return k.Family
}

// Color is the report colour of action: its kind's, Grey when unknown.
func (r *Registry) Color(action string) RGB {
	if k, ok := r.Lookup(action); ok {
		return k.Color
	}
	return Grey
}

// Label is the report label of action: its kind's, the action itself when
// unknown.
func (r *Registry) Label(action string) string {
	if k, ok := r.Lookup(action); ok {
		return k.DisplayLabel()
	}
	return action
}

// Takers lists the kinds that take parameter param, sorted.
func (r *Registry) Takers(param string) []string {
	var out []string
	for _, n := range r.Names() {
		if _, ok := r.m[n].Param(param); ok {
			out = append(out, n)
		}
	}
	return out
}

// Undoes reports whether a fault-restore by restore (family rf) undoes a
// fault injected by inject (family jf). When inject's kind is known and
// names its restores, they decide; otherwise two known families must be
// equal; with a family unknown, anything undoes anything (events of tools
// or versions this registry does not know pair by label and node alone).
// The families are the events' own (event.Event.Family); "" asks the
// registry.
func (r *Registry) Undoes(inject string, jf Family, restore string, rf Family) bool {
	if k, ok := r.Lookup(inject); ok && len(k.Restores) > 0 {
		return k.Undoes(restore)
	}
	if jf == "" {
		jf = r.FamilyOf(inject)
	}
	if rf == "" {
		rf = r.FamilyOf(restore)
	}
	return jf == "" || rf == "" || jf == rf
}
