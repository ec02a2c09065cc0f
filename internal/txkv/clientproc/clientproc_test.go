package clientproc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/txkv/client"
)

// TestErrorsCrossTheProcess: each client library error the child returns
// is the same error (errors.Is) in the parent, so the driver classifies a
// remote commit exactly as a local one.
func TestErrorsCrossTheProcess(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"aborted", client.ErrAborted},
		{"not-committed", client.ErrNotCommitted},
		{"unknown-outcome", client.ErrUnknownOutcome},
		{"closed", client.ErrClosed},
		{"deadline", context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := replyOf(fmt.Errorf("commit: %w", tc.err)).err()
			if !errors.Is(got, tc.err) {
				t.Errorf("%v crossed as %v", tc.err, got)
			}
		})
	}
	if replyOf(nil).err() != nil {
		t.Error("success crossed as an error")
	}
	if got := replyOf(errors.New("disk on fire")).err(); got == nil || got.Error() != "disk on fire" {
		t.Errorf("other error crossed as %v", got)
	}
}

func TestRunNodeArguments(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no coordinator", []string{"--name", "c"}, "--coordinator and --name are required"},
		{"missing value", []string{"--coordinator"}, "--coordinator needs a value"},
		{"unknown flag", []string{"--coordinator", "x:1", "--name", "c", "--fast"}, `unexpected argument "--fast"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := RunNode(context.Background(), tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("RunNode(%q) = %v, want %q", tc.args, err, tc.want)
			}
		})
	}
}
