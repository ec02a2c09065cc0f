package kind

import (
	"fmt"
	"strconv"
	"strings"
)

// Limits of the slow-node kinds' parameters.
const (
	MaxCPUPercent = 1000    // cpu-throttle's percent: ten cores
	MinMemoryHigh = 4 << 20 // memory-pressure's limit: 4 MiB
)

const colResource RGB = 0x7f7f00

// ParseSize reads memory-pressure's limit: bytes, or a number with a unit
// K, M, G (powers of 1024; KiB, MiB, GiB and KB, MB, GB mean the same).
func ParseSize(s string) (int64, error) {
	v := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suf  []string
		mult int64
	}{{[]string{"GIB", "GB", "G"}, 1 << 30}, {[]string{"MIB", "MB", "M"}, 1 << 20}, {[]string{"KIB", "KB", "K"}, 1 << 10}, {[]string{"B"}, 1}} {
		found := false
		for _, suf := range u.suf {
			if t, ok := strings.CutSuffix(v, suf); ok {
				v, mult, found = strings.TrimSpace(t), u.mult, true
				break
			}
		}
		if found {
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > (1<<50)/mult {
		return 0, fmt.Errorf("limit %q: want a size such as 64MiB, 512M or 2G", s)
	}
	return n * mult, nil
}

// slowKinds make a node slow without stopping it, through a cgroup of its
// own (internal/cgroup); restore undoes them.
func slowKinds() []Kind {
	restore := []string{"restore"}
	return []Kind{
		{Name: "cpu-throttle", Family: Resource, Restores: restore, Color: colResource, Params: []Param{
			{Name: "percent", Type: Int, Doc: "the CPU the node's processes get together, in percent of one core (1..1000, default 10)",
				Validate: func(v any) error {
					if n := v.(int); n < 1 || n > MaxCPUPercent {
						return fmt.Errorf("percent %d: allowed 1..%d (of one core)", n, MaxCPUPercent)
					}
					return nil
				}},
		}},
		{Name: "memory-pressure", Family: Resource, Restores: restore, Color: colResource, Params: []Param{
			{Name: "limit", Type: String, Doc: "the memory the node's processes may use before the kernel reclaims from them (64MiB, 1G ...; default half of what they use at the injection)",
				Validate: func(v any) error {
					n, err := ParseSize(v.(string))
					if err == nil && n < MinMemoryHigh {
						err = fmt.Errorf("limit %q: at least 4MiB", v)
					}
					return err
				}},
		}},
		{Name: "stall", Family: Resource, Restores: restore, Color: colResource},
		{Name: "restore", Family: Resource, Color: colResource},
	}
}
