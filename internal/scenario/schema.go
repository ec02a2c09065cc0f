package scenario

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The schema walk checks a scenario document's keys against the Go types
// before decoding, so that an unknown key is reported with its line, its
// path (load.thredas) and the allowed keys of its section, and a --set is
// checked against the same schema and blamed on the --set, not on a line.

var (
	durationType = reflect.TypeOf(Duration(0))
	rateType     = reflect.TypeOf(Rate{})
	windowType   = reflect.TypeOf(TimeWindow{})
	intRangeType = reflect.TypeOf(IntRange{})
	scheduleType = reflect.TypeOf(Schedule{})
	stepsType    = reflect.TypeOf([]Step(nil))
	failoverType = reflect.TypeOf(Failover{})
)

// isScalar reports whether t is written as one YAML scalar.
func isScalar(t reflect.Type) bool {
	if t == durationType || t == rateType || t == windowType || t == intRangeType {
		return true
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice:
		return false
	case reflect.Pointer:
		return isScalar(t.Elem())
	}
	return true
}

// fieldsOf returns the YAML keys of struct type t with their types, in
// declaration order.
func fieldsOf(t reflect.Type) ([]string, map[string]reflect.Type) {
	var keys []string
	m := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		keys = append(keys, name)
		m[name] = f.Type
	}
	return keys, m
}

// scheduleFields are the keys a schedule mapping may have: {steps,
// failover} or the failover shorthand's fields directly.
func scheduleFields() ([]string, map[string]reflect.Type) {
	keys, m := fieldsOf(failoverType)
	return append([]string{"steps", "failover"}, keys...), mergeTypes(m, map[string]reflect.Type{"steps": stepsType, "failover": failoverType})
}

func mergeTypes(a, b map[string]reflect.Type) map[string]reflect.Type {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// section names a path for messages: "the top level" or "load".
func section(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// sources maps field paths (load.threads, schedule[0].at,
// workload.properties.recordcount) to where they were written.
type sources map[string]string

// checkKeys walks node n of type t at path, reporting unknown keys with
// the file and line, and records the line of every key in src.
func checkKeys(n *yaml.Node, t reflect.Type, path, file string, src sources, errs *[]error) {
	if n == nil {
		return
	}
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			checkKeys(c, t, path, file, src, errs)
		}
		return
	}
	if n.Kind == yaml.AliasNode {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isScalar(t) {
		return
	}
	switch {
	case t == scheduleType:
		switch n.Kind {
		case yaml.SequenceNode:
			checkKeys(n, stepsType, path, file, src, errs)
		case yaml.MappingNode:
			keys, types := scheduleFields()
			checkMapping(n, keys, types, path, file, src, errs)
		}
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // the decoder says what is wrong with it
		}
		keys, types := fieldsOf(t)
		checkMapping(n, keys, types, path, file, src, errs)
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for j := 0; j+1 < len(n.Content); j += 2 {
			src[join(path, n.Content[j].Value)] = fmt.Sprintf("%s:%d", file, n.Content[j].Line)
		}
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			src[p] = fmt.Sprintf("%s:%d", file, c.Line)
			checkKeys(c, t.Elem(), p, file, src, errs)
		}
	}
}

func checkMapping(n *yaml.Node, keys []string, types map[string]reflect.Type, path, file string, src sources, errs *[]error) {
	for j := 0; j+1 < len(n.Content); j += 2 {
		k := n.Content[j]
		ft, ok := types[k.Value]
		if !ok {
			*errs = append(*errs, fmt.Errorf("%s:%d: field %s: unknown; allowed keys of %s: %s", file, k.Line, join(path, k.Value), section(path), strings.Join(keys, ", ")))
			continue
		}
		src[join(path, k.Value)] = fmt.Sprintf("%s:%d", file, k.Line)
		checkKeys(n.Content[j+1], ft, join(path, k.Value), file, src, errs)
	}
}

