package elle

import (
	"fmt"
	"slices"
	"strings"
)

// The anomaly names (docs/checks.md defines each).
const (
	G0               = "G0"
	G1a              = "G1a"
	G1b              = "G1b"
	G1c              = "G1c"
	GSingle          = "G-single"
	G2Item           = "G2-item"
	LostUpdate       = "lost-update"
	Internal         = "internal"
	DuplicateElems   = "duplicate-elements"
	GarbageRead      = "garbage-read"
	IncompatibleOrds = "incompatible-order"
)

// realtime and process are the suffixes of a cycle that needs real-time
// or process order edges (G0-realtime, G-single-process, ...).
const (
	realtimeSuffix = "-realtime"
	processSuffix  = "-process"
)

// Model is a consistency model: a name and the anomalies it forbids.
type Model struct {
	Name string
	// Forbids lists the anomaly names the model rules out.
	Forbids []string
	// Realtime: the model forbids cycles through real-time and process
	// order too (the checker adds those edges only for such a model).
	Realtime bool
}

// always lists what no model allows: the history contradicts itself or
// the database returned what nobody wrote.
var always = []string{Internal, DuplicateElems, GarbageRead, IncompatibleOrds}

func withSuffixes(names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, n, n+realtimeSuffix, n+processSuffix)
	}
	return out
}

// Models are the consistency models a history is judged against, weakest
// first (Adya's PL-2, PL-2.99, PL-SI, PL-3 and strict serializability).
func Models() []Model {
	rc := append(slices.Clone(always), G0, G1a, G1b, G1c)
	rr := append(slices.Clone(rc), GSingle, G2Item, LostUpdate)
	si := append(slices.Clone(rc), GSingle, LostUpdate)
	ser := slices.Clone(rr)
	strict := append(slices.Clone(always), G1a, G1b, LostUpdate)
	strict = append(strict, withSuffixes([]string{G0, G1c, GSingle, G2Item})...)
	return []Model{
		{Name: "read-committed", Forbids: rc},
		{Name: "repeatable-read", Forbids: rr},
		{Name: "snapshot-isolation", Forbids: si},
		{Name: "serializable", Forbids: ser},
		{Name: "strict-serializable", Forbids: strict, Realtime: true},
	}
}

// ModelNamed returns the model called name.
func ModelNamed(name string) (Model, error) {
	var names []string
	for _, m := range Models() {
		if m.Name == name {
			return m, nil
		}
		names = append(names, m.Name)
	}
	return Model{}, fmt.Errorf("unknown consistency model %q (want one of %s)", name, strings.Join(names, ", "))
}
