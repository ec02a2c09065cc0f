package rundir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Figure is one headline number of a program workload (TPC-C's tpmC) in
// summary.json's workload_figures, printed in the terminal summary as
// "[Group], Name, value".
type Figure struct {
	Group string  `json:"group"`
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// summaryJSON is Summary without its methods, for the default encoding.
type summaryJSON Summary

// MarshalJSON writes the summary with each of its Sections as a top-level
// key after the summary's own keys. A section named like one of those keys
// is an error.
func (s Summary) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(summaryJSON(s))
	if err != nil || len(s.Sections) == 0 {
		return b, err
	}
	own := summaryKeys()
	keys := make([]string, 0, len(s.Sections))
	for k := range s.Sections {
		if own[k] || k == "" {
			return nil, fmt.Errorf("summary.json: a workload's section may not be named %q", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out bytes.Buffer
	out.Write(b[:len(b)-1]) // without the closing brace
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		out.Write(kb)
		out.WriteByte(':')
		out.Write(s.Sections[k])
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// UnmarshalJSON reads a summary; top-level keys that are not the
// summary's own (a program workload's section, e.g. TPC-C's tpcc) are
// kept in Sections.
func (s *Summary) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*summaryJSON)(s)); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	own := summaryKeys()
	for k, v := range all {
		if own[k] {
			continue
		}
		if s.Sections == nil {
			s.Sections = map[string]json.RawMessage{}
		}
		s.Sections[k] = v
	}
	return nil
}

// summaryKeys returns the top-level keys of summary.json that Summary's
// fields hold.
func summaryKeys() map[string]bool {
	t := reflect.TypeOf(Summary{})
	keys := make(map[string]bool, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case name == "":
			name = f.Name
		}
		keys[name] = true
	}
	return keys
}
