// Package diskfs is the file-system layer of disk faults: a FUSE file
// system (github.com/hanwen/go-fuse/v2) mounted on a node's data directory
// and backed by a real directory next to it, through which faultbench can
// make the node's disk slow (disk-delay), failing (disk-error), full
// (disk-full) or stalled (disk-stall), and lose power (power-loss).
//
// The layer keeps lazyfs's account of durability: every byte written to a
// file since that file's last fsync, and every create, rename, link and
// unlink not yet made durable by an fsync of the file or of its directory,
// can be undone. Crash undoes all of it — the backing directory then holds
// what a machine that lost power would find on its disk — while the node's
// processes are dead. Writes go through to the backing files at once (the
// layer keeps the old bytes, not the new ones), so reads see them, and a
// node killed without a crash loses nothing.
//
// One server process per node (`faultbench diskfs serve --data DIR`, Serve)
// owns the mount; faults talk to it over a unix socket next to the data
// directory (Client). Release unmounts a node's layer and moves the data
// back into the plain directory, as if the layer had never been there. The
// package imports nothing of faultbench: the launcher (Release on down) and
// the fault kinds use it.
package diskfs

import (
	"fmt"
	"path/filepath"
	"time"
)

// Cluster option keys (launcher.Spec.Options, recorded in the cluster's
// state) that put the layer under every node's data directory.
const (
	// OptDisk selects the nodes' storage: "fuse" mounts the layer on
	// every node's data directory (`cluster up --disk-faults`); "" or
	// "plain" leaves the directories alone.
	OptDisk = "disk"
	// DiskFuse is OptDisk's value for the layer.
	DiskFuse = "fuse"
)

// Wanted reports whether cluster options ask for the layer.
func Wanted(opts map[string]string) bool {
	v := opts[OptDisk]
	return v == DiskFuse || v == "true"
}

// CheckOption checks OptDisk's value.
func CheckOption(v string) error {
	switch v {
	case "", "plain", "false", DiskFuse, "true":
		return nil
	}
	return fmt.Errorf("option %s=%q: want %s (the file-system layer of disk faults under every node's data directory) or plain", OptDisk, v, DiskFuse)
}

// ServeCommand is the hidden faultbench command that runs one node's
// layer: `faultbench diskfs serve --data DIR`.
const ServeCommand = "diskfs"

// Layout is where one node's layer keeps its parts. The data directory is
// the mount point; the state directory next to it holds the backing
// directory (the real files), the control socket and the server's log.
type Layout struct {
	Data    string // the node's data directory: the mount point
	State   string // DIR/.NAME.diskfs next to Data
	Backing string // State/backing: the real files
	Trash   string // State/trash: hard links keeping unlinked files until the unlink is durable
	Ctl     string // State/ctl.sock: the control socket
	Log     string // State/server.log
}

// LayoutOf returns the layout of the layer under data directory data.
func LayoutOf(data string) Layout {
	data = filepath.Clean(data)
	st := filepath.Join(filepath.Dir(data), "."+filepath.Base(data)+".diskfs")
	return Layout{Data: data, State: st, Backing: filepath.Join(st, "backing"), Trash: filepath.Join(st, "trash"),
		Ctl: filepath.Join(st, "ctl.sock"), Log: filepath.Join(st, "server.log")}
}

// maxSocketPath is the longest path a unix socket may have (sun_path
// holds 108 bytes with the terminating NUL).
const maxSocketPath = 107

// Check says whether the layout can be used: its control socket's path
// must fit a unix socket address.
func (l Layout) Check() error {
	if !filepath.IsAbs(l.Data) {
		return fmt.Errorf("disk layer: data directory %s: want an absolute path", l.Data)
	}
	if len(l.Ctl) > maxSocketPath {
		return fmt.Errorf("disk layer: the control socket %s is %d bytes long, more than a unix socket takes (%d): choose a shorter cluster directory", l.Ctl, len(l.Ctl), maxSocketPath)
	}
	return nil
}

// Deadlines of the layer's own waits.
const (
	// ReadyTimeout bounds the wait for a started server to mount and answer.
	ReadyTimeout = 15 * time.Second
	// CallTimeout bounds one control call when the caller's context has no deadline.
	CallTimeout = 30 * time.Second
)
