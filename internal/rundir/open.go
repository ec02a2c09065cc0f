package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/properties"
)

// Run is an open run directory: created, env.json written, events.jsonl
// open. `faultbench load`/`run`, `scenario` and `upb` all open theirs with
// Open, so every run directory starts the same way.
type Run struct {
	Dir    string
	Events *event.Log
}

// Open creates the run directory base/<UTC time>-<name>, writes env (its
// Started set to now) as env.json and opens events.jsonl with now as the
// run's t=0 (a phase may move t=0 to its own start with SetStart).
func Open(base, name string, now time.Time, env Env) (*Run, error) {
	dir, err := Create(base, name, now)
	if err != nil {
		return nil, err
	}
	return openDir(dir, now, env)
}

// OpenAt is Open of the directory dir itself (a trial's trial-01 under its
// parent), which must not exist yet; its parent is created if missing.
func OpenAt(dir string, now time.Time, env Env) (*Run, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("runs directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating run directory: %w", err)
	}
	return openDir(dir, now, env)
}

func openDir(dir string, now time.Time, env Env) (*Run, error) {
	env.Started = now
	if err := WriteJSON(filepath.Join(dir, "env.json"), env); err != nil {
		return nil, err
	}
	evs, err := event.Create(filepath.Join(dir, "events.jsonl"), now)
	if err != nil {
		return nil, err
	}
	return &Run{Dir: dir, Events: evs}, nil
}

// Path returns the path of a file in the run directory.
func (r *Run) Path(name string) string { return filepath.Join(r.Dir, name) }

// Close closes the events log.
func (r *Run) Close() error { return r.Events.Close() }

// WriteProperties writes p as a Java properties file (run.properties) at path.
func WriteProperties(path string, p *properties.Properties) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing properties: %w", err)
	}
	if err := p.Write(f); err != nil {
		f.Close()
		return fmt.Errorf("writing properties: %w", err)
	}
	return f.Close()
}
