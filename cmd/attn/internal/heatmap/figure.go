package heatmap

import (
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/brewer"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Sizes of the figure's parts.
const (
	maxCell     = 0.75 * vg.Inch // largest auto-sized cell
	maxData     = 6 * vg.Inch    // auto-sized data area, longest side, unless cells would be under a pixel
	minData     = 0.75 * vg.Inch // shortest side of an auto-sized data area
	margin      = 8 * vg.Millimeter / 2
	barGap      = 6 * vg.Millimeter // between the cells and the colour bar's axis
	barWidth    = 0.2 * vg.Inch
	labelRunes  = 24 // longest tick label before it is shortened
	paletteSize = 256
)

// sans is the typeface of every text.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// weightGrid is the weights as plotter.GridXYZ: matrix column j spans
// x from j−0.5 to j+0.5, and matrix row i spans y around rows−1−i, so
// that row 0 is at the top (the largest y) on a plain linear axis, for
// the vector and the raster drawing of plotter.HeatMap alike.
//
// For raster output each cell is split into kx × ky grid points of the
// same weight, about one per pixel: plotter.HeatMap draws a raster grid
// as an image of one pixel per point, scaled bilinearly to the cells,
// which would blur cells many pixels wide; drawn as vector rectangles
// instead, anti-aliasing leaves light seams between neighbours.
type weightGrid struct {
	rows, cols int
	kx, ky     int
	w          []float32
	vmax       float64
}

func (g *weightGrid) Dims() (c, r int) { return g.cols * g.kx, g.rows * g.ky }
func (g *weightGrid) Z(c, r int) float64 {
	return float64(g.w[(g.rows-1-r/g.ky)*g.cols+c/g.kx])
}
func (g *weightGrid) X(c int) float64 { return (float64(c)+0.5)/float64(g.kx) - 0.5 }
func (g *weightGrid) Y(r int) float64 { return (float64(r)+0.5)/float64(g.ky) - 0.5 }
func (g *weightGrid) Min() float64    { return 0 }
func (g *weightGrid) Max() float64    { return g.vmax }

// y is where matrix row i is drawn.
func (g *weightGrid) y(i int) float64 { return float64(g.rows - 1 - i) }

// cells is plotter.HeatMap without glyph boxes: HeatMap gives each cell
// a 10-point box, which would pad the axes away from small cells and
// cost a slice of rows·cols boxes at every layout step.
type cells struct{ *plotter.HeatMap }

func (cells) GlyphBoxes(*plot.Plot) []plot.GlyphBox { return nil }

// colorMap is the palette: ColorBrewer's YlGnBu interpolated in CIELAB
// so that luminance falls linearly with the weight (Moreland), light for
// 0 and dark blue for vmax.
func colorMap(vmax float64) palette.ColorMap {
	ctrl, err := brewer.GetPalette(brewer.TypeSequential, "YlGnBu", 9)
	if err != nil {
		panic(err) // a fixed name and size: cannot fail
	}
	dark := slices.Clone(ctrl.Colors())
	slices.Reverse(dark) // NewLuminance wants luminance rising
	lum, err := moreland.NewLuminance(dark)
	if err != nil {
		panic(err) // YlGnBu is monotonic in luminance
	}
	cm := palette.Reverse(lum)
	cm.SetMin(0)
	cm.SetMax(vmax)
	return cm
}

// figure is a heatmap and its colour bar laid out on a page.
type figure struct {
	g             *weightGrid
	opt           *Options
	dpi           int
	heat, bar     *plot.Plot
	hm            *plotter.HeatMap
	values        *cellValues
	width, height vg.Length
	title         text.Style
	pad           vg.Length // on each side of the plots when the title is wider
	rowLabels     []string
	colLabels     []string
}

// newFigure lays out the heatmap for a raster format (at dpi) or a
// vector one.
func newFigure(rows, cols int, w []float32, vmax float64, opt *Options, dpi int, raster bool) (*figure, error) {
	f := &figure{g: &weightGrid{rows: rows, cols: cols, kx: 1, ky: 1, w: w, vmax: vmax}, opt: opt, dpi: dpi}
	f.rowLabels = labels(opt.RowLabels, rows)
	f.colLabels = labels(opt.ColLabels, cols)
	cm := colorMap(vmax)
	pal := cm.Palette(paletteSize)

	f.heat = plot.New()
	// The title is the figure's, centred over it all, not the heat
	// plot's, which would be centred over the cells and their labels
	// only and cut where it is wider than they are.
	f.title = f.heat.Title.TextStyle
	f.title.Font = font.From(sans, 13)
	for _, a := range []*plot.Axis{&f.heat.X, &f.heat.Y} {
		styleAxis(a)
	}
	f.heat.X.Label.Text = orDefault(opt.XLabel, "key")
	f.heat.Y.Label.Text = orDefault(opt.YLabel, "query")

	f.hm = plotter.NewHeatMap(f.g, pal)
	f.hm.Overflow = pal.Colors()[len(pal.Colors())-1]
	f.hm.Rasterized = raster || rows*cols > VectorCells
	f.heat.Add(cells{f.hm}, frame{})
	annotate := opt.Annotate == AnnotateOn || (opt.Annotate == AnnotateAuto && rows <= AnnotateLimit && cols <= AnnotateLimit)
	if annotate {
		f.values = &cellValues{g: f.g, colors: pal.Colors()}
		f.heat.Add(f.values)
	}

	f.bar = plot.New()
	f.bar.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true, Colors: paletteSize})
	f.bar.Add(frame{})
	f.bar.HideX()
	f.bar.X.Padding = 0
	styleAxis(&f.bar.Y)
	f.bar.Y.Label.Text = "weight"
	f.bar.Y.Tick.Marker = plot.ConstantTicks(barTicks(vmax))
	f.bar.Y.Min, f.bar.Y.Max = 0, vmax

	return f, f.layout()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// labels returns the tick labels of n cells: the given ones, shortened,
