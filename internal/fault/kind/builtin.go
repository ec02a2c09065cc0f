package kind

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits of the built-in kinds' parameters.
const (
	MaxHold       = 10 * time.Minute // crash-client's hold
	MaxScaleCount = 8                // add-node's count
)

// Colours of the built-in kinds, one per family.
const (
	colProcess RGB = 0xd62728
	colPause   RGB = 0xff7f0e
	colNetwork RGB = 0x9467bd
	colScale   RGB = 0x17becf
	colClient  RGB = 0x8c564b
	colDisk    RGB = 0xbcbd22
)

// Builtin returns a fresh registry holding faultbench's own fault kinds
// (docs/faults.md), the ones internal/fault implements.
func Builtin() *Registry {
	r := NewRegistry()
	for _, k := range builtins() {
		if err := r.Add(k); err != nil {
			panic(err) // a declaration below is wrong; TestBuiltin catches it
		}
	}
	return r
}

func builtins() []Kind {
	streaming := Param{Name: "streaming", Type: String, Doc: "the streaming throttle: unthrottled, 5mbit, 40mbit ...; left out: the database's setting",
		Validate: func(v any) error { _, err := ParseStreaming(v.(string)); return err }}
	return append([]Kind{
		{Name: "kill", Family: Process, Restores: []string{"start"}, Color: colProcess},
		{Name: "stop", Family: Process, Restores: []string{"start"}, Color: colProcess},
		{Name: "start", Family: Process, Color: colProcess},
		{Name: "restart", Family: Process, Color: colProcess},
		{Name: "pause", Family: Pause, Restores: []string{"resume"}, Color: colPause},
		{Name: "resume", Family: Pause, Color: colPause},
		{Name: "partition", Family: Network, Restores: []string{"heal"}, Color: colNetwork},
		{Name: "loss", Family: Network, Restores: []string{"heal"}, Color: colNetwork},
		{Name: "bandwidth", Family: Network, Restores: []string{"heal"}, Color: colNetwork},
		{Name: "delay", Family: Network, Restores: []string{"heal"}, Color: colNetwork},
		{Name: "heal", Family: Network, Color: colNetwork},
		{Name: "crash-client", Family: Client, Color: colClient, Params: []Param{
			{Name: "hold", Type: Duration, Doc: "how long the client commits without flushing before it crashes (0..10m)",
				Validate: func(v any) error {
					if d := v.(time.Duration); d < 0 || d > MaxHold {
						return fmt.Errorf("hold %v: allowed 0..%v", d, MaxHold)
					}
					return nil
				}},
		}},
		{Name: "add-node", Family: Scale, Color: colScale, Params: []Param{
			{Name: "count", Type: Int, Doc: "how many nodes to add (1..8, default 1)",
				Validate: func(v any) error {
					if n := v.(int); n < 1 || n > MaxScaleCount {
						return fmt.Errorf("count %d: allowed 1..%d (leave it out for 1)", n, MaxScaleCount)
					}
					return nil
				}},
			streaming,
			{Name: "bootstrap", Type: Bool, Doc: "false: the new nodes take over their share without receiving its data"},
		}, Check: func(v Values) error {
			if b, set := v.Bool("bootstrap"); set && !b && v.String("streaming") != "" {
				return &ParamError{Param: "streaming", Kind: "add-node", Err: fmt.Errorf("streaming has no effect with bootstrap: false (nothing is streamed)")}
			}
			return nil
		}},
		{Name: "remove-node", Family: Scale, Color: colScale, Params: []Param{streaming}},
	}, slices.Concat(diskKinds(), grayNetKinds(), clockKinds(), slowKinds())...)
}

// Streaming throttles as ParseStreaming returns them (besides a rate).
const (
	StreamKeep        = -1 // leave the database's setting as it is
	StreamUnthrottled = 0  // no limit
)

// ParseStreaming reads the streaming throttle of add-node and remove-node
// as written in a scenario: "" (keep the database's setting, StreamKeep),
// "unthrottled" (or "off", "0", "none": StreamUnthrottled), or a rate in
// megabits per second: "5mbit", "40mbit", "5" ("mbit/s" and "mbps" are
// accepted too).
func ParseStreaming(s string) (int, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	switch v {
	case "":
		return StreamKeep, nil
	case "unthrottled", "off", "0", "none":
		return StreamUnthrottled, nil
	}
	for _, suf := range []string{"mbit/s", "mbps", "mbit"} {
		if t, ok := strings.CutSuffix(v, suf); ok {
			v = strings.TrimSpace(t)
			break
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 100_000 {
		return 0, fmt.Errorf("streaming %q: want unthrottled or a rate in Mbit/s such as 5mbit or 40mbit (at most 100000)", s)
	}
	return n, nil
}
