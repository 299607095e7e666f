package heatmap

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/attn-go/attn/backend"
)

// geometry is where a figure's parts land in its raster image, found by
// the same layout Write uses.
type geometry struct {
	f           *figure
	dpi         float64
	cells, bar  draw.Canvas
	size        image.Point
	first, last color.Color // the palette's ends: weight 0 and vmax
}

func layoutOf(t *testing.T, rows, cols int, w []float32, opt *Options) geometry {
	t.Helper()
	f, _, err := plan("png", rows, cols, w, opt)
	if err != nil {
		t.Fatal(err)
	}
	c := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: f.width, Y: f.height}}}
	_, cells, barC := f.regions(c)
	pal := f.hm.Palette.Colors()
	g := geometry{f: f, dpi: float64(f.dpi), cells: cells, bar: f.bar.DataCanvas(barC), first: pal[0], last: pal[len(pal)-1]}
	g.size = image.Pt(int(math.Round(f.width.Dots(g.dpi))), int(math.Round(f.height.Dots(g.dpi))))
	return g
}

// pixel is the image pixel under the point p of the canvas (whose y
// grows upwards).
func (g geometry) pixel(img image.Image, p vg.Point) color.Color {
	x := int(p.X.Dots(g.dpi))
	y := int((g.f.height - p.Y).Dots(g.dpi))
	return img.At(x, y)
}

// cellPoint is a point inside cell (i, j): its centre, or a quarter of
// the way down from its top edge when the cell holds its value as text.
func (g geometry) cellPoint(i, j int) vg.Point {
	rows, cols := g.f.g.rows, g.f.g.cols
	cw := g.cells.Size().X / vg.Length(cols)
	ch := g.cells.Size().Y / vg.Length(rows)
	p := vg.Point{X: g.cells.Min.X + (vg.Length(j)+0.5)*cw, Y: g.cells.Max.Y - (vg.Length(i)+0.5)*ch}
	if g.f.values != nil {
		p.Y += ch / 4
	}
	return p
}

// hex prints a colour as #rrggbb.
func hex(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

func dist(a, b color.Color) float64 {
	ar, ag, ab, _ := a.RGBA()
	br, bg, bb, _ := b.RGBA()
	d := func(x, y uint32) float64 { return (float64(x) - float64(y)) / 0xffff }
	return math.Sqrt(d(ar, br)*d(ar, br) + d(ag, bg)*d(ag, bg) + d(ab, bb)*d(ab, bb))
}

func render(t *testing.T, rows, cols int, w []float32, opt *Options) image.Image {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, "png", rows, cols, w, opt); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("the PNG does not decode: %v", err)
	}
	return img
}

// oneHot is a rows × cols matrix with 1 at the given cells and 0
// elsewhere.
func oneHot(rows, cols int, at ...[2]int) []float32 {
	w := make([]float32, rows*cols)
	for _, a := range at {
		w[a[0]*cols+a[1]] = 1
	}
	return w
}

func diagonal(n int) [][2]int {
	var at [][2]int
	for i := range n {
		at = append(at, [2]int{i, i})
	}
	return at
}

