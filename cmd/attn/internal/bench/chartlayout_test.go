package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
)

// xeon is a CPU name as long as a cloud VM reports: 120 characters.
var xeon = func() string {
	s := "Intel(R) Xeon(R) Platinum 8480+ (family 6 model 143), Sapphire Rapids server processor as the hypervisor names it, rev 8"
	return s + strings.Repeat("!", 120-len([]rune(s)))
}()

// style is plot's default font at size, as gonum draws a title (12
// points) or a label (10).
func style(size vg.Length) text.Style {
	return text.Style{Font: font.From(plot.DefaultFont, size), Handler: plot.DefaultTextHandler}
}

// fitText's lines each fit the width, at most maxLines of them for each
// line given; where it shortened nothing they hold the same words in the
// same order, and a title is broken after its commas where that fills
// half the line.
func TestFitText(t *testing.T) {
	title := style(12)
	word := strings.Repeat("x", 120)
	machine := xeon + ", 2 CPUs, attn-cpu kernel AMX 16×16 bf16, 2026-11-22"
	for _, c := range []struct {
		name     string
		txt      string
		width    vg.Length
		maxLines int
		want     []string // nil: only the properties are checked
	}{
		{"fits", "roofline, B=1 H=8 D=64", 400, 3, []string{"roofline, B=1 H=8 D=64"}},
		{"empty", "", 400, 3, []string{""}},
		{"lines kept", "a\nb", 400, 3, []string{"a", "b"}},
		{"after the comma", "roofline, B=1 H=8 D=64, causal", title.Width("roofline, B=1 H=8 D=64,") + 1, 3,
			[]string{"roofline, B=1 H=8 D=64,", "causal"}},
		// The only comma would leave a line of one word: the cut is at
		// the last space that fits.
		{"comma too early", "roofline, B=1 H=8 D=64 causal", title.Width("roofline, B=1 H=8 D=64") + 1, 3,
			[]string{"roofline, B=1 H=8 D=64", "causal"}},
		{"120-character CPU", machine, 540, 3, nil},
		{"120-character CPU, narrow", machine, 200, 3, nil},
		{"120-character CPU, unlimited", machine, 150, 0, nil},
		{"one long word", word, 200, 3, nil},
		{"long word amid others", "a " + word + " b", 200, 3, nil},
		{"capped", machine, 100, 2, nil},
		{"narrower than …", "abc def", 1, 3, []string{"", ""}},
		{"zero width", machine, 0, 2, nil},
	} {
		got := fitText(title, c.txt, c.width, c.maxLines)
		if c.want != nil && !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		in := strings.Split(c.txt, "\n")
		if c.maxLines > 0 && len(got) > c.maxLines*len(in) {
			t.Errorf("%s: %d lines, want at most %d: %q", c.name, len(got), c.maxLines*len(in), got)
		}
		shortened := false
		for _, line := range got {
			if w := title.Width(line); w > c.width {
				t.Errorf("%s: line %q is %v wide, over %v", c.name, line, w, c.width)
			}
			shortened = shortened || strings.HasSuffix(line, ellipsis) || line == "" && c.txt != ""
		}
		if !shortened && !slices.Equal(strings.Fields(strings.Join(got, " ")), strings.Fields(c.txt)) {
			t.Errorf("%s: lines %q do not hold the words of %q", c.name, got, c.txt)
		}
	}
	// A machine line of a long CPU name, in the plot's width beside a
	// legend, wraps after a comma and keeps every word.
	got := fitText(title, machine, 540, titleLines)
	if len(got) < 2 || !strings.HasSuffix(got[0], ",") || strings.Contains(strings.Join(got, ""), ellipsis) {
		t.Errorf("machine line in 540 points: %q, want two or three lines, the first ending in a comma, nothing shortened", got)
	}
}

