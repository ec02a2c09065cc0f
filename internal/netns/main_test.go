package netns

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"testing"
)

// The test binary stands in for faultbench's hidden commands: it execs
// into a namespace (netns-exec, from the main thread as faultbench does)
// and runs the delay relay (netns-delay).
func init() {
	if len(os.Args) > 1 && os.Args[1] == ExecCommand {
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case ExecCommand:
			fmt.Fprintln(os.Stderr, Exec(os.Args[2:]))
			os.Exit(1)
		case RelayCommand:
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			err := RunRelay(ctx, os.Args[2:])
			stop()
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}