// TestWriteCells draws matrices whose cells are 0 or the maximum and
// checks, pixel by pixel at each cell, that the picture has the right
// size, that row 0 is at the top and column 0 at the left, and that the
// colour bar runs from the light end at the bottom to the dark end at
// the top.
func TestWriteCells(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rows, cols int
		high       [][2]int
		opt        Options
	}{
		{name: "diagonal 3 labelled", rows: 3, cols: 3, high: diagonal(3),
			opt: Options{Title: "Self-attention", RowLabels: []string{"input 1", "input 2", "input 3"}, ColLabels: []string{"input 1", "input 2", "input 3"}}},
		{name: "top right corner", rows: 4, cols: 6, high: [][2]int{{0, 5}}},
		{name: "bottom left corner", rows: 6, cols: 4, high: [][2]int{{5, 0}}},
		{name: "decode row", rows: 1, cols: 9, high: [][2]int{{0, 2}}},
		{name: "column", rows: 7, cols: 1, high: [][2]int{{1, 0}}},
		{name: "one cell", rows: 1, cols: 1, high: [][2]int{{0, 0}}},
		{name: "anti-diagonal 13 unannotated", rows: 13, cols: 13, high: [][2]int{{0, 12}, {6, 6}, {12, 0}}},
		{name: "annotated 20", rows: 20, cols: 20, high: diagonal(20), opt: Options{Annotate: AnnotateOn}},
		{name: "fixed size", rows: 5, cols: 8, high: [][2]int{{0, 0}, {4, 7}}, opt: Options{Width: 6 * vg.Inch, Height: 3 * vg.Inch, DPI: 96}},
		{name: "fixed width", rows: 5, cols: 8, high: [][2]int{{4, 0}}, opt: Options{Width: 5 * vg.Inch}},
		{name: "raster 130", rows: 130, cols: 130, high: [][2]int{{0, 129}, {129, 0}, {64, 64}}},
		{name: "raster 300x2", rows: 300, cols: 2, high: [][2]int{{0, 1}, {299, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := oneHot(tc.rows, tc.cols, tc.high...)
			in := slices.Clone(w)
			img := render(t, tc.rows, tc.cols, w, &tc.opt)
			if !slices.Equal(w, in) {
				t.Fatal("Write modified the weights")
			}
			g := layoutOf(t, tc.rows, tc.cols, w, &tc.opt)
			if got := img.Bounds().Size(); got != g.size {
				t.Fatalf("image is %v pixels, want %v", got, g.size)
			}
			if tc.opt.Width > 0 {
				if want := int(math.Round(tc.opt.Width.Dots(g.dpi))); img.Bounds().Dx() != want {
					t.Errorf("image is %d pixels wide, want %d", img.Bounds().Dx(), want)
				}
			}
			if tc.opt.Height > 0 {
				if want := int(math.Round(tc.opt.Height.Dots(g.dpi))); img.Bounds().Dy() != want {
					t.Errorf("image is %d pixels high, want %d", img.Bounds().Dy(), want)
				}
			}
			if dist(g.first, g.last) < 0.5 {
				t.Fatalf("palette ends %v and %v are too alike", g.first, g.last)
			}
			for i := range tc.rows {
				for j := range tc.cols {
					want, other := g.first, g.last
					if w[i*tc.cols+j] == 1 {
						want, other = other, want
					}
					got := g.pixel(img, g.cellPoint(i, j))
					if dist(got, want) >= dist(got, other) {
						t.Fatalf("cell (%d, %d) of weight %v is %s, nearer %s than %s", i, j, w[i*tc.cols+j], hex(got), hex(other), hex(want))
					}
				}
			}
			// The colour bar: light at the bottom, dark at the top.
			mid := (g.bar.Min.X + g.bar.Max.X) / 2
			h := g.bar.Size().Y
			if got := g.pixel(img, vg.Point{X: mid, Y: g.bar.Min.Y + h/50}); dist(got, g.first) > 0.1 {
				t.Errorf("bottom of the colour bar is %s, want about %s", hex(got), hex(g.first))
			}
			if got := g.pixel(img, vg.Point{X: mid, Y: g.bar.Max.Y - h/50}); dist(got, g.last) > 0.1 {
				t.Errorf("top of the colour bar is %s, want about %s", hex(got), hex(g.last))
			}
		})
	}
}

