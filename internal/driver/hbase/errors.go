package hbase

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/faultbench/faultbench/internal/hbasethrift"
	"github.com/faultbench/faultbench/internal/outcome"
)

// classOf returns the outcome class of an error of the gateway or of the
// connection to it. The gateway answers TIOError with the HBase client's
// exception text once its retries are spent: a timeout of the operation or
// of an RPC is Timeout (a write's outcome is unknown: it may be applied),
// a region that is not served or a server that cannot be reached is
// Unavailable. TIllegalArgument is Rejected. A lost or timed-out
// connection to the gateway is classified like any network error.
func classOf(err error) outcome.Class {
	var ioe *hbasethrift.TIOError
	var iae *hbasethrift.TIllegalArgument
	var te thrift.TTransportException
	switch {
	case err == nil:
		return outcome.OK
	case errors.Is(err, outcome.ErrNotFound):
		return outcome.NotFound
	case errors.As(err, &iae):
		return outcome.Rejected
	case errors.As(err, &ioe):
		return ioClass(ioe.GetMessage())
	case errors.As(err, &te):
		if te.TypeId() == thrift.TIMED_OUT {
			return outcome.Timeout
		}
		if c := outcome.GenericClass(te.Err()); c != outcome.Other {
			return c
		}
		return outcome.Unavailable
	}
	return outcome.GenericClass(err)
}

// ioClass classifies the HBase client's exception text.
func ioClass(msg string) outcome.Class {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "timeout"), strings.Contains(m, "timed out"):
		return outcome.Timeout
	case strings.Contains(m, "tabledisabled"), strings.Contains(m, "tablenotfound"), strings.Contains(m, "nosuchcolumnfamily"),
		strings.Contains(m, "donotretry"):
		return outcome.Rejected
	case strings.Contains(m, "notservingregion"), strings.Contains(m, "regionoffline"), strings.Contains(m, "regionmoved"),
		strings.Contains(m, "regionopening"), strings.Contains(m, "servernotrunning"), strings.Contains(m, "regionserverstopped"),
		strings.Contains(m, "regiontoobusy"), strings.Contains(m, "connect"), strings.Contains(m, "retriesexhausted"),
		strings.Contains(m, "pleaseholdexception"), strings.Contains(m, "callqueuetoobig"):
		return outcome.Unavailable
	}
	return outcome.Other
}

// classify wraps an error of op with its class.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var ioe *hbasethrift.TIOError
	if errors.As(err, &ioe) {
		msg := ioe.GetMessage()
		if i := strings.IndexByte(msg, '\n'); i > 0 {
			msg = msg[:i]
		}
		err = fmt.Errorf("%s: %w", msg, err)
	}
	return outcome.Classified(classOf(err), op, fmt.Errorf("hbase: %w", err))
}
