package experiment_test

import (
	"context"
	"sort"
	"sync"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/targets"
)

// memStore is the in-process database of the mem target: one map shared by
// every driver of a test's target (the load phase, the measured run and
// the checks each build their own driver).
type memStore struct {
	mu   sync.Mutex
	rows map[string]map[string][]byte
}

// memDriver is a driver of a memStore.
type memDriver struct{ s *memStore }

func (d memDriver) Read(_ context.Context, table, key string, _ []string) (map[string][]byte, error) {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	r, ok := d.s.rows[table+"/"+key]
	if !ok {
		return nil, outcome.Classified(outcome.Other, "read", outcome.ErrNotFound)
	}
	out := make(map[string][]byte, len(r))
	for f, v := range r {
		out[f] = append([]byte(nil), v...)
	}
	return out, nil
}

func (d memDriver) Scan(_ context.Context, table, start string, n int, _ []string) ([]map[string][]byte, error) {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	var keys []string
	for k := range d.s.rows {
		if k >= table+"/"+start && k < table+"0" { // '0' follows '/'
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []map[string][]byte
	for i := 0; i < len(keys) && i < n; i++ {
		out = append(out, d.s.rows[keys[i]])
	}
	return out, nil
}

func (d memDriver) Update(_ context.Context, table, key string, v map[string][]byte) error {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	r := d.s.rows[table+"/"+key]
	if r == nil {
		r = map[string][]byte{}
		d.s.rows[table+"/"+key] = r
	}
	for f, b := range v {
		r[f] = append([]byte(nil), b...)
	}
	return nil
}

func (d memDriver) Insert(ctx context.Context, table, key string, v map[string][]byte) error {
	return d.Update(ctx, table, key, v)
}

func (d memDriver) Delete(_ context.Context, table, key string) error {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	delete(d.s.rows, table+"/"+key)
	return nil
}

func (memDriver) Close() error { return nil }

// newMemTarget returns a target whose drivers share one in-process store;
// a scenario reaches it through target.endpoints.
func newMemTarget() *targets.Target {
	s := &memStore{rows: map[string]map[string][]byte{}}
	return &targets.Target{
		Kind: "mem", Help: "an in-process map (tests only)", Docs: "docs/targets.md",
		NewDriver: func(_ context.Context, p *properties.Properties) (driver.Driver, error) {
			if p.String("mem.addr", "") == "" {
				return nil, p.Error("mem.addr", "required")
			}
			return memDriver{s}, nil
		},
		EndpointKey: "mem.addr", PropertyPrefix: "mem.", DefaultVictim: "random",
		Size: targets.Sizing{Nodes: 1, NodesAre: "maps", FaultTolerance: func(int, int) int { return 0 },
			ForK: func(k, _ int) (int, int, error) { return k + 1, 0, nil }},
	}
}
