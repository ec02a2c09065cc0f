package sshhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/remote"
)

// CleanupHosts is `faultbench cleanup --hosts FILE`: on every host of the
// inventory at once it removes the network faults faultbench put there (its
// nftables table), installs binary (the local faultbench) if needed and runs
// `faultbench cleanup-host` (CleanupCommand), which stops what faultbench
// started there and removes its node directories; what each host reported
// is written to w in file order. The nodes of an existing cluster the
// inventory describes (its cluster:) are left running as found: stopped
// ones continued, dead ones started again. Then the records of clusters
// on that inventory are removed from the state directory stateDir.
func CleanupHosts(ctx context.Context, inv *remote.Inventory, acceptNew bool, binary, stateDir string, w io.Writer) error {
	abs, err := filepath.Abs(inv.Path)
	if err != nil {
		return err
	}
	bin, err := remote.NewBinary(binary)
	if err != nil {
		return err
	}
	pool := remote.NewPool(inv, acceptNew)
	defer pool.Close()
	// every host at once; reported in file order
	outs := make([][]byte, len(inv.Hosts))
	herrs := make([]error, len(inv.Hosts))
	var wg sync.WaitGroup
	for i, h := range inv.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			outs[i], herrs[i] = cleanHost(hctx, pool, bin, h)
		}()
	}
	wg.Wait()
	var errs []error
	for i, h := range inv.Hosts {
		if herrs[i] != nil {
			errs = append(errs, fmt.Errorf("host %s: %w", h.Name, herrs[i]))
			continue
		}
		text := strings.TrimSpace(string(outs[i]))
		if text == "" {
			fmt.Fprintf(w, "%s: nothing to clean up\n", h.Name)
			continue
		}
		for _, l := range strings.Split(text, "\n") {
			fmt.Fprintf(w, "%s: %s\n", h.Name, l)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if e := inv.Cluster; e != nil {
		// an existing cluster is left as faultbench found it: its faults
		// are gone (above); what a fault left down or paused runs again
		hs, err := NewNodeHosts(inv, pool, func() (*remote.Binary, error) { return bin, nil })
		if err != nil {
			return err
		}
		report := map[string][]string{}
		rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		rerr := restoreExisting(rctx, hs, e, report)
		cancel()
		for _, h := range inv.Hosts {
			for _, l := range report[h.Name] {
				fmt.Fprintf(w, "%s: %s\n", h.Name, l)
			}
		}
		if rerr != nil {
			return fmt.Errorf("existing cluster %s: %w", e.Name, rerr)
		}
	}
	store := launcher.StateStore{Dir: stateDir}
	cs, _ := store.List()
	for _, c := range cs {
		if c.Inventory == abs {
			if err := store.Remove(c.Name); err != nil {
				return err
			}
			fmt.Fprintf(w, "removed the record of cluster %s (its nodes ran on %s)\n", c.Name, abs)
		}
	}
	return nil
}

// cleanHost removes the network faults faultbench put on h (its
// nftables table), runs `faultbench cleanup-host` there (installing
// faultbench if needed) and returns what both reported.
func cleanHost(ctx context.Context, pool *remote.Pool, bin *remote.Binary, h remote.Host) ([]byte, error) {
	c, err := pool.Get(ctx, h)
	if err != nil {
		return nil, err
	}
	run := func(ctx context.Context, argv []string, stdin string) ([]byte, error) {
		if stdin == "" {
			return c.Run(ctx, argv, nil)
		}
		return c.Run(ctx, argv, strings.NewReader(stdin))
	}
	cleared, err := ClearNet(ctx, run)
	if err != nil {
		return nil, err
	}
	var report []byte
	if cleared {
		report = []byte("removed the nftables table inet " + NFTable + " (network faults)\n")
	}
	self, err := bin.Install(ctx, c)
	if err != nil {
		return nil, err
	}
	dir := h.Dir
	out, err := c.Run(ctx, []string{"realpath", "-m", "--", dir}, nil)
	if err != nil {
		return nil, err
	}
	dir = strings.TrimSpace(string(out))
	out, err = c.Run(ctx, []string{self, CleanupCommand, "--dir", dir}, nil)
	return append(report, out...), err
}
