package main

import (
	"os"
	"runtime"

	"github.com/faultbench/faultbench/internal/netns"
)

// `faultbench netns-exec` must call execve on the main thread: from any
// other thread the kernel swaps that thread in for the thread-group leader,
// whose pid shows a zombie for a moment (a launcher polling /proc takes the
// node for dead) and whose parent-death signal is lost. Locking the main
// goroutine during init keeps it on the main thread.
func init() {
	if len(os.Args) > 1 && os.Args[1] == netns.ExecCommand {
		runtime.LockOSThread()
	}
}