// placeLabels gives each label a box inside the bounds that lies on no
// other label and on nothing hard, leaving out only labels with no such
// place, the first and last of a row last of all (endsFirst); among free
// places it prefers one that covers no marker.
func TestPlaceLabels(t *testing.T) {
	f := face(roofLabelSize)
	bounds := vg.Rectangle{Max: vg.Point{X: 400, Y: 200}}
	type dot struct {
		x, y vg.Length
		text string
	}
	row := func(n int, x0, dx, y vg.Length) []dot {
		var out []dot
		for i := range n {
			out = append(out, dot{x0 + vg.Length(i)*dx, y, fmt.Sprintf("N=%d", 256<<i)})
		}
		return out
	}
	for _, c := range []struct {
		name      string
		dots      []dot
		hard      []vg.Rectangle
		soft      [][]vg.Rectangle
		wantAll   bool // every label placed
		wantFirst int  // index of the candidate the first label takes; -1: any
	}{
		{name: "one point", dots: []dot{{200, 100, "N=1K"}}, wantAll: true, wantFirst: 0},
		{name: "same x", dots: []dot{{200, 100, "N=512"}, {200, 106, "N=1K"}}, wantAll: true, wantFirst: -1},
		{name: "same point", dots: []dot{{200, 100, "N=512"}, {200, 100, "N=1K"}}, wantAll: true, wantFirst: 0},
		// N = 512 and 1024 an octave apart on an axis of fourteen:
		// closer than a label's width.
		{name: "512 and 1024 adjacent", dots: []dot{{200, 150, "N=512"}, {215, 152, "N=1K"}}, wantAll: true, wantFirst: 0},
		{name: "a row, adjacent", dots: row(7, 100, 15, 150), wantFirst: 0},
		{name: "a row, on each other", dots: row(12, 100, 3, 150), wantFirst: 0},
		{name: "at the corners", dots: []dot{{0, 0, "N=256"}, {400, 200, "N=1M"}}, wantAll: true, wantFirst: -1},
		{name: "at the top", dots: []dot{{200, 199, "N=64K"}}, wantAll: true, wantFirst: 1},
		{name: "hard above", dots: []dot{{200, 100, "N=1K"}},
			hard: []vg.Rectangle{{Min: vg.Point{X: 150, Y: 105}, Max: vg.Point{X: 250, Y: 130}}}, wantAll: true, wantFirst: 1},
		{name: "a marker above", dots: []dot{{200, 100, "N=1K"}},
			soft: [][]vg.Rectangle{{{Min: vg.Point{X: 196, Y: 110}, Max: vg.Point{X: 204, Y: 118}}}}, wantAll: true, wantFirst: 1},
		{name: "nowhere free", dots: []dot{{200, 100, "N=1K"}}, hard: []vg.Rectangle{bounds}, wantFirst: -1},
	} {
		order := endsFirst(len(c.dots))
		var cands [][]vg.Rectangle
		for _, i := range order {
			cands = append(cands, aroundDot(vg.Point{X: c.dots[i].x, Y: c.dots[i].y}, textSize(f, c.dots[i].text), dotGap, bounds))
		}
		choice := placeLabels(cands, bounds, c.hard, c.soft)
		var placed []vg.Rectangle
		for k, j := range choice {
			if j < 0 {
				if c.wantAll {
					t.Errorf("%s: %s left out", c.name, c.dots[order[k]].text)
				}
				continue
			}
			b := cands[k][j]
			if !inside(b, bounds) {
				t.Errorf("%s: %s at %v, outside %v", c.name, c.dots[order[k]].text, b, bounds)
			}
			for _, h := range c.hard {
				if overlaps(b, h) {
					t.Errorf("%s: %s at %v, on %v", c.name, c.dots[order[k]].text, b, h)
				}
			}
			for _, p := range placed {
				if overlaps(grow(b, labelGap/2), grow(p, labelGap/2)) {
					t.Errorf("%s: %s at %v, on a label at %v or less than %v from it", c.name, c.dots[order[k]].text, b, p, labelGap)
				}
			}
			placed = append(placed, b)
		}
		if c.name == "nowhere free" {
			if choice[0] != -1 {
				t.Errorf("%s: placed at candidate %d", c.name, choice[0])
			}
			continue
		}
		// The first and last of a row are always placed.
		if choice[0] < 0 || len(choice) > 1 && choice[1] < 0 {
			t.Errorf("%s: first or last left out: %v", c.name, choice)
		}
		if c.wantFirst >= 0 && choice[0] != c.wantFirst {
			t.Errorf("%s: first label at candidate %d, want %d", c.name, choice[0], c.wantFirst)
		}
		if strings.HasPrefix(c.name, "a row") && len(placed) < 3 {
			t.Errorf("%s: only %d of %d labels placed", c.name, len(placed), len(c.dots))
		}
	}
}

// endsFirst places the ends of a row first.
func TestEndsFirst(t *testing.T) {
	for n, want := range [][]int{nil, {0}, {0, 1}, {0, 2, 1}, {0, 3, 1, 2}, {0, 4, 1, 2, 3}} {
		if got := endsFirst(n); !slices.Equal(got, want) {
			t.Errorf("endsFirst(%d) = %v, want %v", n, got, want)
		}
	}
}