// TestWeightGrid checks the grid plotter.HeatMap draws: the grid point
// nearest the position of matrix cell (i, j) holds its weight, for one
// grid point per cell and for several, and the grid spans the cells.
func TestWeightGrid(t *testing.T) {
	const rows, cols = 3, 4
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(i)
	}
	for _, k := range [][2]int{{1, 1}, {3, 2}, {1, 5}} {
		g := &weightGrid{rows: rows, cols: cols, kx: k[0], ky: k[1], w: w, vmax: 11}
		gc, gr := g.Dims()
		if gc != cols*k[0] || gr != rows*k[1] {
			t.Fatalf("k %v: grid %d×%d", k, gc, gr)
		}
		for c := range gc {
			for r := range gr {
				j := int(math.Round(g.X(c)))
				i := rows - 1 - int(math.Round(g.Y(r)))
				if got := g.Z(c, r); got != float64(w[i*cols+j]) {
					t.Fatalf("k %v: grid point (%d, %d) at (%v, %v) is %v, want cell (%d, %d) = %v", k, c, r, g.X(c), g.Y(r), got, i, j, w[i*cols+j])
				}
			}
		}
		hm := plotter.NewHeatMap(g, palette.Heat(4, 1))
		x0, x1, y0, y1 := hm.DataRange()
		if x0 != -0.5 || x1 != cols-0.5 || math.Abs(y0+0.5) > 1e-12 || math.Abs(y1-(rows-0.5)) > 1e-12 {
			t.Errorf("k %v: grid spans x %v to %v, y %v to %v; want the cells, -0.5 to %v and %v", k, x0, x1, y0, y1, cols-0.5, rows-0.5)
		}
		if g.y(0) != rows-1 {
			t.Errorf("row 0 is at y %v, want the top, %d", g.y(0), rows-1)
		}
	}
}

// TestWriteColourRange checks that Max sets the top of the colour range:
// a weight of 0.5 is the darkest colour with the default range [0, 0.5]
// and halfway with Max 1; weights above Max take the last colour.
func TestWriteColourRange(t *testing.T) {
	w := []float32{0.5, 0, 0.25, 0.25}
	auto := layoutOf(t, 2, 2, w, &Options{})
	img := render(t, 2, 2, w, &Options{})
	if got := auto.pixel(img, auto.cellPoint(0, 0)); dist(got, auto.last) > 0.05 {
		t.Errorf("the largest weight is %s, want the last colour %s", hex(got), hex(auto.last))
	}
	one := layoutOf(t, 2, 2, w, &Options{Max: 1})
	img = render(t, 2, 2, w, &Options{Max: 1})
	got := one.pixel(img, one.cellPoint(0, 0))
	if dist(got, one.last) < 0.1 || dist(got, one.first) < 0.1 {
		t.Errorf("0.5 of a [0, 1] range is %s, too near an end (%s, %s)", hex(got), hex(one.first), hex(one.last))
	}
	low := layoutOf(t, 2, 2, w, &Options{Max: 0.25})
	img = render(t, 2, 2, w, &Options{Max: 0.25})
	if got := low.pixel(img, low.cellPoint(0, 0)); dist(got, low.last) > 0.05 {
		t.Errorf("a weight above Max is %s, want the last colour %s", hex(got), hex(low.last))
	}
}

// TestWriteZeros draws a matrix of zeros, as a fully masked head gives,
// on the range [0, 1].
func TestWriteZeros(t *testing.T) {
	w := make([]float32, 4*5)
	g := layoutOf(t, 4, 5, w, &Options{})
	if g.f.g.vmax != 1 {
		t.Errorf("colour range of zeros is [0, %v], want [0, 1]", g.f.g.vmax)
	}
	img := render(t, 4, 5, w, nil)
	if got := g.pixel(img, g.cellPoint(3, 4)); dist(got, g.first) > 0.05 {
		t.Errorf("a zero cell is %s, want %s", hex(got), hex(g.first))
	}
}

