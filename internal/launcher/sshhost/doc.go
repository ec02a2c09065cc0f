// Package sshhost runs database nodes on the hosts of an inventory over SSH
// (`cluster up --hosts`, `scenario --nodes-from`, `cleanup --hosts`): it
// adapts internal/remote's SSH transport to the launcher's Host and process
// abstractions (start a node detached with `faultbench spawn`, signal and
// look at it by its recorded pid, remove its directory). It is the layer
// between the two, so that remote stays a transport that knows hosts and
// commands, not databases (docs/architecture.md, docs/distributed.md).
package sshhost