// A legend fits its width: in the largest size where no entry wraps,
// else wrapped in two lines at most; every line within the width, the
// entries within the height.
func TestLayoutLegend(t *testing.T) {
	long := "ort-webgpu-mha fused causal B=4 H=32 KVH=8 D=128 Nq=1 window 128,0 softcap 30 alibi sinks bf16 (wrong answers) device"
	many := make([]string, 30)
	for i := range many {
		many[i] = fmt.Sprintf("attn-cpu fused D=%d bf16 RSS", 64*(i+1))
	}
	const maxW, maxH = 164, 330
	for _, c := range []struct {
		name     string
		texts    []string
		wantSize vg.Length // 0: any
		wrapped  bool
	}{
		{"short", []string{"attn-cpu fused", "roofline"}, 12, false},
		{"a bit long", []string{"ort-webgpu-mha (wrong answers)", "attn-cpu fused"}, 0, false},
		{"too long for one line", []string{long, "attn-cpu fused"}, 12, true},
		{"one 120-character word", []string{xeon}, 12, true},
		{"many", many, 0, false},
		{"none", nil, 12, false},
	} {
		l := layoutLegend(c.texts, maxW, maxH)
		if c.wantSize != 0 && l.size != c.wantSize {
			t.Errorf("%s: %v points, want %v", c.name, l.size, c.wantSize)
		}
		if l.width > maxW || l.height > maxH {
			t.Errorf("%s: %v × %v, over %v × %v", c.name, l.width, l.height, maxW, maxH)
		}
		sty := style(l.size)
		wrapped := false
		for i, lines := range l.lines {
			wrapped = wrapped || len(lines) > 1 || lines[0] != c.texts[i]
			if len(lines) > legendLines {
				t.Errorf("%s: entry %d in %d lines", c.name, i, len(lines))
			}
			for _, s := range lines {
				if w := legendThumb + sty.Width(" "+s); w > maxW {
					t.Errorf("%s: %q is %v wide with its thumbnail, over %v", c.name, s, w, maxW)
				}
			}
		}
		if wrapped != c.wrapped {
			t.Errorf("%s: wrapped %v, want %v: %q", c.name, wrapped, c.wrapped, l.lines)
		}
	}
}

// drawnBox is a string a chart drew and the upright box round it on the
// canvas: its advance, and its em box, from the font's descent below the
// baseline to the font's size above that, turned as the canvas was. The
// em box holds the ink of Latin text; the font's ascent leaves room for
// accents above it, more than gonum's multi-line text allows between
// lines.
type drawnBox struct {
	s     string
	box   vg.Rectangle
	angle float64
}

func drawnBoxes(actions []recorder.Action) []drawnBox {
	var out []drawnBox
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
			f := font.DefaultCache.Lookup(a.Font, a.Size)
			e := f.Extents()
			x0, x1 := a.Point.X, a.Point.X+f.Width(a.String)
			y0, y1 := a.Point.Y-e.Descent, a.Point.Y-e.Descent+a.Size
			sin, cos := math.Sincos(angle)
			b := vg.Rectangle{Min: vg.Point{X: vg.Length(math.Inf(1)), Y: vg.Length(math.Inf(1))}, Max: vg.Point{X: vg.Length(math.Inf(-1)), Y: vg.Length(math.Inf(-1))}}
			for _, p := range []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x0, Y: y1}, {X: x1, Y: y1}} {
				q := vg.Point{X: p.X*vg.Length(cos) - p.Y*vg.Length(sin), Y: p.X*vg.Length(sin) + p.Y*vg.Length(cos)}
				b.Min.X, b.Min.Y = min(b.Min.X, q.X), min(b.Min.Y, q.Y)
				b.Max.X, b.Max.Y = max(b.Max.X, q.X), max(b.Max.Y, q.Y)
			}
			out = append(out, drawnBox{a.String, b, angle})
		}
	}
	return out
}

// dotPoint is a point of impl's strategy at N drawn on the roofline
// chart at the given intensity and rate.
func dotPoint(impl, strategy string, n int, intensity, gflops float64) Point {
	pt := ranPoint(n, false, steadyRuns(5, uint64(n)))
	pt.Impl, pt.Strategy = impl, strategy
	pt.Intensity, pt.GFLOPS, pt.RooflineFrac = intensity, gflops, 0.5
	pt.PeakRSS = int64(n) << 20
	return pt
}

