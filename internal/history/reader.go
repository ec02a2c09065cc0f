package history

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/faultbench/faultbench/internal/runfile"
)

// Reader reads a history line by line.
type Reader struct {
	br   *bufio.Reader
	buf  []byte
	line int
	torn bool
}

// NewReader reads the history in r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 256<<10)}
}

// Next decodes the next operation into op, reusing op's Mops and their
// List arrays (pass a new Op to keep each). It returns io.EOF after the
// last one. A last line without its newline that does not decode (the
// writer was killed while writing it) is skipped and Torn reports it; any
// other bad line is an error naming its line number.
func (r *Reader) Next(op *Op) error {
	for {
		line, complete, err := r.readLine()
		if err != nil {
			return err
		}
		r.line++
		if len(line) == 0 {
			continue
		}
		perr := parseLine(line, op)
		switch {
		case perr == nil:
			return nil
		case errors.Is(perr, errHeader):
			continue
		case !complete:
			r.torn = true
			return io.EOF
		}
		return fmt.Errorf("history line %d: %w", r.line, perr)
	}
}

// readLine returns the next line without its newline; complete is false
// for a last line that has none.
func (r *Reader) readLine() (line []byte, complete bool, err error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		r.buf = append(r.buf, chunk...)
		switch {
		case err == nil:
			return r.buf[:len(r.buf)-1], true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(r.buf) == 0 {
				return nil, false, io.EOF
			}
			return r.buf, false, nil
		default:
			return nil, false, fmt.Errorf("reading history: %w", err)
		}
	}
}

// Torn reports whether the last line was torn (and skipped).
func (r *Reader) Torn() bool { return r.torn }

// Line is the number of lines read so far.
func (r *Reader) Line() int { return r.line }

// ReadFile reads a whole history file; torn reports a skipped torn last
// line.
func ReadFile(path string) (ops []Op, torn bool, err error) {
	f, err := runfile.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("opening history: %w", err)
	}
	defer f.Close()
	r := NewReader(f)
	for {
		var op Op
		err := r.Next(&op)
		if errors.Is(err, io.EOF) {
			return ops, r.Torn(), nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", path, err)
		}
		ops = append(ops, op)
	}
}

// Each calls fn with every operation of the history file at path in file
// order, without keeping them (the checkers' streaming read). op, its Mops
// and their Lists are only valid during the call: the next line reuses
// them. It returns whether the last line was torn; it
// stops with ctx's error when ctx ends.
func Each(ctx context.Context, path string, fn func(op *Op) error) (torn bool, err error) {
	f, err := runfile.Open(path)
	if err != nil {
		return false, fmt.Errorf("opening history: %w", err)
	}
	defer f.Close()
	r := NewReader(f)
	var op Op
	for {
		err := r.Next(&op)
		if errors.Is(err, io.EOF) {
			return r.Torn(), nil
		}
		if err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
		if r.line%4096 == 0 && ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err := fn(&op); err != nil {
			return false, err
		}
	}
}
