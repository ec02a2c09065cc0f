package history

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// parser decodes the JSON of one history line. It is written by hand for
// the checkers' speed (a million transactions are read in seconds); it
// accepts any valid JSON object of this shape (keys in any order,
// whitespace, escapes, unknown keys skipped) and numbers that are integers.
type parser struct {
	b []byte
	i int
}

func (p *parser) errf(format string, args ...any) error {
	return fmt.Errorf("bad JSON at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) peek() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *parser) expect(c byte) error {
	if p.peek() != c {
		return p.errf("want %q", c)
	}
	p.i++
	return nil
}

// more is the separator logic of objects and arrays: after '{' or '[' it
// reports whether an element follows; after an element it eats ','.
func (p *parser) more(end byte, first bool) (bool, error) {
	c := p.peek()
	if c == end {
		p.i++
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, p.errf("want ',' or %q", end)
		}
		p.i++
	}
	return true, nil
}

// rawString returns a string's bytes when it has no escapes (no copy), or
// its decoded value.
func (p *parser) rawString() ([]byte, error) {
	if err := p.expect('"'); err != nil {
		return nil, err
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return p.b[start : p.i-1], nil
		case c == '\\':
			p.i = start
			return p.escapedString()
		case c < 0x20:
			return nil, p.errf("control character in string")
		}
		p.i++
	}
	return nil, p.errf("unterminated string")
}

func (p *parser) escapedString() ([]byte, error) {
	var out []byte
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return out, nil
		case c < 0x20:
			return nil, p.errf("control character in string")
		case c != '\\':
			out = append(out, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.b) {
			break
		}
		e := p.b[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return nil, p.errf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				save := p.i
				if p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
					p.i += 2
					if r2, ok := p.hex4(); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							out = utf8.AppendRune(out, d)
							continue
						}
					}
				}
				p.i = save
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, p.errf("bad escape \\%c", e)
		}
	}
	return nil, p.errf("unterminated string")
}

func (p *parser) hex4() (rune, bool) {
	if p.i+4 > len(p.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.b[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(v), true
}

func (p *parser) str() (string, error) {
	b, err := p.rawString()
	return string(b), err
}

func (p *parser) int() (int64, error) {
	p.ws()
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	var v uint64
	digits := 0
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		d := uint64(p.b[p.i] - '0')
		if v > (1<<63-d)/10 {
			return 0, p.errf("integer out of range")
		}
		v = v*10 + d
		p.i++
		digits++
	}
	if digits == 0 {
		return 0, p.errf("want an integer")
	}
	if p.i < len(p.b) {
		if c := p.b[p.i]; c == '.' || c == 'e' || c == 'E' {
			return 0, p.errf("want an integer, got a fraction or exponent")
		}
	}
	if p.b[start] == '-' {
		return -int64(v), nil
	}
	if v > 1<<63-1 {
		return 0, p.errf("integer out of range")
	}
	return int64(v), nil
}

// literal eats true, false or null.
func (p *parser) literal() (string, error) {
	p.ws()
	for _, l := range []string{"true", "false", "null"} {
		if len(p.b)-p.i >= len(l) && string(p.b[p.i:p.i+len(l)]) == l {
			p.i += len(l)
			return l, nil
		}
	}
	return "", p.errf("want a value")
}

// skip eats any JSON value (unknown keys).
func (p *parser) skip() error {
	switch p.peek() {
	case '"':
		_, err := p.rawString()
		return err
	case '{':
		p.i++
		for first := true; ; first = false {
			ok, err := p.more('}', first)
			if err != nil || !ok {
				return err
			}
			if _, err := p.rawString(); err != nil {
				return err
			}
			if err := p.expect(':'); err != nil {
				return err
			}
			if err := p.skip(); err != nil {
				return err
			}
		}
	case '[':
		p.i++
		for first := true; ; first = false {
			ok, err := p.more(']', first)
			if err != nil || !ok {
				return err
			}
			if err := p.skip(); err != nil {
				return err
			}
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		p.ws()
		for p.i < len(p.b) && (p.b[p.i] >= '0' && p.b[p.i] <= '9' || p.b[p.i] == '-' || p.b[p.i] == '+' || p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
			p.i++
		}
		return nil
	}
	_, err := p.literal()
	return err
}

// object calls field for every key of an object.
func (p *parser) object(field func(key []byte) error) error {
	if err := p.expect('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		ok, err := p.more('}', first)
		if err != nil || !ok {
			return err
		}
		key, err := p.rawString()
		if err != nil {
			return err
		}
		if err := p.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
	}
}

func funcOf(b []byte) Func {
	switch string(b) {
	case "r":
		return Read
	case "w":
		return Write
	case "append":
		return Append
	case "cas":
		return CAS
	case "add":
		return Add
	}
	return Func(b)
}

func (p *parser) mop(m *Mop) error {
	return p.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "f":
			var b []byte
			b, err = p.rawString()
			m.F = funcOf(b)
		case "k":
			m.Key, err = p.str()
		case "v":
			m.Value, err = p.int()
			m.HasValue = true
		case "n":
			m.New, err = p.int()
		case "l":
			if p.peek() == 'n' {
				_, err = p.literal()
				return err
			}
			m.IsList = true
			if m.List == nil {
				m.List = []int64{}
			}
			if err := p.expect('['); err != nil {
				return err
			}
			for first := true; ; first = false {
				ok, err := p.more(']', first)
				if err != nil || !ok {
					return err
				}
				v, err := p.int()
				if err != nil {
					return err
				}
				m.List = append(m.List, v)
			}
		default:
			err = p.skip()
		}
		return err
	})
}