// TestWriteFormats checks that the vector formats come out as what they
// claim to be.
func TestWriteFormats(t *testing.T) {
	w := []float32{0.2, 0.8, 0.6, 0.4}
	for _, tc := range []struct{ format, prefix string }{
		{"png", "\x89PNG"},
		{"PNG", "\x89PNG"},
		{".jpg", "\xff\xd8"},
		{"svg", "<?xml"},
		{"pdf", "%PDF-"},
		{"tiff", "II*\x00"},
	} {
		var buf bytes.Buffer
		if err := Write(&buf, tc.format, 2, 2, w, &Options{Title: "t", RowLabels: []string{"a", "b"}}); err != nil {
			t.Errorf("%s: %v", tc.format, err)
			continue
		}
		if !strings.HasPrefix(buf.String(), tc.prefix) {
			t.Errorf("%s output starts %q, want %q", tc.format, buf.String()[:min(12, buf.Len())], tc.prefix)
		}
	}
}

// TestWriteErrors checks that bad input is an error that wraps the
// sentinel, names the sizes, and writes nothing.
func TestWriteErrors(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	four := []float32{0.5, 0.5, 0.5, 0.5}
	for _, tc := range []struct {
		name       string
		format     string
		rows, cols int
		w          []float32
		opt        *Options
		sentinel   error
		want       []string // in the message
	}{
		{"no rows", "png", 0, 3, nil, nil, backend.ErrShape, []string{"0×3"}},
		{"negative cols", "png", 2, -1, nil, nil, backend.ErrShape, []string{"2×-1"}},
		{"short data", "png", 2, 3, four, nil, backend.ErrShape, []string{"2×3", "need 6", "have 4"}},
		{"long data", "png", 1, 3, four, nil, backend.ErrShape, []string{"1×3", "need 3", "have 4"}},
		{"too many rows", "png", MaxSide + 1, 1, nil, nil, backend.ErrTooLarge, []string{"4097×1", "4096×4096"}},
		{"too many cols", "png", 2, 5000, nil, nil, backend.ErrTooLarge, []string{"2×5000"}},
		{"NaN", "png", 2, 2, []float32{0, 1, nan, 0}, nil, backend.ErrNonFinite, []string{"(1, 0)", "2×2", "NaN"}},
		{"Inf", "svg", 2, 2, []float32{0, 1, 0, inf}, nil, backend.ErrNonFinite, []string{"(1, 1)", "+Inf"}},
		{"negative", "png", 1, 4, []float32{0.5, -0.25, 0.5, 0.25}, nil, ErrRange, []string{"(0, 1)", "1×4", "-0.25"}},
		{"row labels", "png", 2, 2, four, &Options{RowLabels: []string{"a"}}, backend.ErrShape, []string{"1 row labels", "2×2"}},
		{"col labels", "png", 2, 2, four, &Options{ColLabels: []string{"a", "b", "c"}}, backend.ErrShape, []string{"3 column labels", "2×2"}},
		{"format", "gif", 2, 2, four, nil, backend.ErrUnsupported, []string{`"gif"`, "png"}},
		{"no format", "", 2, 2, four, nil, backend.ErrUnsupported, []string{`""`}},
		{"negative max", "png", 2, 2, four, &Options{Max: -1}, ErrRange, []string{"-1"}},
		{"NaN max", "png", 2, 2, four, &Options{Max: math.NaN()}, ErrRange, []string{"NaN"}},
		{"negative width", "png", 2, 2, four, &Options{Width: -1}, ErrRange, []string{"-1"}},
		{"huge width", "pdf", 2, 2, four, &Options{Width: 1000 * vg.Inch}, ErrRange, []string{"72000"}},
		{"width too small", "png", 2, 2, four, &Options{Width: 20}, ErrRange, []string{"width 20 points"}},
		{"height too small", "png", 2, 2, four, &Options{Height: 10, Title: "x"}, ErrRange, []string{"height 10 points"}},
		{"dpi", "png", 2, 2, four, &Options{DPI: 10000}, ErrRange, []string{"10000 dpi"}},
		{"annotate", "png", 2, 2, four, &Options{Annotate: 7}, ErrRange, []string{"mode 7"}},
		{"too many pixels", "png", 2, 2, four, &Options{Width: 150 * vg.Inch, Height: 150 * vg.Inch, DPI: 300}, backend.ErrTooLarge, []string{"45000 × 45000 pixels"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Write(&buf, tc.format, tc.rows, tc.cols, tc.w, tc.opt)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tc.sentinel) {
				t.Errorf("error %q does not wrap %q", err, tc.sentinel)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			if buf.Len() != 0 {
				t.Errorf("%d bytes written despite the error", buf.Len())
			}
		})
	}
}

