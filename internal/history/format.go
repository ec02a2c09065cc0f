package history

import (
	"errors"
	"strconv"
	"unicode/utf8"
)

// headerKey names the header line's version field.
const headerKey = "faultbench_history"

// appendHeader appends the header line.
func appendHeader(b []byte) []byte {
	b = append(b, `{"`+headerKey+`":`...)
	b = strconv.AppendInt(b, Version, 10)
	return append(b, ",\"clock\":\"ns since the run's t = 0, monotonic\"}\n"...)
}

// AppendLine appends op's line (with its newline) to b: the encoder every
// Writer uses, written by hand since it runs once per client operation.
func AppendLine(b []byte, op *Op) []byte {
	b = append(b, `{"p":`...)
	b = strconv.AppendInt(b, int64(op.Process), 10)
	if op.Name != "" {
		b = append(b, `,"n":`...)
		b = appendString(b, op.Name)
	}
	b = append(b, `,"s":`...)
	b = strconv.AppendInt(b, op.Invoke, 10)
	b = append(b, `,"e":`...)
	b = strconv.AppendInt(b, op.Complete, 10)
	b = append(b, `,"o":"`...)
	b = append(b, op.Outcome.String()...)
	b = append(b, `","m":[`...)
	for i := range op.Mops {
		m := &op.Mops[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"f":`...)
		b = appendString(b, string(m.F))
		b = append(b, `,"k":`...)
		b = appendString(b, m.Key)
		switch {
		case m.F == Read && m.IsList:
			b = append(b, `,"l":[`...)
			for j, v := range m.List {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, v, 10)
			}
			b = append(b, ']')
		case m.F == Read:
			if m.HasValue {
				b = append(b, `,"v":`...)
				b = strconv.AppendInt(b, m.Value, 10)
			}
		default:
			b = append(b, `,"v":`...)
			b = strconv.AppendInt(b, m.Value, 10)
			if m.F == CAS {
				b = append(b, `,"n":`...)
				b = strconv.AppendInt(b, m.New, 10)
			}
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if op.Error != "" {
		b = append(b, `,"err":`...)
		b = appendString(b, op.Error)
	}
	return append(b, "}\n"...)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// errHeader marks a header line.
var errHeader = errors.New("header line")