// or the indices.
func labels(given []string, n int) []string {
	l := make([]string, n)
	for i := range l {
		if given != nil {
			l[i] = shorten(given[i], labelRunes)
		} else {
			l[i] = strconv.Itoa(i)
		}
	}
	return l
}

// styleAxis sets the fonts and flush padding of an axis of the figure.
func styleAxis(a *plot.Axis) {
	a.Label.TextStyle.Font = font.From(sans, 11)
	a.Label.Padding = 4
	a.Tick.Label.Font = font.From(sans, 9)
	a.Tick.Length = 4
	a.Padding = 0 // cells touch the axes
	// The frame plotter outlines the cells; the axis line would be
	// drawn a half line-width off it.
	a.LineStyle = draw.LineStyle{}
}

// layout sizes the cells and the figure, chooses which tick labels fit
// and how, and the size of the values in the cells. The margins around
// the cells depend on the tick labels, which depend on the size of the
// cells: the sizes are settled in a few rounds.
func (f *figure) layout() error {
	rows, cols := f.g.rows, f.g.cols
	px := vg.Inch / vg.Length(f.dpi)
	auto := max(min(maxCell, maxData/vg.Length(max(rows, cols))), px)
	cw, ch := auto, auto
	dataW := max(vg.Length(cols)*cw, minData)
	dataH := max(vg.Length(rows)*ch, minData)
	barW := f.barWidth()
	for range 3 {
		f.configure(dataW/vg.Length(cols), dataH/vg.Length(rows))
		l, r, b, t := f.margins()
		fixedW := 2*margin + l + r + barGap + barW
		fixedH := 2*margin + b + t + f.titleHeight()
		switch w, h := f.opt.Width, f.opt.Height; {
		case w > 0 && h > 0:
			f.width, f.height = w, h
			dataW, dataH = w-fixedW, h-fixedH
		case w > 0:
			f.width = w
			dataW = w - fixedW
			dataH = max(dataW/vg.Length(cols)*vg.Length(rows), minData)
			f.height = dataH + fixedH
		case h > 0:
			f.height = h
			dataH = h - fixedH
			dataW = max(dataH/vg.Length(rows)*vg.Length(cols), minData)
			f.width = dataW + fixedW
		default:
			f.width, f.height = dataW+fixedW, dataH+fixedH
		}
		f.pad = 0
		if need := f.title.Width(f.opt.Title) + 2*margin; need > f.width {
			if f.opt.Width == 0 {
				// Room for the title: centre the plots under it.
				f.pad = (need - f.width) / 2
				f.width = need
			} else {
				// A width was asked for: a smaller title.
				f.title.Font.Size = max(6, f.title.Font.Size*(f.width-2*margin)/(need-2*margin))
			}
		}
		if dataW < vg.Length(cols)*px/4 || dataW <= 0 {
			return tooSmall("width", f.width, fixedW+vg.Length(cols)*px/4)
		}
		if dataH < vg.Length(rows)*px/4 || dataH <= 0 {
			return tooSmall("height", f.height, fixedH+vg.Length(rows)*px/4)
		}
	}
	cw, ch = dataW/vg.Length(cols), dataH/vg.Length(rows)
	f.configure(cw, ch)
	if f.hm.Rasterized {
		// About a grid point per pixel, and no more points in all than
		// a figure has pixels.
		f.g.kx = max(1, int(math.Round(cw.Dots(float64(f.dpi)))))
		f.g.ky = max(1, int(math.Round(ch.Dots(float64(f.dpi)))))
		for cols*f.g.kx*rows*f.g.ky > MaxPixels && (f.g.kx > 1 || f.g.ky > 1) {
			f.g.kx, f.g.ky = max(1, f.g.kx/2), max(1, f.g.ky/2)
		}
	}
	return nil
}

