package netns

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// sharedMountDir makes dir (the named namespaces' directory) a mount point
// of its own with shared propagation, as iproute2's `ip netns add` does
// before it bind-mounts a namespace there. Without it, namespaces
// bind-mounted while dir is a plain directory are shadowed when anything
// later runs `ip netns add` (which then bind-mounts dir over itself): their
// files can no longer be unmounted by path, and removing them fails with
// "device or resource busy", leaving the namespaces behind.
func sharedMountDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	err := unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("making %s a shared mount: %w", dir, err)
	}
	// not a mount point yet: bind it over itself, then share it
	if err := unix.Mount(dir, dir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind-mounting %s over itself: %w", dir, err)
	}
	if err := unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("making %s a shared mount: %w", dir, err)
	}
	return nil
}
