package netns

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	vnetns "github.com/vishvananda/netns"
)

// TestNamespaceDirShared: the namespaces' directory is a shared mount point
// before faultbench bind-mounts a namespace there, so that an `ip netns add`
// run later by anyone does not shadow faultbench's namespaces (they could
// then not be deleted: "device or resource busy", left behind after a test).
func TestNamespaceDirShared(t *testing.T) {
	needRoot(t)
	name := "fbtestmd" + strconv.Itoa(os.Getpid()%100000)
	if err := newNamed(name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vnetns.DeleteNamed(name) })
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	mounted, shared := false, false
	for _, line := range strings.Split(string(b), "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - ...
		if f := strings.Fields(line); len(f) > 6 && f[4] == bindMountDir {
			mounted = true
			opt, _, _ := strings.Cut(strings.Join(f[6:], " "), " - ")
			shared = shared || strings.Contains(opt, "shared:")
		}
	}
	if !mounted || !shared {
		t.Fatalf("%s after creating a namespace: mount point %v, shared %v; want both", bindMountDir, mounted, shared)
	}
	if ip, err := exec.LookPath("ip"); err == nil {
		other := name + "ip"
		if out, err := exec.Command(ip, "netns", "add", other).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add: %v: %s", err, out)
		}
		if out, err := exec.Command(ip, "netns", "delete", other).CombinedOutput(); err != nil {
			t.Fatalf("ip netns delete: %v: %s", err, out)
		}
	}
	if err := vnetns.DeleteNamed(name); err != nil {
		t.Fatalf("deleting %s after another tool used %s: %v", name, bindMountDir, err)
	}
	if _, err := os.Stat(filepath.Join(bindMountDir, name)); !os.IsNotExist(err) {
		t.Errorf("%s still there (stat: %v)", name, err)
	}
}
