package cassandra

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocql/gocql"

	"github.com/faultbench/faultbench/internal/outcome"
)

// WriteTimeoutError is Cassandra's WriteTimeout: the coordinator sent the
// write to the replicas but fewer than the consistency level needs
// acknowledged it within write_request_timeout. The write is not rolled
// back: it may be applied on the replicas that got it and, through hints
// or repair, everywhere. Its outcome is unknown (the lost-write check
// counts it among the unknown-outcome writes, never as lost).
type WriteTimeoutError struct {
	Op          string
	Consistency string
	Received    int    // replicas that acknowledged
	BlockFor    int    // replicas the consistency level needed
	WriteType   string // SIMPLE, BATCH, BATCH_LOG, UNLOGGED_BATCH, COUNTER, CAS, VIEW, CDC
	Err         error
}

func (e *WriteTimeoutError) Error() string {
	return fmt.Sprintf("cassandra write timeout, outcome unknown (may be applied): %d of %d replicas acknowledged at %s, write type %s",
		e.Received, e.BlockFor, e.Consistency, e.WriteType)
}

// Unwrap returns gocql's error.
func (e *WriteTimeoutError) Unwrap() error { return e.Err }

// UnknownOutcome reports that the write may or may not have been applied.
func (e *WriteTimeoutError) UnknownOutcome() bool { return true }

// Error codes of the native protocol (spec section 9) that gocql exposes
// only as numbers.
const (
	codeServer        = 0x0000
	codeOverloaded    = 0x1001
	codeBootstrapping = 0x1002
	codeTruncate      = 0x1003
	codeSyntax        = 0x2000
	codeUnauthorized  = 0x2100
	codeInvalid       = 0x2200
	codeConfig        = 0x2300
)

// classOf returns the outcome class of a gocql error.
func classOf(err error) outcome.Class {
	var (
		unavail *gocql.RequestErrUnavailable
		wto     *gocql.RequestErrWriteTimeout
		rto     *gocql.RequestErrReadTimeout
		wf      *gocql.RequestErrWriteFailure
		rf      *gocql.RequestErrReadFailure
		reqErr  gocql.RequestError
	)
	switch {
	case err == nil:
		return outcome.OK
	case errors.As(err, &unavail):
		return outcome.Unavailable
	case errors.As(err, &wto), errors.As(err, &rto):
		return outcome.Timeout
	case errors.As(err, &wf), errors.As(err, &rf):
		// replicas answered with an error (e.g. a disk failure): the
		// request reached them, so it is no availability problem
		return outcome.Other
	case errors.Is(err, gocql.ErrTimeoutNoResponse), errors.Is(err, context.DeadlineExceeded):
		return outcome.Timeout
	case errors.Is(err, gocql.ErrNoConnections), errors.Is(err, gocql.ErrConnectionClosed),
		errors.Is(err, gocql.ErrUnavailable), errors.Is(err, gocql.ErrSessionClosed),
		errors.Is(err, gocql.ErrNoStreams),
		errors.Is(err, gocql.ErrNoConnectionsStarted):
		return outcome.Unavailable
	case errors.As(err, &reqErr):
		switch reqErr.Code() {
		case codeOverloaded, codeUnauthorized, codeSyntax, codeInvalid, codeConfig:
			return outcome.Rejected
		case codeBootstrapping:
			return outcome.Unavailable
		case codeServer, codeTruncate:
			return outcome.Other
		}
		return outcome.Other
	}
	return outcome.GenericClass(err)
}

// classify wraps a gocql error of op with its class; a WriteTimeout
// becomes a *WriteTimeoutError so that its unknown outcome is visible.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var wto *gocql.RequestErrWriteTimeout
	if errors.As(err, &wto) {
		err = &WriteTimeoutError{Op: op, Consistency: wto.Consistency.String(), Received: wto.Received,
			BlockFor: wto.BlockFor, WriteType: wto.WriteType, Err: err}
		return outcome.Classified(outcome.Timeout, op, err)
	}
	return outcome.Classified(classOf(err), op, fmt.Errorf("cassandra: %w", err))
}
