package report

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/draw"
	"io"
	"math"
	"os"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"
)

// fonts holds the parsed Go fonts and faces by size for one rendering
// (layout measures with them; the rasterizer draws with them). Not safe for
// concurrent use.
type fonts struct {
	regular, bold *opentype.Font
	faces         map[faceKey]font.Face
}

type faceKey struct {
	size float64
	bold bool
}

func newFonts() (*fonts, error) {
	r, err := opentype.Parse(goregular.TTF)
	if err != nil {
		return nil, fmt.Errorf("report: font: %w", err)
	}
	b, err := opentype.Parse(gobold.TTF)
	if err != nil {
		return nil, fmt.Errorf("report: font: %w", err)
	}
	return &fonts{regular: r, bold: b, faces: map[faceKey]font.Face{}}, nil
}

func (f *fonts) face(size float64, bold bool) font.Face {
	k := faceKey{size, bold}
	if fc, ok := f.faces[k]; ok {
		return fc
	}
	src := f.regular
	if bold {
		src = f.bold
	}
	fc, err := opentype.NewFace(src, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingNone})
	if err != nil {
		// sizes are constants of this package: cannot happen
		panic(fmt.Sprintf("report: font face %v: %v", size, err))
	}
	f.faces[k] = fc
	return fc
}

// measure returns the advance width of s at size, in pixels.
func (f *fonts) measure(s string, size float64, bold bool) float64 {
	return float64(font.MeasureString(f.face(size, bold), s)) / 64
}

// pngScale is the pixel density of the PNGs: 2 device pixels per chart
// pixel, sharp enough for slides and papers.
const pngScale = 2

// writePNG rasterizes c at scale and encodes it as PNG to w.
func writePNG(w io.Writer, c *canvas, f *fonts, scale float64) error {
	return encodePNG(w, rasterize(c, f, scale))
}

// encodePNG writes an opaque image as an 8-bit RGB PNG. Unlike image/png,
// which tries five filters on every row, it filters every row with "Up"
// (the difference to the row above): charts repeat most rows almost
// exactly, so this compresses as well and encodes several times faster.
func encodePNG(w io.Writer, img *image.RGBA) error {
	b := img.Bounds()
	wd, ht := b.Dx(), b.Dy()
	var idat bytes.Buffer
	zw, err := zlib.NewWriterLevel(&idat, zlib.BestSpeed)
	if err != nil {
		return err
	}
	prev := make([]byte, 3*wd)
	cur := make([]byte, 1+3*wd)
	cur[0] = 2 // filter type Up
	for y := range ht {
		off := img.PixOffset(b.Min.X, b.Min.Y+y)
		src, dst, pv := img.Pix[off:off+4*wd], cur[1:1+3*wd], prev[:3*wd]
		for x, j := 0, 0; x+3 < len(src) && j+2 < len(dst); x, j = x+4, j+3 {
			r, g, bl := src[x], src[x+1], src[x+2]
			dst[j], dst[j+1], dst[j+2] = r-pv[j], g-pv[j+1], bl-pv[j+2]
			pv[j], pv[j+1], pv[j+2] = r, g, bl
		}
		if _, err := zw.Write(cur); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(wd))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(ht))
	ihdr[8], ihdr[9] = 8, 2 // 8 bits per sample, truecolour (RGB)
	if _, err := io.WriteString(w, "\x89PNG\r\n\x1a\n"); err != nil {
		return err
	}
	for _, ch := range []struct {
		typ  string
		data []byte
	}{{"IHDR", ihdr[:]}, {"IDAT", idat.Bytes()}, {"IEND", nil}} {
		var head [8]byte
		binary.BigEndian.PutUint32(head[0:], uint32(len(ch.data)))
		copy(head[4:], ch.typ)
		crc := crc32.NewIEEE()
		crc.Write(head[4:])
		crc.Write(ch.data)
		var tail [4]byte
		binary.BigEndian.PutUint32(tail[:], crc.Sum32())
		for _, part := range [][]byte{head[:], ch.data, tail[:]} {
			if _, err := w.Write(part); err != nil {
				return err
			}
		}
	}
	return nil
}

// writePNGFile writes c to path as PNG.
func writePNGFile(path string, c *canvas, f *fonts) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(out, 256<<10)
	err = writePNG(bw, c, f, pngScale)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// rasterize draws the canvas into an RGBA image.