// Every chart attn bench draws, on a machine with a 120-character name,
// with Ns an octave apart, long legend entries, one point, or dots at
// one intensity: no text reaches past the canvas, no upright text lies
// on another, the legend takes at most a quarter of the width, and the
// roofline chart labels its first and last N.
func TestChartsReadable(t *testing.T) {
	machine := Machine{CPU: xeon, CPUs: 2, SgemmGFLOPS: 400, ReadGBPS: 50}
	sweep := func(impl, strategy string, ns []int, intensity func(n int) float64, gflops float64) []Point {
		var out []Point
		for _, n := range ns {
			out = append(out, dotPoint(impl, strategy, n, intensity(n), gflops))
		}
		return out
	}
	ns := []int{512, 1024, 2048, 4096, 8192, 16384}
	fused := func(n int) float64 { return float64(n) / 2 }
	staged := func(n int) float64 { return 12 + float64(n%7) }
	var xeonSweep []Point
	xeonSweep = append(xeonSweep, sweep("attn-cpu", "fused", ns, fused, 300)...)
	xeonSweep = append(xeonSweep, sweep("ort-cpu-mha", "", ns, fused, 280)...)
	xeonSweep = append(xeonSweep, sweep("attn-cpu", "staged", ns, staged, 150)...)
	wrong := sweep("ort-webgpu-mha-with-a-provider-of-a-long-name", "", ns[:2], fused, 20)
	for i := range wrong {
		wrong[i].Status = StatusWrong
	}
	xeonSweep = append(xeonSweep, wrong...)

	for _, c := range []struct {
		name   string
		points []Point
		firstN string // the roofline chart's first and last N labels
		lastN  string
	}{
		{"a Xeon's sweep", xeonSweep, "N=512–16K", "N=16K"},
		{"512 and 1024 adjacent", sweep("attn-cpu", "fused", ns[:2], fused, 300), "N=512", "N=1K"},
		{"one point", sweep("attn-cpu", "fused", ns[:1], fused, 300), "N=512", "N=512"},
		{"same intensity", append(sweep("attn-cpu", "fused", ns[:1], fused, 300), sweep("ort-cpu-mha", "", ns[1:2], func(int) float64 { return 256 }, 310)...), "N=512–1K", "N=512–1K"},
	} {
		r := &Report{Schema: Schema, Machine: machine, Points: c.points}
		files := r.ChartFiles("png")
		if len(files) != 3 {
			t.Fatalf("%s: chart files %v", c.name, files)
		}
		for _, cf := range files {
			for _, size := range []vg.Point{{X: chartWidth, Y: chartHeight}, {X: 6 * vg.Inch, Y: 4 * vg.Inch}} {
				name := fmt.Sprintf("%s, %s at %v×%v", c.name, cf.Name, size.X, size.Y)
				p, legend, err := r.filter(cf.keep).plot(cf.Chart)
				if err != nil {
					t.Fatal(err)
				}
				var rec recorder.Canvas
				canvas := draw.NewCanvas(&rec, size.X, size.Y)
				lw := drawChart(canvas, p, legend).legendWidth
				if lw > size.X/4 {
					t.Errorf("%s: legend %v of %v wide", name, lw, size.X)
				}
				texts := drawnBoxes(rec.Actions)
				var got []string
				for i, a := range texts {
					got = append(got, a.s)
					if !inside(a.box, canvas.Rectangle) {
						t.Errorf("%s: %q at %v, past the canvas", name, a.s, a.box)
					}
					for _, b := range texts[:i] {
						if a.angle == 0 && b.angle == 0 && overlaps(a.box, b.box) {
							t.Errorf("%s: %q at %v on %q at %v", name, a.s, a.box, b.s, b.box)
						}
					}
				}
				if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "Intel(R) Xeon(R)") }) {
					t.Errorf("%s: the CPU's name is not in the title: %q", name, got)
				}
				if cf.Chart == ChartRoofline && (!slices.Contains(got, c.firstN) || !slices.Contains(got, c.lastN)) {
					t.Errorf("%s: no label %q or %q among %q", name, c.firstN, c.lastN, got)
				}
			}
		}
	}
}

// An axis label, however long, takes only its own room: gonum, centring
// its box at the mean of a log axis's range, near the axis's end, shrank
// the data area by the part that seemed to stick out.
func TestAxisLabelsKeepDataArea(t *testing.T) {
	r := &Report{Schema: Schema, Machine: Machine{CPU: "test CPU", CPUs: 2, SgemmGFLOPS: 400, ReadGBPS: 50},
		Points: []Point{dotPoint("attn-cpu", "fused", 512, 256, 300), dotPoint("attn-cpu", "fused", 16384, 8192, 300)}}
	area := func(x, y string) vg.Rectangle {
		p, legend, err := r.plot(ChartRoofline)
		if err != nil {
			t.Fatal(err)
		}
		p.X.Label.Text, p.Y.Label.Text = x, y
		var rec recorder.Canvas
		return drawChart(draw.NewCanvas(&rec, chartWidth, chartHeight), p, legend).data
	}
	short := area("x", "y")
	long := area("arithmetic intensity (flop per compulsory byte)", "GFLOP/s (causal: attended pairs only)")
	if d := short.Size().Y - long.Size().Y; d > 1 {
		t.Errorf("long axis labels: data area %v, %v shorter than with short ones (%v)", long, d, short)
	}
	if d := short.Size().X - long.Size().X; d > 1 {
		t.Errorf("long axis labels: data area %v, %v narrower than with short ones (%v)", long, d, short)
	}
}
