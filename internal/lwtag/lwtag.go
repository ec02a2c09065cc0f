// Package lwtag names the record field that carries the lost-write check's
// tag. It is a leaf: the check (internal/check) writes and reads the field,
// and a driver that must know of it (Cassandra declares it as a column)
// imports this package instead of the check.
package lwtag

// Field is the field every tracked write carries its tag in (writer id and
// sequence number; see internal/check).
const Field = "fbtag"