// titleHeight is the height the title takes with the space under it.
func (f *figure) titleHeight() vg.Length {
	if f.opt.Title == "" {
		return 0
	}
	return f.title.Height(f.opt.Title) + 10 // clear of the colour bar's top label
}

// margins measures the space the heat plot takes around its cells: left,
// right, bottom and top.
func (f *figure) margins() (l, r, b, t vg.Length) {
	const big = 100 * vg.Inch
	c := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: big, Y: big}}}
	d := f.heat.DataCanvas(c)
	return d.Min.X, big - d.Max.X, d.Min.Y, big - d.Max.Y
}

// barWidth is the width of the colour bar with its axis.
func (f *figure) barWidth() vg.Length {
	const big = 100 * vg.Inch
	d := f.bar.DataCanvas(draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: big, Y: big}}})
	return d.Min.X + barWidth
}

// configure chooses the tick labels for cells of width cw and height ch
// and the font of the values written in them.
func (f *figure) configure(cw, ch vg.Length) {
	x, y := &f.heat.X.Tick.Label, &f.heat.Y.Tick.Label
	lineH := y.Height("0") * 1.15

	// Rows: one label every step rows, spaced by a line.
	rowStep := tickStep(lineH, ch)

	// Columns: horizontal labels when the widest fits in its cell (or,
	// for indices, in a few cells); otherwise turned a quarter and
	// spaced by a line, like the rows.
	widest := vg.Length(0)
	for _, s := range f.colLabels {
		widest = max(widest, x.Width(s))
	}
	gap := x.Width("0") * 0.8
	step := 1
	turned := false
	switch {
	case widest+gap <= cw:
	case f.opt.ColLabels == nil:
		step = tickStep(widest+2*gap, cw)
	default:
		turned = true
		step = tickStep(lineH, cw)
	}
	if f.opt.RowLabels == nil && f.opt.ColLabels == nil {
		// Indices on both axes: the same step reads as a grid.
		step = max(step, rowStep)
		rowStep = step
	}
	f.heat.Y.Tick.Marker = plot.ConstantTicks(ticks(f.rowLabels, rowStep, "", f.g.y))
	suffix := ""
	if turned {
		x.Rotation, x.XAlign, x.YAlign = math.Pi/2, draw.XRight, draw.YCenter
		suffix = " " // plot anchors turned labels a descent into the tick marks
	} else {
		x.Rotation, x.XAlign, x.YAlign = 0, draw.XCenter, draw.YTop
	}
	f.heat.X.Tick.Marker = plot.ConstantTicks(ticks(f.colLabels, step, suffix, func(j int) float64 { return float64(j) }))

	if f.values != nil {
		f.values.setFont(cw, ch)
	}
}

// tickStep is the smallest of 1, 2, 5, 10, 20, 50 … cells whose length
// is at least need.
func tickStep(need, cell vg.Length) int {
	for m := 1; ; m *= 10 {
		for _, s := range []int{1, 2, 5} {
			if vg.Length(s*m)*cell >= need || s*m >= MaxSide {
				return s * m
			}
		}
	}
}

