package txkv

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/txkv/client"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err  error
		want driver.Class
	}{
		{client.ErrAborted, driver.Conflict},
		{fmt.Errorf("%w: x", client.ErrUnknownOutcome), driver.Timeout},
		{context.DeadlineExceeded, driver.Timeout},
		{client.ErrNotCommitted, driver.Unavailable},
		{fmt.Errorf("k: %w", driver.ErrNotFound), driver.Other},
		{errors.New("boom"), driver.Other},
	} {
		err := classify("op", c.err)
		if got := driver.ClassOf(err); got != c.want {
			t.Errorf("%v: class %v, want %v", c.err, got, c.want)
		}
		if !errors.Is(err, c.err) {
			t.Errorf("%v: cause lost", c.err)
		}
	}
	if classify("op", nil) != nil {
		t.Error("nil classified")
	}
}

func TestProperties(t *testing.T) {
	p := properties.New()
	if _, err := NewDriver(context.Background(), p); err == nil {
		t.Error("no coordinator accepted")
	}
	p.Set("txkv.persistence", "sync")
	if _, err := NewDriver(context.Background(), p); err == nil || !contains([]string{err.Error()}, err.Error()) {
		t.Error("a launcher option accepted as a driver property")
	}
}
