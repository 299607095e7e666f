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
