package clusterctl

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/check"
	"github.com/faultbench/faultbench/internal/diskfs"
	etcddriver "github.com/faultbench/faultbench/internal/driver/etcd"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/launcher"
	etcdlauncher "github.com/faultbench/faultbench/internal/launcher/etcd"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/targets"
	"github.com/faultbench/faultbench/internal/workload"
)

// TestMain lets the test binary stand in for faultbench: the etcd and txkv
// launchers spawn `<self> node KIND ...` (any target's node command), the
// disk layer `<self> diskfs serve ...`.
func TestMain(m *testing.M) {
	var nodeCmd func(context.Context, []string) error
	if len(os.Args) > 2 && os.Args[1] == "node" {
		nodeCmd, _ = targets.Builtin().NodeCommand(os.Args[2])
	}
	if nodeCmd != nil || len(os.Args) > 2 && os.Args[1] == diskfs.ServeCommand && os.Args[2] == "serve" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		var err error
		if nodeCmd != nil {
			err = nodeCmd(ctx, os.Args[3:])
		} else {
			o := diskfs.ServeOptions{}
			var data string
			for i := 3; i < len(os.Args); i++ {
				switch os.Args[i] {
				case "--data":
					i++
					data = os.Args[i]
				case "--die-with-parent":
					o.DieWithParent = true
				}
			}
			err = diskfs.Serve(ctx, data, o)
		}
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestPowerLossEtcd runs a real 3-member etcd cluster on the disk layer,
// writes for two seconds with every write tagged by the lost-write check,
// cuts the power of every member at once and starts them again. With
// etcd's --unsafe-no-fsync acknowledged writes are lost and the check finds
// them; with fsync (the default) none is. Everything written before the
// load is made durable first (the layer's sync), so that what is at stake
// is the load's writes. No mount outlives the test.
func TestPowerLossEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real etcd processes on FUSE mounts")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skip("the disk layer needs /dev/fuse and root")
	}
	for _, tc := range []struct {
		name     string
		noFsync  bool
		wantLoss bool
	}{
		{"fsync loses nothing", false, false},
		{"unsafe-no-fsync loses acknowledged writes", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env, err := launcher.NewEnv()
			if err != nil {
				t.Fatal(err)
			}
			m := New(filepath.Join(dir, "state"), env, nil)
			m.Grace = 5 * time.Second
			opts := map[string]string{OptDisk: DiskFuse}
			if tc.noFsync {
				opts[etcdlauncher.OptUnsafeNoFsync] = "true"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			c, err := m.Up(ctx, "etcd", launcher.Spec{Name: "pl", Nodes: 3, Dir: filepath.Join(dir, "c"), Options: opts})
			t.Cleanup(func() {
				if c != nil {
					if err := m.Down(context.Background(), "pl"); err != nil {
						t.Errorf("down: %v", err)
					}
				}
				if left := diskfs.MountsUnder(dir); len(left) > 0 {
					t.Errorf("mounts left behind: %v", left)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range c.Nodes {
				if !diskfs.Mounted(n.DataDir) {
					t.Fatalf("%s: %s is not on the disk layer", n.Name, n.DataDir)
				}
				if _, err := diskfs.Call(ctx, diskfs.LayoutOf(n.DataDir).Ctl, diskfs.Request{Op: diskfs.CtlSync}); err != nil {
					t.Fatal(err)
				}
			}

			p := properties.New()
			p.Set(etcddriver.PropEndpoints, strings.Join(c.Endpoints(), ","))
			d, err := etcddriver.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			const workers = 4
			tr := check.NewTracker(workers)
			lctx, lcancel := context.WithTimeout(ctx, 2*time.Second)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for i := 0; lctx.Err() == nil; i++ {
						op := &workload.Op{Kind: workload.Insert, Key: fmt.Sprintf("user%d-%d", w, i),
							Values: map[string][]byte{"field0": []byte("v")}}
						tok := tr.BeforeWrite(w, op)
						octx, ocancel := context.WithTimeout(ctx, 5*time.Second)
						err := d.Insert(octx, "usertable", op.Key, op.Values)
						ocancel()
						tr.AfterWrite(w, op, tok, err)
					}
				})
			}
			wg.Wait()
			lcancel()

			fc, err := m.FaultCluster(c, nil, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			reg := fault.NewRegistry()
			if _, err := fault.Apply(ctx, fc, reg, fault.ActionPowerLoss, "all"); err != nil {
				t.Fatalf("power-loss: %v", err)
			}
			if _, err := fault.Apply(ctx, fc, reg, fault.ActionStart, "all"); err != nil {
				t.Fatalf("start after the power loss: %v", err)
			}
			c = fc.Snapshot()
			vctx, vcancel := context.WithTimeout(ctx, time.Minute)
			defer vcancel()
			res := tr.Verify(vctx, d, "usertable", workers)
			lost := res.LostWrites + res.LostInserts
			t.Logf("%d acknowledged writes, %d lost, %d unknown, %d unreadable", res.AckedWrites, lost, res.UnknownWrites, res.Unreadable)
			if res.AckedWrites == 0 {
				t.Fatal("no write was acknowledged")
			}
			if res.Unreadable > 0 {
				t.Errorf("%d keys could not be read back: %+v", res.Unreadable, res.Examples)
			}
			if tc.wantLoss && lost == 0 {
				t.Errorf("a power loss of every member lost no acknowledged write with --unsafe-no-fsync")
			}
			if !tc.wantLoss && lost > 0 {
				t.Errorf("a power loss of every member lost %d acknowledged writes with fsync: %+v", lost, res.Examples)
			}
		})
	}
}

// TestCleanupAfterKill9: a faultbench killed with kill -9 leaves its
// layer's server dead (it dies with its parent) and the mount behind it
// dead too; `faultbench cleanup` removes the mount and puts the node's
// data back in its directory. The server is killed with SIGKILL here, and
// the cluster recorded as left by a faultbench that is gone.
func TestCleanupAfterKill9(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skip("the disk layer needs /dev/fuse and root")
	}
	dir := t.TempDir()
	t.Cleanup(func() {
		for _, p := range diskfs.MountsUnder(dir) {
			_ = syscall.Unmount(p, syscall.MNT_DETACH)
			t.Errorf("mount left behind: %s", p)
		}
	})
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "c", "n1", "data")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = diskfs.Ensure(ctx, data, env.Self, false, func(argv []string, logFile string) error {
		_, err := env.Spawn(argv, logFile, true)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "member"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := diskfs.Ping(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := launcher.WaitExit(ctx, st.PID); err != nil {
		t.Fatal(err)
	}
	if !diskfs.Mounted(data) {
		t.Fatal("the dead server's mount is gone already: nothing left to clean up")
	}
	m := New(filepath.Join(dir, "state"), env, nil)
	c := &launcher.Cluster{Kind: "etcd", Name: "killed", Dir: filepath.Join(dir, "c"), OwnerPID: 1 << 22, KeepData: true,
		Options: map[string]string{OptDisk: DiskFuse}, Nodes: []launcher.Node{{Name: "n1", DataDir: data}}}
	if err := m.Save(c); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := m.Cleanup(ctx, false, &out); err != nil {
		t.Fatalf("cleanup: %v\n%s", err, out.String())
	}
	if left := diskfs.MountsUnder(dir); len(left) > 0 {
		t.Fatalf("cleanup left mounts: %v", left)
	}
	if b, err := os.ReadFile(filepath.Join(data, "member")); err != nil || string(b) != "data" {
		t.Errorf("the node's data after cleanup: %q, %v (kept in place, keep_data)", b, err)
	}
}