// checkSet checks a --set path against the schema and its value against
// the field's type. It returns the field path in the form Validate's
// errors use (schedule[0].at for schedule.0.at) and the path's keys with
// a map key that holds dots kept whole (target.driver.etcd.dial-timeout).
func checkSet(path []string, value string) (string, []string, error) {
	t := reflect.TypeOf(Scenario{})
	field := ""
	for i := 0; i < len(path); i++ {
		key := path[i]
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case isScalar(t):
			return "", nil, fmt.Errorf("%s is a single value, not a section", strings.Join(path[:i], "."))
		case t == scheduleType:
			if _, err := strconv.Atoi(key); err == nil {
				t = stepsType.Elem()
				field = fmt.Sprintf("%s[%s]", field, key)
				continue
			}
			keys, types := scheduleFields()
			ft, ok := types[key]
			if !ok {
				return "", nil, fmt.Errorf("schedule has no field %s (allowed: %s; a step is schedule.N.FIELD)", key, strings.Join(keys, ", "))
			}
			t, field = ft, join(field, key)
		case t.Kind() == reflect.Struct:
			keys, types := fieldsOf(t)
			ft, ok := types[key]
			if !ok {
				return "", nil, fmt.Errorf("%s has no field %s (allowed: %s)", section(field), key, strings.Join(keys, ", "))
			}
			t, field = ft, join(field, key)
		case t.Kind() == reflect.Map:
			// a map's keys are property names: the rest of the path is one key
			key = strings.Join(path[i:], ".")
			path = append(path[:i:i], key)
			t, field = t.Elem(), join(field, key)
		case t.Kind() == reflect.Slice:
			if _, err := strconv.Atoi(key); err != nil {
				return "", nil, fmt.Errorf("%q is not an index of the list %s", key, field)
			}
			t, field = t.Elem(), fmt.Sprintf("%s[%s]", field, key)
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice && isScalar(t.Elem()) {
		// a list of single values, written [a,b] or a,b
		items := ListItems(value)
		if len(items) == 0 {
			return "", nil, fmt.Errorf("%s is a list: write it as [a,b,c] (at least one value)", field)
		}
		for _, it := range items {
			v := reflect.New(t.Elem())
			if err := (&yaml.Node{Kind: yaml.ScalarNode, Value: it}).Decode(v.Interface()); err != nil {
				return "", nil, fmt.Errorf("%q in the list is not a valid %s", it, kindName(t.Elem()))
			}
		}
		return field, path, nil
	}
	if !isScalar(t) {
		return "", nil, fmt.Errorf("%s is a section; set one of its fields (%s.FIELD=value)", field, strings.Join(path, "."))
	}
	v := reflect.New(t)
	if err := (&yaml.Node{Kind: yaml.ScalarNode, Value: value}).Decode(v.Interface()); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if te, ok := err.(*yaml.TypeError); ok && len(te.Errors) > 0 {
			msg = fmt.Sprintf("%q is not a valid %s", value, kindName(t))
		}
		return "", nil, fmt.Errorf("%s", msg)
	}
	return field, path, nil
}

// kindName says what kind of value a field takes, for messages.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "integer"
	case reflect.Float64, reflect.Float32:
		return "number"
	case reflect.Bool:
		return "boolean (true or false)"
	}
	return t.Kind().String()
}

// explicitZero lists fields whose zero value means "the default" when left
// out, so that writing 0 is a mistake rather than a silent default.
var explicitZero = []struct {
	path, allowed string
}{
	{"target.nodes", "at least 1 (leave it out for the target's default)"},
	{"load.threads", "at least 1 (leave it out for 16)"},
	{"load.load_threads", "at least 1 (leave it out for load.threads)"},
	{"load.window", "10ms..1h (leave it out for 1s)"},
	{"load.op_timeout", "a positive duration (leave it out for 10s)"},
	{"load.calibration", "a positive duration (leave it out for 15s)"},
	{"load.duration", "a positive duration (leave it out to derive it from the schedule)"},
}

// checkExplicitZero reports the fields of explicitZero that the document
// sets to zero.
func (s *Scenario) checkExplicitZero(written sources) []error {
	var errs []error
	for _, z := range explicitZero {
		if _, ok := written[z.path]; !ok {
			continue
		}
		v := reflect.ValueOf(s).Elem()
		for _, k := range strings.Split(z.path, ".") {
			v = fieldByKey(v, k)
		}
		if v.IsValid() && v.IsZero() {
			errs = append(errs, &FieldError{Field: z.path, Msg: fmt.Sprintf("0: allowed %s", z.allowed)})
		}
	}
	return errs
}

// fieldByKey returns the field of struct value v whose YAML key is key.
func fieldByKey(v reflect.Value, key string) reflect.Value {
	if !v.IsValid() || v.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == key {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}

// FieldError is a Validate error about one field.
type FieldError struct {
	Field string // e.g. load.threads, schedule[0].node
	Msg   string
}

func (e *FieldError) Error() string { return "field " + e.Field + ": " + e.Msg }

// sourceOf returns where field (or its nearest written parent) was
// written: "file:line", "--set path=value", or "".
func (src sources) sourceOf(field string) string {
	for f := field; f != ""; {
		if s, ok := src[f]; ok {
			return s
		}
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return ""
}

// Source returns where a field of the scenario was written: "file:line",
// "--set path=value", or "" when it was not written (a default).
func (s *Scenario) Source(field string) string { return s.src.sourceOf(field) }

// ListItems splits a --set value for a list field, written [a,b,c] or
// a,b,c, into its trimmed items (none for an empty list).
func ListItems(value string) []string {
	v := strings.TrimSpace(value)
	v = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	var out []string
	for _, it := range strings.Split(v, ",") {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}