func TestFormatOf(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"attn-heatmap.png", "png"},
		{"/tmp/x.y/A.PNG", "png"},
		{"w.svg", "svg"},
		{"w.pdf", "pdf"},
		{"w.jpeg", "jpeg"},
	} {
		if got, err := FormatOf(tc.path); err != nil || got != tc.want {
			t.Errorf("FormatOf(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
	for _, path := range []string{"heatmap", "w.gif", "w.npy", "w.eps", "dir.png/"} {
		if _, err := FormatOf(path); !errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), "png") {
			t.Errorf("FormatOf(%q) = %v, want an ErrUnsupported listing the formats", path, err)
		}
	}
}

// TestTicks checks the thinning of tick labels: every cell when there is
// room, round steps when there is not, the same step on both index axes,
// and labels turned a quarter when they are wider than their cells.
func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		rows, cols    int
		opt           Options
		xStep, yStep  int
		turned        bool
		firstX, lastY string
	}{
		{rows: 3, cols: 3, xStep: 1, yStep: 1, firstX: "0", lastY: "2"},
		{rows: 64, cols: 64, xStep: 5, yStep: 5, firstX: "0", lastY: "60"},
		{rows: 512, cols: 512, xStep: 50, yStep: 50, firstX: "0", lastY: "500"},
		{rows: 3, cols: 3, opt: Options{RowLabels: []string{"a", "b", "c"}, ColLabels: []string{"input 1", "input 2", "input 3"}}, xStep: 1, yStep: 1, firstX: "input 1", lastY: "c"},
		{rows: 2, cols: 12, opt: Options{ColLabels: strings.Fields("The animal didn't cross the street because it was too tired .")}, xStep: 1, yStep: 1, turned: true, firstX: "The ", lastY: "1"},
		{rows: 2, cols: 2, opt: Options{ColLabels: []string{strings.Repeat("x", 40), ""}}, xStep: 1, yStep: 1, turned: true, firstX: strings.Repeat("x", 23) + "… ", lastY: "1"},
	} {
		t.Run(fmt.Sprintf("%dx%d", tc.rows, tc.cols), func(t *testing.T) {
			w := make([]float32, tc.rows*tc.cols)
			g := layoutOf(t, tc.rows, tc.cols, w, &tc.opt)
			xt := g.f.heat.X.Tick.Marker.Ticks(0, 0)
			yt := g.f.heat.Y.Tick.Marker.Ticks(0, 0)
			if len(xt) < 1 || len(yt) < 1 {
				t.Fatalf("%d x ticks, %d y ticks", len(xt), len(yt))
			}
			if want := (tc.cols + tc.xStep - 1) / tc.xStep; len(xt) != want {
				t.Errorf("%d x ticks, want %d (every %d)", len(xt), want, tc.xStep)
			}
			if want := (tc.rows + tc.yStep - 1) / tc.yStep; len(yt) != want {
				t.Errorf("%d y ticks, want %d (every %d)", len(yt), want, tc.yStep)
			}
			if xt[0].Label != tc.firstX || xt[0].Value != 0 {
				t.Errorf("first x tick %+v, want %q at 0", xt[0], tc.firstX)
			}
			// Row 0 is at the top: the largest y.
			if yt[0].Value != float64(tc.rows-1) {
				t.Errorf("row 0 is at y = %v, want %d", yt[0].Value, tc.rows-1)
			}
			if last := yt[len(yt)-1]; last.Label != tc.lastY {
				t.Errorf("last y tick %+v, want %q", last, tc.lastY)
			}
			if turned := g.f.heat.X.Tick.Label.Rotation != 0; turned != tc.turned {
				t.Errorf("x labels turned: %v, want %v", turned, tc.turned)
			}
		})
	}
}

