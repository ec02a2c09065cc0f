package launcher

import "context"

// OptionChecker is implemented by launchers that can check the values of
// their options (`cluster up -o`, a scenario's target.options) without
// starting anything, so that a bad value is a usage error before any node
// starts rather than a start-up failure after some did. The options passed
// are the launcher's own (see OwnOptions); the keys are already known.
type OptionChecker interface {
	CheckOptions(opts map[string]string) error
}

// DiskLayered is implemented by launchers that put the data directory of
// every node of this machine on the disk faults' file-system layer when a
// cluster asks for it (option disk: fuse, `cluster up --disk-faults`;
// Env.Disk, which SpawnNode and ReadyDisk use). CheckDiskLayer says, before
// anything starts, whether the nodes can run on the layer with the
// launcher's own options opts (nil: they can), and why not. A launcher
// without the ability cannot: a cluster of its kind with disk: fuse is
// refused at validation.
type DiskLayered interface {
	CheckDiskLayer(opts map[string]string) error
}

// StatusDescriber is implemented by launchers that have more to say in
// `cluster status` than the node table: what the database itself reports
// (HBase: the active master, the region assignment, each machine's
// processes with their memory). The text follows the table; the error,
// if any, is printed as a note after what could be said.
type StatusDescriber interface {
	DescribeStatus(ctx context.Context, c *Cluster) (string, error)
}
