package bench

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
)

// drawnText is a string a chart drew: the middle of its baseline on the
// canvas and the angle it was turned by.
type drawnText struct {
	s     string
	mid   vg.Point
	angle float64
}

// drawnTexts replays the recorded actions of a chart and returns every
// string drawn, placed on the canvas: a rotated string's point is in its
// rotated frame (text.Plain rotates the canvas, then fills the string).
func drawnTexts(actions []recorder.Action) []drawnText {
	var out []drawnText
	angle := 0.0
	var stack []float64
	for _, a := range actions {
		switch a := a.(type) {
		case *recorder.Push:
			stack = append(stack, angle)
		case *recorder.Pop:
			angle, stack = stack[len(stack)-1], stack[:len(stack)-1]
		case *recorder.Rotate:
			angle += a.Angle
		case *recorder.FillString:
			face := font.DefaultCache.Lookup(a.Font, a.Size)
			w := face.Width(a.String)
			p := a.Point.Add(vg.Point{X: w / 2})
			sin, cos := math.Sincos(angle)
			out = append(out, drawnText{a.String, vg.Point{
				X: p.X*vg.Length(cos) - p.Y*vg.Length(sin),
				Y: p.X*vg.Length(sin) + p.Y*vg.Length(cos),
			}, angle})
		}
	}
	return out
}

// The roofline chart names the memory ceiling on its line, turned to its
// slope, and each group of dots by its N.
func TestRooflineChartLabels(t *testing.T) {
	const sgemm, bw = 400.0, 50.0
	r := &Report{Schema: Schema, Machine: Machine{CPU: "test CPU", CPUs: 2, SgemmGFLOPS: sgemm, ReadGBPS: bw}}
	for _, n := range []int{64, 1024, 16384} {
		r.Points = append(r.Points, roofPoint("attn-cpu", n, false, hostCPU))
	}
	p, _, err := r.plot(ChartRoofline)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []struct{ w, h vg.Length }{{8 * vg.Inch, 5 * vg.Inch}, {4 * vg.Inch, 6 * vg.Inch}} {
		var rec recorder.Canvas
		c := draw.NewCanvas(&rec, size.w, size.h)
		p.Draw(c)
		texts := drawnTexts(rec.Actions)

		// The memory line as drawn: from the axis's left edge to the ridge.
		dc := p.DataCanvas(c)
		trX, trY := p.Transforms(&dc)
		a := vg.Point{X: trX(p.X.Min), Y: trY(p.X.Min * bw)}
		b := vg.Point{X: trX(sgemm / bw), Y: trY(sgemm)}
		lineAngle := math.Atan2(float64(b.Y-a.Y), float64(b.X-a.X))
		var mem *drawnText
		for i := range texts {
			if strings.HasPrefix(texts[i].s, "memory:") {
				mem = &texts[i]
			}
		}
		if mem == nil {
			t.Fatalf("%v×%v: no memory label among %v", size.w, size.h, texts)
		}
		// The signed distance of the label's baseline from the line, and
		// where along it the label sits (0 at a, 1 at b).
		d := vg.Point{X: b.X - a.X, Y: b.Y - a.Y}
		v := vg.Point{X: mem.mid.X - a.X, Y: mem.mid.Y - a.Y}
		length := math.Hypot(float64(d.X), float64(d.Y))
		above := float64(d.X*v.Y-d.Y*v.X) / length
		along := float64(d.X*v.X+d.Y*v.Y) / (length * length)
		if math.Abs(mem.angle-lineAngle) > 1e-9 || above < 0 || above > 12 || along < 0.25 || along > 0.75 {
			t.Errorf("%v×%v: memory label %q turned %.3f rad, %.1f pt above the line and %.2f of the way along it; want the line's %.3f rad, 0 … 12 pt, 0.25 … 0.75",
				size.w, size.h, mem.s, mem.angle, above, along, lineAngle)
		}

		for _, want := range []string{"N=64", "N=1K", "N=16K"} {
			found := false
			for _, tx := range texts {
				found = found || tx.s == want
			}
			if !found {
				t.Errorf("%v×%v: no label %q", size.w, size.h, want)
			}
		}
	}
}

// nLabels gives one label per group of dots each within a quarter of an
// octave of intensity of the next, above the highest, naming its N or
// the range of its Ns.
func TestNLabels(t *testing.T) {
	for _, c := range []struct {
		name string
		ds   []dots
		want plotter.XYLabels
	}{
		{"none", nil, plotter.XYLabels{}},
		{"one dot", []dots{{xy: plotter.XYs{{X: 4, Y: 10}}, n: []int{256}}},
			plotter.XYLabels{XYs: plotter.XYs{{X: 4, Y: 10}}, Labels: []string{"N=256"}}},
		{"apart", []dots{{xy: plotter.XYs{{X: 4, Y: 10}, {X: 8, Y: 20}, {X: 16, Y: 30}}, n: []int{256, 512, 1024}}},
			plotter.XYLabels{XYs: plotter.XYs{{X: 4, Y: 10}, {X: 8, Y: 20}, {X: 16, Y: 30}}, Labels: []string{"N=256", "N=512", "N=1K"}}},
		{"one N across series", []dots{{xy: plotter.XYs{{X: 8, Y: 20}}, n: []int{512}}, {xy: plotter.XYs{{X: 8, Y: 50}}, n: []int{512}}},
			plotter.XYLabels{XYs: plotter.XYs{{X: 8, Y: 50}}, Labels: []string{"N=512"}}},
		{"staged, close together", []dots{{xy: plotter.XYs{{X: 7.5, Y: 90}, {X: 7.9, Y: 100}, {X: 8.1, Y: 95}}, n: []int{1024, 4096, 16384}},
			{xy: plotter.XYs{{X: 300, Y: 200}}, n: []int{4096}}},
			plotter.XYLabels{XYs: plotter.XYs{{X: 7.9, Y: 100}, {X: 300, Y: 200}}, Labels: []string{"N=1K–16K", "N=4K"}}},
		// Spread over a third of an octave in steps under a quarter (as
		// on a 2-core Xeon's staged sweep): one label, not two on each
		// other.
		{"staged, a chain", []dots{{xy: plotter.XYs{{X: 12.5, Y: 76}, {X: 13.5, Y: 90}, {X: 15.5, Y: 98}, {X: 15.9, Y: 82}, {X: 16.1, Y: 95}}, n: []int{256, 512, 1024, 2048, 4096}}},
			plotter.XYLabels{XYs: plotter.XYs{{X: 15.5, Y: 98}}, Labels: []string{"N=256–4K"}}},
		{"a gap cuts", []dots{{xy: plotter.XYs{{X: 8, Y: 10}, {X: 9, Y: 11}, {X: 12, Y: 12}}, n: []int{256, 512, 1024}}},
			plotter.XYLabels{XYs: plotter.XYs{{X: 9, Y: 11}, {X: 12, Y: 12}}, Labels: []string{"N=256–512", "N=1K"}}},
	} {
		got := nLabels(c.ds)
		if len(got.XYs) != len(c.want.XYs) || len(got.Labels) != len(c.want.Labels) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got.XYs {
			if got.XYs[i] != c.want.XYs[i] || got.Labels[i] != c.want.Labels[i] {
				t.Errorf("%s: label %d %q at %v, want %q at %v", c.name, i, got.Labels[i], got.XYs[i], c.want.Labels[i], c.want.XYs[i])
			}
		}
	}
}
