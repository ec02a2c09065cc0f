package report

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"testing"
)

// TestEncodePNG round-trips images through encodePNG and image/png.
func TestEncodePNG(t *testing.T) {
	tests := []struct {
		name string
		w, h int
		fill func(x, y int) color.RGBA
	}{
		{"white", 7, 3, func(x, y int) color.RGBA { return color.RGBA{255, 255, 255, 255} }},
		{"gradient", 64, 48, func(x, y int) color.RGBA { return color.RGBA{uint8(x * 4), uint8(y * 5), uint8(x ^ y), 255} }},
		{"one pixel", 1, 1, func(x, y int) color.RGBA { return color.RGBA{1, 2, 3, 255} }},
		{"noise", 33, 17, func(x, y int) color.RGBA {
			v := uint32(x*7919+y*104729) * 2654435761
			return color.RGBA{uint8(v), uint8(v >> 8), uint8(v >> 16), 255}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			img := image.NewRGBA(image.Rect(0, 0, tc.w, tc.h))
			for y := range tc.h {
				for x := range tc.w {
					img.SetRGBA(x, y, tc.fill(x, y))
				}
			}
			var b bytes.Buffer
			if err := encodePNG(&b, img); err != nil {
				t.Fatal(err)
			}
			got, err := png.Decode(&b)
			if err != nil {
				t.Fatal(err)
			}
			if got.Bounds() != img.Bounds() {
				t.Fatalf("bounds %v, want %v", got.Bounds(), img.Bounds())
			}
			for y := range tc.h {
				for x := range tc.w {
					r, g, bl, a := got.At(x, y).RGBA()
					want := tc.fill(x, y)
					if uint8(r>>8) != want.R || uint8(g>>8) != want.G || uint8(bl>>8) != want.B || a != 0xffff {
						t.Fatalf("pixel %d,%d = %v, want %v", x, y, got.At(x, y), want)
					}
				}
			}
		})
	}
}

// TestRasterizeLine draws one diagonal line with the rasterizer (in a
// canvas larger than the line's bounding box) and checks that it is drawn
// where it is and nowhere else.
func TestRasterizeLine(t *testing.T) {
	f, err := newFonts()
	if err != nil {
		t.Fatal(err)
	}
	for _, scale := range []float64{1, 2} {
		t.Run(fnum(scale, 0)+"x", func(t *testing.T) {
			c := &canvas{w: 200, h: 120}
			c.rect(0, 0, 200, 120, colPlotBg.solid(), "bg", "")
			const x0, y0, x1, y1 = 50.0, 30.0, 150.0, 90.0
			c.add(prim{kind: primPath, segs: [][]float64{{x0, y0, 100, 60, x1, y1}}, stroke: rgb(0x1f4e99).solid(), width: 2})
			img := rasterize(c, f, scale)
			dist := func(px, py float64) float64 {
				// distance from (px,py) to the segment, chart pixels
				dx, dy := x1-x0, y1-y0
				u := max(0, min(1, ((px-x0)*dx+(py-y0)*dy)/(dx*dx+dy*dy)))
				return math.Hypot(px-(x0+u*dx), py-(y0+u*dy))
			}
			inked := 0
			b := img.Bounds()
			for y := b.Min.Y; y < b.Max.Y; y++ {
				for x := b.Min.X; x < b.Max.X; x++ {
					p := img.RGBAAt(x, y)
					if p == (color.RGBA{255, 255, 255, 255}) {
						continue
					}
					inked++
					if d := dist((float64(x)+0.5)/scale, (float64(y)+0.5)/scale); d > 2.5 {
						t.Fatalf("pixel %d,%d is %v but %.1f px from the line", x, y, p, d)
					}
				}
			}
			// about length × width device pixels
			want := math.Hypot(x1-x0, y1-y0) * 2 * scale * scale
			if float64(inked) < want*0.7 || float64(inked) > want*2 {
				t.Errorf("%d pixels inked, want about %.0f", inked, want)
			}
			mid := img.RGBAAt(int(100*scale), int(60*scale))
			if mid.B < 100 || mid.R > 100 {
				t.Errorf("the line's middle is %v, want the line's blue", mid)
			}
		})
	}
}