// ticks labels every step-th cell at position at(i).
func ticks(names []string, step int, suffix string, at func(i int) float64) []plot.Tick {
	t := make([]plot.Tick, 0, len(names)/step+1)
	for i := 0; i < len(names); i += step {
		label := names[i]
		if label == "" {
			label = " " // an empty label would make a minor tick
		}
		t = append(t, plot.Tick{Value: at(i), Label: label + suffix})
	}
	return t
}

// barTicks labels the colour bar at about five round values from 0 to
// vmax.
func barTicks(vmax float64) []plot.Tick {
	mag := math.Pow(10, math.Floor(math.Log10(vmax/5)))
	step := mag
	for _, s := range []float64{1, 2, 2.5, 5, 10} {
		step = s * mag
		if vmax/step <= 6 {
			break
		}
	}
	var t []plot.Tick
	for i := 0; ; i++ {
		v := float64(i) * step
		if v > vmax*(1+1e-9) {
			break
		}
		t = append(t, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 4, 64)})
	}
	return t
}

// draw draws the figure on c: the heat plot on the left, the colour bar
// on the right, its bar as tall as the cells.
func (f *figure) draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	if f.opt.Title != "" {
		sty := f.title
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		c.FillText(sty, vg.Point{X: c.Center().X, Y: c.Max.Y - margin}, f.opt.Title)
	}
	heatC, _, barC := f.regions(c)
	f.heat.Draw(heatC)
	f.bar.Draw(barC)
}

// regions places the heat plot, its cells and the colour bar's plot on
// c.
func (f *figure) regions(c draw.Canvas) (heatC, cellsC, barC draw.Canvas) {
	page := draw.Crop(c, margin+f.pad, -(margin + f.pad), margin, -(margin + f.titleHeight()))
	barW := f.barWidth()
	heatC = draw.Crop(page, 0, -(barGap + barW), 0, 0)
	cellsC = f.heat.DataCanvas(heatC)

	// The bar's own plot pads its axis by half a tick label at each
	// end: stretch its canvas by that padding so its data area spans
	// exactly the cells.
	barC = draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: heatC.Max.X + barGap, Y: cellsC.Min.Y},
		Max: vg.Point{X: heatC.Max.X + barGap + barW, Y: cellsC.Max.Y},
	}}
	inner := f.bar.DataCanvas(barC)
	barC.Min.Y -= inner.Min.Y - barC.Min.Y
	barC.Max.Y += barC.Max.Y - inner.Max.Y
	return heatC, cellsC, barC
}

// frame outlines the data area of a plot.
type frame struct{}

func (frame) Plot(c draw.Canvas, _ *plot.Plot) {
	c.SetLineStyle(draw.LineStyle{Color: color.Black, Width: vg.Points(0.5)})
	c.Stroke(c.Rectangle.Path())
}

// cellValues writes each weight in its cell, black on light colours and
// white on dark ones.
type cellValues struct {
	g      *weightGrid
	colors []color.Color // the heatmap's palette
	style  text.Style
}

func (v *cellValues) setFont(cw, ch vg.Length) {
	v.style = text.Style{
		Font:    font.From(sans, 10),
		XAlign:  draw.XCenter,
		YAlign:  draw.YCenter,
		Handler: plot.DefaultTextHandler,
	}
	widest := v.style.Width("0.00")
	for _, w := range v.g.w {
		widest = max(widest, v.style.Width(valueLabel(w)))
	}
	size := min(vg.Points(11), 10*0.8*cw/widest, 0.5*ch)
	v.style.Font = font.From(sans, size)
}

func (v *cellValues) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	g := v.g
	ps := float64(len(v.colors)-1) / g.vmax
	for i := range g.rows {
		for j := range g.cols {
			w := g.w[i*g.cols+j]
			k := min(int(float64(w)*ps+0.5), len(v.colors)-1) // as plotter.HeatMap picks it
			sty := v.style
			sty.Color = contrast(v.colors[k])
			c.FillText(sty, vg.Point{X: trX(float64(j)), Y: trY(g.y(i))}, valueLabel(w))
		}
	}
}

// contrast is black or white, whichever stands out on bg: black when
// bg's relative luminance (sRGB, WCAG) is above 0.3.
func contrast(bg color.Color) color.Color {
	r, g, b, _ := bg.RGBA()
	lin := func(c uint32) float64 {
		s := float64(c) / 0xffff
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	if 0.2126*lin(r)+0.7152*lin(g)+0.0722*lin(b) > 0.3 {
		return color.Black
	}
	return color.White
}