func rasterize(c *canvas, f *fonts, scale float64) *image.RGBA {
	W, H := int(math.Ceil(c.w*scale)), int(math.Ceil(c.h*scale))
	img := image.NewRGBA(image.Rect(0, 0, W, H))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	r := &raster{img: img, s: scale, f: f}
	for i := range c.prims {
		p := &c.prims[i]
		switch p.kind {
		case primRect:
			if p.fill.A > 0 {
				r.fillRect(p.x, p.y, p.w, p.h, p.fill)
			}
			if p.width > 0 && p.stroke.A > 0 {
				x0, y0, x1, y1 := p.x, p.y, p.x+p.w, p.y+p.h
				r.stroke([][]float64{{x0, y0, x1, y0, x1, y1, x0, y1, x0, y0}}, p.width, 0, p.stroke)
			}
		case primPath:
			if p.class == "event-hit" || p.stroke.A < 0.01 {
				continue
			}
			r.stroke(p.segs, p.width, p.dash, p.stroke)
		case primText:
			r.text(p)
		}
	}
	return img
}

type raster struct {
	img     *image.RGBA
	maskPix []byte // scratch coverage
	s       float64
	f       *fonts
	z       vector.Rasterizer
}

func nrgba(c rgba) *image.Uniform {
	return image.NewUniform(color.NRGBA{c.R, c.G, c.B, uint8(math.Round(c.A * 255))})
}

func (r *raster) fillRect(x, y, w, h float64, c rgba) {
	rect := image.Rect(int(math.Round(x*r.s)), int(math.Round(y*r.s)), int(math.Round((x+w)*r.s)), int(math.Round((y+h)*r.s)))
	draw.Draw(r.img, rect.Intersect(r.img.Bounds()), nrgba(c), image.Point{}, draw.Over)
}

// stroke draws polylines of the given width (chart pixels) as one filled
// shape: a quadrilateral per segment and an octagon per joint, all wound
// the same way so that overlaps do not cancel (the rasterizer clamps the
// accumulated coverage).
func (r *raster) stroke(segs [][]float64, width, dash float64, c rgba) {
	hw := width * r.s / 2
	if hw < 0.5 {
		hw = 0.5
	}
	var shapes [][]float32
	addPoly := func(p []float32) {
		// enforce one orientation
		var area float32
		n := len(p) / 2
		for i := range n {
			j := (i + 1) % n
			area += p[2*i]*p[2*j+1] - p[2*j]*p[2*i+1]
		}
		if area < 0 {
			q := make([]float32, len(p))
			for i := range n {
				q[2*i], q[2*i+1] = p[2*(n-1-i)], p[2*(n-1-i)+1]
			}
			p = q
		}
		shapes = append(shapes, p)
	}
	seg := func(ax, ay, bx, by float64) {
		dx, dy := bx-ax, by-ay
		l := math.Hypot(dx, dy)
		if l == 0 {
			return
		}
		nx, ny := -dy/l*hw, dx/l*hw
		addPoly([]float32{float32(ax + nx), float32(ay + ny), float32(bx + nx), float32(by + ny),
			float32(bx - nx), float32(by - ny), float32(ax - nx), float32(ay - ny)})
	}
	joint := func(x, y float64) {
		p := make([]float32, 0, 16)
		for k := range 8 {
			a := float64(k) * math.Pi / 4
			p = append(p, float32(x+hw*math.Cos(a)), float32(y+hw*math.Sin(a)))
		}
		addPoly(p)
	}
	if len(segs) == 1 && len(segs[0]) == 4 && (segs[0][0] == segs[0][2] || segs[0][1] == segs[0][3]) {
		r.axisLine(segs[0], width, dash, c) // grid, frame, ticks, event lines: no rasterizer needed
		return
	}
	for _, s := range segs {
		pts := make([]float64, len(s))
		for i := range s {
			pts[i] = s[i] * r.s
		}
		if dash > 0 {
			r.dashed(pts, dash*r.s, seg)
			continue
		}
		for i := 0; i+3 < len(pts); i += 2 {
			seg(pts[i], pts[i+1], pts[i+2], pts[i+3])
		}
		if hw >= 1 || len(pts) == 2 {
			for i := 0; i+1 < len(pts); i += 2 {
				joint(pts[i], pts[i+1])
			}
		}
	}
	r.fill(shapes, c)
}

// axisLine draws a horizontal or vertical line (x0,y0,x1,y1) as
// rectangles.
func (r *raster) axisLine(l []float64, width, dash float64, c rgba) {
	x0, y0, x1, y1 := min(l[0], l[2]), min(l[1], l[3]), max(l[0], l[2]), max(l[1], l[3])
	hw := max(width/2, 0.5/r.s)
	vertical := x0 == x1
	length := x1 - x0
	if vertical {
		length = y1 - y0
	}
	step := length
	if dash > 0 {
		step = dash
	}
	for pos := 0.0; pos < length; pos += 2 * step {
		end := min(pos+step, length)
		if vertical {
			r.fillRect(x0-hw, y0+pos, 2*hw, end-pos, c)
		} else {
			r.fillRect(x0+pos, y0-hw, end-pos, 2*hw, c)
		}
	}
}

