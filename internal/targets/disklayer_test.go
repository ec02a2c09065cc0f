package targets

import (
	"context"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/diskfs"
	"github.com/faultbench/faultbench/internal/launcher"
)

// TestDiskLayerDeclared: every launcher of the registry declares whether
// its nodes run on the disk layer (launcher.DiskLayered), so that disk:
// fuse is accepted for them; a launcher without the declaration is
// refused at validation with the reason (the negative control).
func TestDiskLayerDeclared(t *testing.T) {
	reg := Builtin()
	opts := map[string]string{diskfs.OptDisk: diskfs.DiskFuse}
	for _, kind := range reg.Launchable() {
		t.Run(kind, func(t *testing.T) {
			tg, err := reg.Get(kind)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := tg.Launcher.(launcher.DiskLayered); !ok {
				t.Fatalf("the %s launcher does not declare launcher.DiskLayered", kind)
			}
			if err := tg.CheckOptionValues(opts); err != nil {
				t.Errorf("disk: fuse refused: %v", err)
			}
		})
	}
	t.Run("undeclared launcher refused", func(t *testing.T) {
		tg := &Target{Kind: "plainkv", Docs: "docs/targets.md", Launcher: plainLauncher{}}
		err := tg.CheckOptionValues(opts)
		if err == nil || !strings.Contains(err.Error(), "does not put its nodes' data directories on the disk layer") {
			t.Fatalf("want the refusal, got %v", err)
		}
		if err := tg.CheckOptionValues(map[string]string{diskfs.OptDisk: "plain"}); err != nil {
			t.Errorf("disk: plain refused: %v", err)
		}
	})
}

// plainLauncher is a launcher without the disk-layer declaration.
type plainLauncher struct{}

func (plainLauncher) Kind() string { return "plainkv" }
func (plainLauncher) Up(context.Context, *launcher.Env, launcher.Spec) (*launcher.Cluster, error) {
	return nil, nil
}
func (plainLauncher) StartNode(context.Context, *launcher.Env, *launcher.Cluster, string) error {
	return nil
}
func (plainLauncher) Refresh(context.Context, *launcher.Cluster) error     { return nil }
func (plainLauncher) WaitHealthy(context.Context, *launcher.Cluster) error { return nil }