func TestTickStep(t *testing.T) {
	for _, tc := range []struct {
		need, cell vg.Length
		want       int
	}{
		{10, 20, 1}, {10, 10, 1}, {10, 9, 2}, {10, 4, 5}, {10, 1.5, 10}, {10, 0.9, 20}, {10, 0.01, 1000}, {10, 1e-9, 5000},
	} {
		if got := tickStep(tc.need, tc.cell); got != tc.want {
			t.Errorf("tickStep(%v, %v) = %d, want %d", tc.need, tc.cell, got, tc.want)
		}
	}
}

func TestBarTicks(t *testing.T) {
	for _, tc := range []struct {
		vmax float64
		want string
	}{
		{1, "0 0.2 0.4 0.6 0.8 1"},
		{0.98, "0 0.2 0.4 0.6 0.8"},
		{0.5, "0 0.1 0.2 0.3 0.4 0.5"},
		{0.03, "0 0.005 0.01 0.015 0.02 0.025 0.03"},
		{3, "0 0.5 1 1.5 2 2.5 3"},
		{1e-7, "0 2e-08 4e-08 6e-08 8e-08 1e-07"},
	} {
		var got []string
		for _, tk := range barTicks(tc.vmax) {
			got = append(got, tk.Label)
			if tk.Value > tc.vmax*(1+1e-9) {
				t.Errorf("barTicks(%v) has %v above the range", tc.vmax, tk.Value)
			}
		}
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("barTicks(%v) = %s, want %s", tc.vmax, s, tc.want)
		}
	}
}

func TestValueLabel(t *testing.T) {
	for _, tc := range []struct {
		v    float32
		want string
	}{
		{0, "0"}, {0.000006, "0.00"}, {0.468311, "0.47"}, {0.982008, "0.98"}, {1, "1.00"}, {12.345, "12.35"},
	} {
		if got := valueLabel(tc.v); got != tc.want {
			t.Errorf("valueLabel(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestContrast checks that the values are written black on the light
// end of the palette and white on the dark end.
func TestContrast(t *testing.T) {
	cm := colorMap(1)
	for _, tc := range []struct {
		v    float64
		want color.Color
	}{{0, color.Black}, {0.1, color.Black}, {0.9, color.White}, {1, color.White}} {
		c, err := cm.At(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if got := contrast(c); got != tc.want {
			t.Errorf("text on %v (weight %v) is %v, want %v", c, tc.v, got, tc.want)
		}
	}
	if contrast(color.White) != color.Black || contrast(color.Black) != color.White {
		t.Error("contrast on white or black is wrong")
	}
}

func TestShorten(t *testing.T) {
	if got := shorten("héllo", 5); got != "héllo" {
		t.Errorf("shorten kept %q", got)
	}
	if got := shorten("héllo wörld", 5); got != "héll…" {
		t.Errorf("shorten = %q, want %q", got, "héll…")
	}
}

// TestPaletteLuminance checks that the palette darkens steadily: each
// colour's luminance is below the one before.
func TestPaletteLuminance(t *testing.T) {
	pal := colorMap(1).Palette(64).Colors()
	lum := func(c color.Color) float64 {
		r, g, b, _ := c.RGBA()
		return 0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(b)
	}
	for i := 1; i < len(pal); i++ {
		if lum(pal[i]) >= lum(pal[i-1]) {
			t.Fatalf("palette colour %d (%v) is not darker than %d (%v)", i, pal[i], i-1, pal[i-1])
		}
	}
}
