package bench

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// lineLabel writes a label along the segment from a to b (data
// coordinates), centred on it, just above it and turned to its slope.
// The slope on the canvas depends on the canvas's size and the axes'
// ranges, so the label is placed when drawn, not when the plot is built.
type lineLabel struct {
	a, b  plotter.XY
	text  string
	style text.Style
	// gap is the distance from the line to the text's baseline side.
	gap vg.Length
}

// newLineLabel is a lineLabel in plotter.Labels' default text style.
func newLineLabel(a, b plotter.XY, label string) (*lineLabel, error) {
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{a}, Labels: []string{label}})
	if err != nil {
		return nil, err
	}
	st := lb.TextStyle[0]
	st.XAlign, st.YAlign = text.XCenter, text.YBottom
	return &lineLabel{a: a, b: b, text: label, style: st, gap: vg.Points(3)}, nil
}

// place is where the label's anchor (the middle of its bottom edge) goes
// on c, the data canvas of plt, and the rotation of its text in
// radians: the midpoint of the segment on the canvas, moved gap along
// the segment's upward normal, and the segment's angle.
func (l *lineLabel) place(c draw.Canvas, plt *plot.Plot) (vg.Point, float64) {
	trX, trY := plt.Transforms(&c)
	ax, ay, bx, by := trX(l.a.X), trY(l.a.Y), trX(l.b.X), trY(l.b.Y)
	angle := math.Atan2(float64(by-ay), float64(bx-ax))
	sin, cos := math.Sincos(angle)
	return vg.Point{
		X: (ax+bx)/2 - l.gap*vg.Length(sin),
		Y: (ay+by)/2 + l.gap*vg.Length(cos),
	}, angle
}

// Plot implements plot.Plotter.
func (l *lineLabel) Plot(c draw.Canvas, plt *plot.Plot) {
	at, angle := l.place(c, plt)
	st := l.style
	st.Rotation = angle
	c.FillText(st, at, l.text)
}

// boxes covers the label as placed on c, the data canvas of plt, with
// upright boxes a text's height long, for labels placed around it to
// keep off: one box round the turned text would take in the empty
// corners beside it.
func (l *lineLabel) boxes(c draw.Canvas, plt *plot.Plot) []vg.Rectangle {
	at, angle := l.place(c, plt)
	// Drawn from the anchor up (text.YBottom), gonum's plain text
	// handler puts the baseline the font's size less its ascent above it.
	e := l.style.FontExtents()
	w, h := l.style.Width(l.text), e.Ascent+e.Descent
	lo, hi := l.style.Font.Size-h, l.style.Font.Size
	sin, cos := math.Sincos(angle)
	// A point of the text's own frame: along the baseline from the
	// middle of the bottom edge, and up from it.
	pt := func(along, up vg.Length) vg.Point {
		return vg.Point{X: at.X + along*vg.Length(cos) - up*vg.Length(sin), Y: at.Y + along*vg.Length(sin) + up*vg.Length(cos)}
	}
	n := max(1, int(math.Ceil(float64(w/h))))
	out := make([]vg.Rectangle, n)
	for i := range out {
		a0, a1 := -w/2+w*vg.Length(i)/vg.Length(n), -w/2+w*vg.Length(i+1)/vg.Length(n)
		r := vg.Rectangle{Min: pt(a0, lo), Max: pt(a0, lo)}
		for _, p := range []vg.Point{pt(a1, lo), pt(a0, hi), pt(a1, hi)} {
			r.Min.X, r.Min.Y = min(r.Min.X, p.X), min(r.Min.Y, p.Y)
			r.Max.X, r.Max.Y = max(r.Max.X, p.X), max(r.Max.Y, p.Y)
		}
		out[i] = r
	}
	return out
}
