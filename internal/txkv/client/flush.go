package client

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// Locator returns the current region map (from the coordinator).
type Locator interface {
	Locate(ctx context.Context) (wire.RegionMap, error)
}

// Router caches the region map and the connections to region servers, and
// flushes write-sets to the regions' servers. The client library and the
// coordinator's recovery client share it. Safe for concurrent use.
type Router struct {
	loc  Locator
	pool wire.Pool

	mu      sync.Mutex
	m       wire.RegionMap
	fetched time.Time
	refresh chan struct{} // non-nil while a refresh runs
}

// NewRouter returns a router using loc, starting from map m.
func NewRouter(loc Locator, m wire.RegionMap) *Router {
	return &Router{loc: loc, m: m}
}

// Close closes the server connections.
func (r *Router) Close() { r.pool.Close() }

// Map returns the cached region map.
func (r *Router) Map() wire.RegionMap {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m
}

// Refresh fetches the region map unless a newer one than seen arrived
// meanwhile; concurrent callers share one fetch.
func (r *Router) Refresh(ctx context.Context, seen uint64) error {
	r.mu.Lock()
	if r.m.Version > seen {
		r.mu.Unlock()
		return nil
	}
	if ch := r.refresh; ch != nil {
		r.mu.Unlock()
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ch := make(chan struct{})
	r.refresh = ch
	r.mu.Unlock()
	m, err := r.loc.Locate(ctx)
	r.mu.Lock()
	if err == nil && m.Version >= r.m.Version {
		r.m = m
		r.fetched = time.Now()
	}
	r.refresh = nil
	close(ch)
	r.mu.Unlock()
	return err
}

// route returns the region holding key in the cached map.
func (r *Router) route(key string) (wire.RegionInfo, uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := r.m.Find(key)
	if i < 0 {
		return wire.RegionInfo{}, r.m.Version, false
	}
	return r.m.Regions[i], r.m.Version, true
}

// Conn returns the connection to a server address.
func (r *Router) Conn(addr string) *wire.Conn { return r.pool.Get(addr) }

// backoff returns the pause before retry attempt n.
func backoff(n int) time.Duration {
	d := 2 * time.Millisecond << min(n, 7) // 2ms .. 256ms
	return min(d, 250*time.Millisecond)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// FlushOptions mark a flush by the recovery client.
type FlushOptions struct {
	// Replay sends the writes as replayed by the recovery client with the
	// original commit timestamp; InheritTP is T_P of the failed server
	// (server recovery only).
	Replay    bool
	InheritTP uint64
	// Only restricts the flush to one region and one server (server
	// recovery: the region is opening there and not online yet).
	Only *wire.RegionInfo
}

// Flush applies the write-set committed at ts to every region it touches,
// retrying each part until its server has applied it (the paper's choice:
// no retry limit) or ctx ends. Parts go to their servers concurrently.
func (r *Router) Flush(ctx context.Context, ts uint64, writes []wire.Write, o FlushOptions) error {
	if len(writes) == 0 {
		return nil
	}
	if o.Only != nil {
		return r.flushTo(ctx, *o.Only, ts, []wire.Part{{Region: o.Only.ID, Writes: writes}}, o)
	}
	pending := writes
	for attempt := 0; ; attempt++ {
		// group by server as the cached map says
		type batch struct {
			addr  string
			parts []wire.Part
		}
		byAddr := map[string]*batch{}
		var unrouted []wire.Write
		var version uint64
		regionIdx := map[wire.RegionID]int{}
		for _, w := range pending {
			ri, v, ok := r.route(w.Key)
			version = v
			if !ok || ri.Addr == "" || !ri.Online {
				unrouted = append(unrouted, w)
				continue
			}
			b := byAddr[ri.Addr]
			if b == nil {
				b = &batch{addr: ri.Addr}
				byAddr[ri.Addr] = b
			}
			k, ok := regionIdx[ri.ID]
			if !ok || k >= len(b.parts) || b.parts[k].Region != ri.ID {
				b.parts = append(b.parts, wire.Part{Region: ri.ID})
				k = len(b.parts) - 1
				regionIdx[ri.ID] = k
			}
			b.parts[k].Writes = append(b.parts[k].Writes, w)
		}
		var mu sync.Mutex
		var failed []wire.Write
		var lastErr error
		var wg sync.WaitGroup
		for _, b := range byAddr {
			wg.Go(func() {
				args := &wire.ApplyArgs{CommitTS: ts, Parts: b.parts, Replay: o.Replay, InheritTP: o.InheritTP}
				var rep wire.ApplyReply
				err := r.pool.Get(b.addr).Call(ctx, "Server.Apply", args, &rep)
				if err == nil {
					err = rep.Err()
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					lastErr = err
					for _, p := range b.parts {
						failed = append(failed, p.Writes...)
					}
					return
				}
				for i, p := range b.parts {
					if i >= len(rep.Codes) || rep.Codes[i] != wire.OK {
						failed = append(failed, p.Writes...)
						if i < len(rep.Codes) {
							lastErr = fmt.Errorf("region %d on %s: %v", p.Region, b.addr, rep.Codes[i])
						}
					}
				}
			})
		}
		wg.Wait()
		pending = append(failed, unrouted...)
		if len(pending) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			if lastErr == nil {
				lastErr = errors.New("regions not online")
			}
			return fmt.Errorf("flush of %d at ts %d not complete (%d writes left): %w (last: %v)", len(writes), ts, len(pending), err, lastErr)
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			continue
		}
		_ = r.Refresh(ctx, version)
	}
}

// flushTo sends parts to one server until it applied them.
func (r *Router) flushTo(ctx context.Context, ri wire.RegionInfo, ts uint64, parts []wire.Part, o FlushOptions) error {
	args := &wire.ApplyArgs{CommitTS: ts, Parts: parts, Replay: o.Replay, InheritTP: o.InheritTP}
	for attempt := 0; ; attempt++ {
		var rep wire.ApplyReply
		err := r.pool.Get(ri.Addr).Call(ctx, "Server.Apply", args, &rep)
		if err == nil {
			err = rep.Err()
		}
		if err == nil {
			for _, c := range rep.Codes {
				if c != wire.OK {
					return fmt.Errorf("replay to region %d on %s: %v", ri.ID, ri.Addr, c)
				}
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("replay to region %d on %s: %w", ri.ID, ri.Addr, err)
		}
		var se *wire.StatusError
		if errors.As(err, &se) && se.Code != wire.Internal && se.Code != wire.Unavailable {
			return fmt.Errorf("replay to region %d on %s: %w", ri.ID, ri.Addr, err)
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return fmt.Errorf("replay to region %d on %s: %w", ri.ID, ri.Addr, err)
		}
	}
}

// SortFields sorts a write's fields by name (write-sets are canonical).
func SortFields(fs []wire.Field) {
	sort.Slice(fs, func(i, j int) bool { return fs[i].Name < fs[j].Name })
}
