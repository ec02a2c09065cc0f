package etcd

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/faultbench/faultbench/internal/driver"
)

func TestClassify(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("etcd get: %w", err) }
	for _, tc := range []struct {
		name string
		err  error
		want driver.Class
	}{
		// The caller's deadline.
		{"context deadline", context.DeadlineExceeded, driver.Timeout},
		{"wrapped context deadline", wrap(context.DeadlineExceeded), driver.Timeout},
		{"grpc DeadlineExceeded", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), driver.Timeout},
		{"etcd DeadlineExceeded", rpctypes.ErrGRPCDeadlineExceeded, driver.Timeout},
		// etcd's own request timeouts: accepted, outcome unknown.
		{"request timed out", rpctypes.ErrTimeout, driver.Timeout},
		{"request timed out (grpc form)", rpctypes.ErrGRPCTimeout, driver.Timeout},
		{"timed out, leader fail", rpctypes.ErrTimeoutDueToLeaderFail, driver.Timeout},
		{"timed out, connection lost", rpctypes.ErrTimeoutDueToConnectionLost, driver.Timeout},
		{"timed out, applied index", wrap(rpctypes.ErrTimeoutWaitAppliedIndex), driver.Timeout},
		// Nobody can take the request.
		{"no leader", rpctypes.ErrNoLeader, driver.Unavailable},
		{"no leader (grpc form)", wrap(rpctypes.ErrGRPCNoLeader), driver.Unavailable},
		{"leader changed", rpctypes.ErrLeaderChanged, driver.Unavailable},
		{"server stopped", rpctypes.ErrStopped, driver.Unavailable},
		{"unhealthy", rpctypes.ErrUnhealthy, driver.Unavailable},
		{"connection refused", status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`), driver.Unavailable},
		{"no endpoints", clientv3.ErrNoAvailableEndpoints, driver.Unavailable},
		{"ECONNREFUSED", wrap(syscall.ECONNREFUSED), driver.Unavailable},
		// Refused by the server.
		{"too many requests", rpctypes.ErrTooManyRequests, driver.Rejected},
		{"too many requests (grpc form)", rpctypes.ErrGRPCRequestTooManyRequests, driver.Rejected},
		{"no space", rpctypes.ErrNoSpace, driver.Rejected},
		{"no space (grpc form)", rpctypes.ErrGRPCNoSpace, driver.Rejected},
		{"other ResourceExhausted", status.Error(codes.ResourceExhausted, "grpc: received message larger than max"), driver.Rejected},
		{"request too large", rpctypes.ErrRequestTooLarge, driver.Rejected},
		{"compacted", rpctypes.ErrCompacted, driver.Rejected},
		{"permission denied", rpctypes.ErrPermissionDenied, driver.Rejected},
		{"not capable", rpctypes.ErrNotCapable, driver.Rejected},
		// Conflicts.
		{"aborted", status.Error(codes.Aborted, "aborted"), driver.Conflict},
		// Cancelled by the run, not failed by the database.
		{"context canceled", context.Canceled, driver.Other},
		{"grpc Canceled", status.Error(codes.Canceled, "context canceled"), driver.Other},
		{"etcd canceled", rpctypes.ErrGRPCCanceled, driver.Other},
		// The rest.
		{"not found", fmt.Errorf("key %q: %w", "/t/k", driver.ErrNotFound), driver.Other},
		{"corrupt record", fmt.Errorf("key: %w", errCorrupt), driver.Other},
		{"corrupt cluster", rpctypes.ErrCorrupt, driver.Other},
		{"grpc Internal", status.Error(codes.Internal, "boom"), driver.Other},
		{"plain", errors.New("something else"), driver.Other},
	} {
		err := classify("read", tc.err)
		if got := driver.ClassOf(err); got != tc.want {
			t.Errorf("%s: classify(%v) is %s, want %s", tc.name, tc.err, got, tc.want)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("%s: classified error does not wrap the original", tc.name)
		}
	}
	if classify("read", nil) != nil {
		t.Error("classify(nil) != nil")
	}
	pre := driver.Classified(driver.Conflict, "update", errors.New("x"))
	if got := classify("update", fmt.Errorf("outer: %w", pre)); driver.ClassOf(got) != driver.Conflict {
		t.Errorf("an already classified error was reclassified: %v", got)
	}
	nf := classify("read", fmt.Errorf("k: %w", driver.ErrNotFound))
	if !errors.Is(nf, driver.ErrNotFound) {
		t.Errorf("not found is not errors.Is ErrNotFound: %v", nf)
	}
}
