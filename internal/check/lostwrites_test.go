package check

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/workload"
)

// memDriver is an in-memory map standing in for a database in these unit
// tests of the check's logic only.
type memDriver struct {
	mu   sync.Mutex
	recs map[string]map[string][]byte
	fail map[string]error
}

func newMem() *memDriver {
	return &memDriver{recs: map[string]map[string][]byte{}, fail: map[string]error{}}
}

func (m *memDriver) Read(_ context.Context, _, key string, _ []string) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fail[key]; err != nil {
		return nil, err
	}
	r, ok := m.recs[key]
	if !ok {
		return nil, fmt.Errorf("read %s: %w", key, outcome.ErrNotFound)
	}
	return r, nil
}
func (m *memDriver) Scan(context.Context, string, string, int, []string) ([]map[string][]byte, error) {
	return nil, errors.New("unused")
}
func (m *memDriver) Update(_ context.Context, _, key string, v map[string][]byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.recs[key]
	if r == nil {
		r = map[string][]byte{}
		m.recs[key] = r
	}
	for k, b := range v {
		r[k] = append([]byte(nil), b...)
	}
	return nil
}
func (m *memDriver) Insert(ctx context.Context, t, key string, v map[string][]byte) error {
	return m.Update(ctx, t, key, v)
}
func (m *memDriver) Delete(_ context.Context, _, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, key)
	return nil
}
func (m *memDriver) Close() error { return nil }

// write performs one tracked write; apply=false simulates a write the
// database acknowledged but did not keep.
func write(t *Tracker, d *memDriver, worker int, kind workload.OpKind, key string, apply bool, err error) {
	op := &workload.Op{Kind: kind, Key: key, Values: map[string][]byte{"field0": []byte("x")}}
	tok := t.BeforeWrite(worker, op)
	if apply {
		_ = d.Update(context.Background(), "t", key, op.Values)
	}
	t.AfterWrite(worker, op, tok, err)
}

func TestVerify(t *testing.T) {
	timeout := outcome.Classified(outcome.Timeout, "update", errors.New("deadline"))
	tests := []struct {
		name      string
		do        func(tr *Tracker, d *memDriver)
		lost      int
		lostIns   int
		unread    int
		keys      int
		wantKinds []string
	}{
		{"all kept", func(tr *Tracker, d *memDriver) {
			write(tr, d, 0, workload.Insert, "a", true, nil)
			write(tr, d, 1, workload.Update, "a", true, nil)
			write(tr, d, 0, workload.Update, "b", true, nil)
		}, 0, 0, 0, 2, nil},
		{"last acknowledged write dropped", func(tr *Tracker, d *memDriver) {
			write(tr, d, 0, workload.Update, "a", true, nil)
			write(tr, d, 1, workload.Update, "a", false, nil)
		}, 1, 0, 0, 1, []string{"lost-write"}},
		{"acknowledged insert missing", func(tr *Tracker, d *memDriver) {
			write(tr, d, 0, workload.Insert, "a", false, nil)
		}, 0, 1, 0, 1, []string{"lost-insert"}},
		{"unknown outcome applied is fine", func(tr *Tracker, d *memDriver) {
			write(tr, d, 0, workload.Update, "a", true, nil)
			write(tr, d, 0, workload.Update, "a", true, timeout)
		}, 0, 0, 0, 1, nil},
		{"unknown outcome not applied is fine", func(tr *Tracker, d *memDriver) {
			write(tr, d, 0, workload.Update, "a", true, nil)
			write(tr, d, 0, workload.Update, "a", false, timeout)
		}, 0, 0, 0, 1, nil},
		{"only unknown writes and missing key is fine", func(tr *Tracker, d *memDriver) {
			write(tr, d, 0, workload.Insert, "a", false, timeout)
		}, 0, 0, 0, 1, nil},
		{"value from before the run is a loss", func(tr *Tracker, d *memDriver) {
			d.recs["a"] = map[string][]byte{"field0": []byte("old")}
			write(tr, d, 0, workload.Update, "a", false, nil)
		}, 1, 0, 0, 1, []string{"lost-write"}},
		{"unreadable key", func(tr *Tracker, d *memDriver) {
			write(tr, d, 0, workload.Update, "a", true, nil)
			d.fail["a"] = outcome.Classified(outcome.Unavailable, "read", errors.New("down"))
		}, 0, 0, 1, 1, []string{"unreadable"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(2)
			d := newMem()
			tc.do(tr, d)
			ctx, cancel := context.WithTimeout(context.Background(), 300e6)
			defer cancel()
			r := tr.Verify(ctx, d, "t", 4)
			if r.LostWrites != tc.lost || r.LostInserts != tc.lostIns || r.Unreadable != tc.unread || r.KeysChecked != tc.keys {
				t.Fatalf("got %+v", r)
			}
			if len(r.Examples) != len(tc.wantKinds) {
				t.Fatalf("examples %+v, want kinds %v", r.Examples, tc.wantKinds)
			}
			for i, k := range tc.wantKinds {
				if r.Examples[i].Kind != k {
					t.Errorf("example %d kind %s, want %s", i, r.Examples[i].Kind, k)
				}
			}
			if r.OK() != (tc.lost+tc.lostIns+tc.unread == 0) {
				t.Errorf("OK() = %v", r.OK())
			}
		})
	}
}

func TestTagRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		w   int
		seq int64
	}{{0, 0}, {1, 1}, {65535, 1<<40 - 1}, {17, 123456789}} {
		t.Run(fmt.Sprintf("%d/%d", tc.w, tc.seq), func(t *testing.T) {
			var b [tagLen]byte
			encodeTag(&b, tc.w, tc.seq)
			got, ok := decodeTag(b[:])
			if !ok || got.worker != tc.w || got.seq != tc.seq {
				t.Fatalf("decode(%q) = %v %v", b, got, ok)
			}
		})
	}
	if _, ok := decodeTag([]byte("not a tag")); ok {
		t.Fatal("decoded garbage")
	}
}

func TestConcurrentWriters(t *testing.T) {
	tr := NewTracker(8)
	d := newMem()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				key := fmt.Sprintf("k%d", i%50)
				op := &workload.Op{Kind: workload.Update, Key: key, Values: map[string][]byte{}}
				tok := tr.BeforeWrite(w, op)
				d.mu.Lock() // apply and acknowledge atomically, like a linearizable store
				r := d.recs[key]
				if r == nil {
					r = map[string][]byte{}
					d.recs[key] = r
				}
				r[TagField] = append([]byte(nil), op.Values[TagField]...)
				tr.AfterWrite(w, op, tok, nil)
				d.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	r := tr.Verify(context.Background(), d, "t", 4)
	if !r.OK() || r.KeysChecked != 50 || r.AckedWrites != 4000 {
		t.Fatalf("linearizable history flagged: %+v", r)
	}
}