// dashed calls seg for the "on" pieces of a dashed polyline.
func (r *raster) dashed(pts []float64, dash float64, seg func(ax, ay, bx, by float64)) {
	on := true
	left := dash
	for i := 0; i+3 < len(pts); i += 2 {
		ax, ay, bx, by := pts[i], pts[i+1], pts[i+2], pts[i+3]
		l := math.Hypot(bx-ax, by-ay)
		pos := 0.0
		for pos < l {
			step := min(left, l-pos)
			if on {
				t0, t1 := pos/l, (pos+step)/l
				seg(ax+(bx-ax)*t0, ay+(by-ay)*t0, ax+(bx-ax)*t1, ay+(by-ay)*t1)
			}
			pos += step
			left -= step
			if left <= 1e-9 {
				on = !on
				left = dash
			}
		}
	}
}

// fill rasterizes polygons (device pixels) in colour c.
func (r *raster) fill(shapes [][]float32, c rgba) {
	if len(shapes) == 0 {
		return
	}
	minX, minY := float32(math.Inf(1)), float32(math.Inf(1))
	maxX, maxY := float32(math.Inf(-1)), float32(math.Inf(-1))
	for _, p := range shapes {
		for i := 0; i+1 < len(p); i += 2 {
			minX, maxX = min(minX, p[i]), max(maxX, p[i])
			minY, maxY = min(minY, p[i+1]), max(maxY, p[i+1])
		}
	}
	bounds := image.Rect(int(math.Floor(float64(minX)))-1, int(math.Floor(float64(minY)))-1,
		int(math.Ceil(float64(maxX)))+1, int(math.Ceil(float64(maxY)))+1).Intersect(r.img.Bounds())
	if bounds.Empty() {
		return
	}
	ox, oy := float32(bounds.Min.X), float32(bounds.Min.Y)
	r.z.Reset(bounds.Dx(), bounds.Dy())
	for _, p := range shapes {
		r.z.MoveTo(p[0]-ox, p[1]-oy)
		for i := 2; i+1 < len(p); i += 2 {
			r.z.LineTo(p[i]-ox, p[i+1]-oy)
		}
		r.z.ClosePath()
	}
	// coverage into an alpha mask (the rasterizer's fast path), then the
	// colour through the mask (image/draw skips uncovered pixels quickly)
	// (the mask's stride must be its width: the rasterizer's fast path
	// writes its rows contiguously)
	n := bounds.Dx() * bounds.Dy()
	if cap(r.maskPix) < n {
		r.maskPix = make([]byte, n)
	}
	mask := &image.Alpha{Pix: r.maskPix[:n], Stride: bounds.Dx(), Rect: image.Rect(0, 0, bounds.Dx(), bounds.Dy())}
	clear(mask.Pix)
	r.z.DrawOp = draw.Src
	r.z.Draw(mask, mask.Bounds(), image.Opaque, image.Point{})
	draw.DrawMask(r.img, bounds, nrgba(c), image.Point{}, mask, image.Point{}, draw.Over)
}

// text draws a text primitive; vertical text is drawn into a scratch image
// and rotated.
func (r *raster) text(p *prim) {
	if p.text == "" {
		return
	}
	face := r.f.face(p.size*r.s, p.bold)
	wpx := float64(font.MeasureString(face, p.text)) / 64
	off := 0.0
	switch p.anchor {
	case anchorMiddle:
		off = wpx / 2
	case anchorEnd:
		off = wpx
	}
	src := nrgba(p.fill)
	if !p.vertical {
		d := font.Drawer{Dst: r.img, Src: src, Face: face,
			Dot: fixed.P(int(math.Round(p.x*r.s-off)), int(math.Round(p.y*r.s)))}
		d.DrawString(p.text)
		return
	}
	m := face.Metrics()
	asc, desc := m.Ascent.Ceil(), m.Descent.Ceil()
	tw, th := int(math.Ceil(wpx))+2, asc+desc+2
	tmp := image.NewRGBA(image.Rect(0, 0, tw, th))
	d := font.Drawer{Dst: tmp, Src: src, Face: face, Dot: fixed.P(1, asc+1)}
	d.DrawString(p.text)
	// rotate -90°: tmp (x, y) -> (y, tw-1-x), then place centred on the
	// anchor (middle anchor assumed for vertical labels)
	rot := image.NewRGBA(image.Rect(0, 0, th, tw))
	for y := range th {
		for x := range tw {
			o := tmp.PixOffset(x, y)
			q := rot.PixOffset(y, tw-1-x)
			copy(rot.Pix[q:q+4], tmp.Pix[o:o+4])
		}
	}
	cx, cy := int(math.Round(p.x*r.s)), int(math.Round(p.y*r.s))
	// the baseline sits at x; the glyphs extend to its left (ascent)
	dst := image.Rect(cx-asc-1, cy-tw/2, cx-asc-1+th, cy-tw/2+tw)
	draw.Draw(r.img, dst, rot, image.Point{}, draw.Over)
}
