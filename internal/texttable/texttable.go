// Package texttable lays out rows of cells as aligned plain-text columns,
// the form of every table faultbench prints on a terminal (the availability
// table, compare's text output, the Under Pressure Benchmark's tables).
package texttable

import (
	"strings"
	"unicode/utf8"
)

// Options say how to lay a table out.
type Options struct {
	// Indent starts every line.
	Indent string
	// LastLeft left-aligns the last column too (a free-text column).
	LastLeft bool
}

// Format lays rows out: the first column left-aligned, the others
// right-aligned (the last one left-aligned with LastLeft), two spaces
// apart, trailing blanks trimmed, one line per row.
func Format(rows [][]string, o Options) string {
	var width []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var out strings.Builder
	for _, r := range rows {
		var b strings.Builder
		b.WriteString(o.Indent)
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if i == 0 || (o.LastLeft && i == len(r)-1) {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		out.WriteString(strings.TrimRight(b.String(), " ") + "\n")
	}
	return out.String()
}
