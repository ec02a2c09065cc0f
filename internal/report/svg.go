package report

import (
	"strconv"
	"strings"
)

// svgFont is the font stack of SVG text; layout measures with the Go
// fonts the PNGs use, which the stack lists first.
const svgFont = `"Go", "DejaVu Sans", "Liberation Sans", Arial, Helvetica, sans-serif`

// writeSVG appends c as an inline SVG element to b. Every element's text
// is escaped; fault spans and events carry a <title> (the hover text).
func writeSVG(b *strings.Builder, c *canvas) {
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="chart-`)
	b.WriteString(esc(c.id))
	b.WriteString(`" viewBox="0 0 `)
	b.WriteString(fnum(c.w, 1) + " " + fnum(c.h, 1))
	b.WriteString(`" width="` + fnum(c.w, 1) + `" height="` + fnum(c.h, 1))
	b.WriteString(`" role="img" aria-label="`)
	b.WriteString(esc(c.title))
	b.WriteString(`" font-family='` + svgFont + `'>`)
	b.WriteString("\n<title>" + esc(c.title) + "</title>\n")
	for i := range c.prims {
		p := &c.prims[i]
		switch p.kind {
		case primRect:
			b.WriteString(`<rect`)
			attr(b, "class", p.class)
			b.WriteString(` x="` + fnum(p.x, 1) + `" y="` + fnum(p.y, 1) + `" width="` + fnum(p.w, 1) + `" height="` + fnum(p.h, 1) + `"`)
			paint(b, "fill", p.fill)
			if p.width > 0 {
				paint(b, "stroke", p.stroke)
				b.WriteString(` stroke-width="` + fnum(p.width, 2) + `"`)
			}
			extra(b, p.attrs)
			if p.title != "" {
				b.WriteString("><title>" + esc(p.title) + "</title></rect>\n")
			} else {
				b.WriteString("/>\n")
			}
		case primPath:
			b.WriteString(`<path`)
			attr(b, "class", p.class)
			b.WriteString(` d="`)
			for _, seg := range p.segs {
				for j := 0; j+1 < len(seg); j += 2 {
					if j == 0 {
						b.WriteByte('M')
					} else {
						b.WriteByte('L')
					}
					b.WriteString(fnum(seg[j], 1))
					b.WriteByte(' ')
					b.WriteString(fnum(seg[j+1], 1))
				}
			}
			b.WriteString(`" fill="none"`)
			paint(b, "stroke", p.stroke)
			b.WriteString(` stroke-width="` + fnum(p.width, 2) + `" stroke-linejoin="round" stroke-linecap="round"`)
			if p.dash > 0 {
				b.WriteString(` stroke-dasharray="` + fnum(p.dash, 1) + " " + fnum(p.dash, 1) + `"`)
			}
			extra(b, p.attrs)
			b.WriteString("/>\n")
		case primText:
			if p.text == "" {
				continue
			}
			b.WriteString(`<text x="` + fnum(p.x, 1) + `" y="` + fnum(p.y, 1) + `" font-size="` + fnum(p.size, 1) + `"`)
			switch p.anchor {
			case anchorMiddle:
				b.WriteString(` text-anchor="middle"`)
			case anchorEnd:
				b.WriteString(` text-anchor="end"`)
			}
			if p.bold {
				b.WriteString(` font-weight="bold"`)
			}
			if p.vertical {
				b.WriteString(` transform="rotate(-90 ` + fnum(p.x, 1) + " " + fnum(p.y, 1) + `)"`)
			}
			paint(b, "fill", p.fill)
			b.WriteString(">" + esc(p.text) + "</text>\n")
		case primGroup:
			b.WriteString(`<g`)
			attr(b, "class", p.class)
			extra(b, p.attrs)
			b.WriteString(">")
			if p.title != "" {
				b.WriteString("<title>" + esc(p.title) + "</title>")
			}
			b.WriteString("\n")
		case primEnd:
			b.WriteString("</g>\n")
		case primLink:
			b.WriteString(`<a href="` + esc(p.title) + `">` + "\n")
		case primLinkEnd:
			b.WriteString("</a>\n")
		}
	}
	b.WriteString("</svg>\n")
}

func attr(b *strings.Builder, name, v string) {
	if v != "" {
		b.WriteString(" " + name + `="` + esc(v) + `"`)
	}
}

func extra(b *strings.Builder, kv []string) {
	for i := 0; i+1 < len(kv); i += 2 {
		attr(b, kv[i], kv[i+1])
	}
}

// paint writes a fill or stroke colour with its opacity ("none" when
// fully transparent).
func paint(b *strings.Builder, name string, c rgba) {
	if c.A <= 0 {
		b.WriteString(" " + name + `="none"`)
		return
	}
	b.WriteString(" " + name + `="` + c.css() + `"`)
	if c.A < 1 {
		b.WriteString(" " + name + `-opacity="` + strconv.FormatFloat(c.A, 'f', 2, 64) + `"`)
	}
}

// esc escapes text for XML/HTML content and attribute values.
func esc(s string) string {
	if !strings.ContainsAny(s, `<>&"'`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&#34;")
		case '\'':
			b.WriteString("&#39;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