// parseLine decodes one line into op (errHeader for a valid header),
// reusing op's Mops and their List arrays.
func parseLine(line []byte, op *Op) error {
	p := parser{b: line}
	mops := op.Mops[:0]
	*op = Op{}
	var header, hasP, hasO bool
	var version int64
	err := p.object(func(key []byte) error {
		var err error
		switch string(key) {
		case headerKey:
			header = true
			version, err = p.int()
		case "p":
			var v int64
			v, err = p.int()
			op.Process, hasP = int(v), true
		case "n":
			op.Name, err = p.str()
		case "s":
			op.Invoke, err = p.int()
		case "e":
			op.Complete, err = p.int()
		case "o":
			var b []byte
			if b, err = p.rawString(); err == nil {
				op.Outcome, err = ParseOutcome(string(b))
				hasO = true
			}
		case "err":
			op.Error, err = p.str()
		case "m":
			if err := p.expect('['); err != nil {
				return err
			}
			op.Mops = mops
			if op.Mops == nil {
				op.Mops = []Mop{}
			}
			for first := true; ; first = false {
				ok, err := p.more(']', first)
				if err != nil || !ok {
					return err
				}
				n := len(op.Mops)
				if n < cap(op.Mops) {
					op.Mops = op.Mops[:n+1]
					m := &op.Mops[n]
					*m = Mop{List: m.List[:0]}
				} else {
					op.Mops = append(op.Mops, Mop{})
				}
				if err := p.mop(&op.Mops[n]); err != nil {
					return err
				}
			}
		default:
			err = p.skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	if p.peek() != 0 {
		return p.errf("data after the object")
	}
	if header {
		if version != Version {
			return fmt.Errorf("history format version %d, this faultbench reads %d", version, Version)
		}
		return errHeader
	}
	if !hasP {
		return errors.New(`no process ("p")`)
	}
	if !hasO {
		return errors.New(`no outcome ("o")`)
	}
	for i := range op.Mops {
		if m := &op.Mops[i]; m.F != Read || m.IsList {
			m.HasValue = false
		}
	}
	return op.Validate()
}
