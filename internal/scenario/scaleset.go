package scenario

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/faultbench/faultbench/internal/fault"
)

// scaleKeys are the fields of the --set scale.FIELD shortcut and the
// actions whose steps each applies to.
var scaleKeys = []struct {
	key     string
	actions []fault.Action
}{
	{"streaming", []fault.Action{fault.ActionAddNode, fault.ActionRemoveNode}},
	{"bootstrap", []fault.Action{fault.ActionAddNode}},
	{"count", []fault.Action{fault.ActionAddNode}},
}

// scaleSets expands the --set shortcut scale.FIELD=value (FIELD one of
// streaming, bootstrap, count) into the --set paths of every scaling step
// of the scenario's schedule that takes FIELD: streaming to add-node and
// remove-node steps, bootstrap and count to add-node steps. bootstrap=false
// also clears those steps' streaming (nothing streams without bootstrap, and
// a throttle with it is refused). It fails when the schedule has no such step.
func scaleSets(doc *yaml.Node, field, value string) ([]string, error) {
	var actions []fault.Action
	var names []string
	for _, k := range scaleKeys {
		names = append(names, k.key)
		if k.key == field {
			actions = k.actions
		}
	}
	if actions == nil {
		return nil, fmt.Errorf("scale has no field %s (allowed: %s; they set the scenario's scaling steps)", field, strings.Join(names, ", "))
	}
	prefix, steps := scheduleSteps(doc)
	var out []string
	for i, st := range steps {
		if st.Kind != yaml.MappingNode || !takes(actions, stepFault(st)) {
			continue
		}
		p := prefix + strconv.Itoa(i) + "."
		out = append(out, p+field+"="+value)
		if field == "bootstrap" && value == "false" {
			out = append(out, p+"streaming=")
		}
	}
	if len(out) == 0 {
		var an []string
		for _, a := range actions {
			an = append(an, string(a))
		}
		return nil, errors.New("the scenario's schedule has no " + strings.Join(an, " or ") + " step to set " + field + " on")
	}
	return out, nil
}

// scheduleSteps returns the step nodes of a scenario document's schedule
// (a list of steps, or a mapping with steps:) and the --set path prefix
// that indexes them; none when the schedule has no steps.
func scheduleSteps(doc *yaml.Node) (string, []*yaml.Node) {
	sched := mapValue(doc, "schedule")
	switch {
	case sched == nil:
		return "", nil
	case sched.Kind == yaml.SequenceNode:
		return "schedule.", sched.Content
	case sched.Kind == yaml.MappingNode:
		if steps := mapValue(sched, "steps"); steps != nil && steps.Kind == yaml.SequenceNode {
			return "schedule.steps.", steps.Content
		}
	}
	return "", nil
}

// mapValue returns the value of key in mapping n, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for j := 0; j+1 < len(n.Content); j += 2 {
		if n.Content[j].Value == key {
			return n.Content[j+1]
		}
	}
	return nil
}

// stepFault returns a step node's fault action ("" when it has none).
func stepFault(st *yaml.Node) fault.Action {
	if v := mapValue(st, "fault"); v != nil {
		return fault.Action(v.Value)
	}
	return ""
}

// takes reports whether a is one of actions.
func takes(actions []fault.Action, a fault.Action) bool {
	for _, x := range actions {
		if x == a {
			return true
		}
	}
	return false
}
