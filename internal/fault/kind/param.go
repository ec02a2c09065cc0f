package kind

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Type is a parameter's value type.
type Type string

// The parameter types and the Go type of their values in Values.
const (
	Duration Type = "duration" // time.Duration; text: 1s, 500ms
	Int      Type = "int"      // int; text: 3
	String   Type = "string"   // string
	Bool     Type = "bool"     // bool; text: true, false
)

func (t Type) known() bool {
	switch t {
	case Duration, Int, String, Bool:
		return true
	}
	return false
}

func typeNames() []string {
	return []string{string(Duration), string(Int), string(String), string(Bool)}
}

// Param is one parameter of a fault kind.
type Param struct {
	Name string
	Type Type
	Doc  string // one line for docs and messages: "how long the client commits without flushing"
	// Validate, if set, checks a value of the parameter's type (a
	// time.Duration for Duration, an int for Int, a string for String, a
	// bool for Bool). Its message should name the parameter and the
	// allowed values: "hold 11m0s: allowed 0..10m0s".
	Validate func(v any) error
}

// parse converts v to the parameter's type: text is parsed, a value of the
// right Go type is taken as it is.
func (p Param) parse(v any) (any, error) {
	if s, ok := v.(string); ok && p.Type != String {
		s = strings.TrimSpace(s)
		switch p.Type {
		case Duration:
			d, err := time.ParseDuration(s)
			if err != nil {
				return nil, fmt.Errorf("%s %q: want a duration such as 500ms or 2s", p.Name, s)
			}
			return d, nil
		case Int:
			n, err := strconv.Atoi(s)
			if err != nil {
				return nil, fmt.Errorf("%s %q: want an integer", p.Name, s)
			}
			return n, nil
		case Bool:
			b, err := strconv.ParseBool(s)
			if err != nil {
				return nil, fmt.Errorf("%s %q: want true or false", p.Name, s)
			}
			return b, nil
		}
	}
	ok := false
	switch p.Type {
	case Duration:
		_, ok = v.(time.Duration)
	case Int:
		_, ok = v.(int)
	case String:
		_, ok = v.(string)
	case Bool:
		_, ok = v.(bool)
	}
	if !ok {
		return nil, fmt.Errorf("%s %v: want a %s", p.Name, v, p.Type)
	}
	return v, nil
}

// Values are a step's parameters by name, each of its parameter's Go type
// (see Type). A parameter left out is absent.
type Values map[string]any

// Duration is parameter name as a duration, 0 when absent.
func (v Values) Duration(name string) time.Duration { d, _ := v[name].(time.Duration); return d }

// Int is parameter name as an int, 0 when absent.
func (v Values) Int(name string) int { n, _ := v[name].(int); return n }

// String is parameter name as a string, "" when absent.
func (v Values) String(name string) string { s, _ := v[name].(string); return s }

// Bool is parameter name as a bool and whether it was given.
func (v Values) Bool(name string) (value, set bool) {
	b, ok := v[name].(bool)
	return b, ok
}

// ParamError is a problem with one parameter of a step of kind Kind.
// With Err nil the parameter is not one of the kind's: Takers are the kinds
// that take it.
type ParamError struct {
	Param  string
	Kind   string
	Takers []string // with Err nil: the kinds that take Param (maybe none)
	Err    error    // what is wrong with the value
}

func (e *ParamError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	if len(e.Takers) == 0 {
		return fmt.Sprintf("%s is not a parameter of %s", e.Param, e.Kind)
	}
	return fmt.Sprintf("%s is a parameter of %s only, not of %s", e.Param, Enumerate(e.Takers), e.Kind)
}

func (e *ParamError) Unwrap() error { return e.Err }

// Enumerate joins names for a message: "a", "a and b", "a, b and c".
func Enumerate(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// CheckParams checks raw, the parameters a step of kind action sets
// (text, or values of the parameters' Go types), against the kind's
// declaration: every one declared, of its type, passing its Validate, then
// the kind's Check on them together. It returns the parsed values and one
// *ParamError per problem, sorted by parameter. An action no kind has is
// not checked here (nil, nil): the schedule's validation reports it.
func (r *Registry) CheckParams(action string, raw map[string]any) (Values, []*ParamError) {
	k, ok := r.Lookup(action)
	if !ok {
		return nil, nil
	}
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names)
	vals := Values{}
	var errs []*ParamError
	for _, n := range names {
		p, ok := k.Param(n)
		if !ok {
			errs = append(errs, &ParamError{Param: n, Kind: action, Takers: r.Takers(n)})
			continue
		}
		v, err := p.parse(raw[n])
		if err == nil && p.Validate != nil {
			err = p.Validate(v)
		}
		if err != nil {
			errs = append(errs, &ParamError{Param: n, Kind: action, Err: err})
			continue
		}
		vals[n] = v
	}
	if len(errs) == 0 && k.Check != nil {
		if err := k.Check(vals); err != nil {
			var pe *ParamError
			if !errors.As(err, &pe) {
				pe = &ParamError{Kind: action, Err: err}
			}
			errs = append(errs, pe)
		}
	}
	return vals, errs
}
