package bench

import (
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The layout of a chart on its canvas: text fitted to the width it has,
// labels placed where they lie on no other text, and a legend of at most
// a quarter of the width. A chart's texts come from the machine it ran on
// (a CPU's name can be a hundred characters) and from the sweep (a legend
// entry names every dimension that varied), so their widths are measured
// in the font they are drawn in, when the canvas's size is known.

const (
	// ellipsis ends a text shortened to fit.
	ellipsis = "…"
	// legendMargin is the room either side of the legend's column.
	legendMargin = vg.Length(8)
	// legendThumb is the width of a legend entry's line or marker.
	legendThumb = vg.Length(20)
	// titleLines is how many lines one line of a title may wrap to; the
	// last is shortened where the rest would not fit (a runaway CPU
	// name would otherwise take the plot's height).
	titleLines = 3
	// legendLines is the same for a legend entry.
	legendLines = 2
)

// face is plot's default font at size, as gonum draws titles, labels and
// legends.
func face(size vg.Length) font.Face {
	return plot.DefaultTextHandler.Cache().Lookup(font.From(plot.DefaultFont, size), size)
}

// fitText breaks each line of txt that is wider than width in sty's font
// into lines that fit: after a comma where the line so cut fills half the
// width at least (a title's parts are comma-separated phrases), else at
// a space. A word wider than width alone is shortened to end in "…".
// Each line of txt becomes maxLines lines at most (none where maxLines
// is 0), the last shortened where the rest does not fit. Every line
// returned is at most width wide; one where not even "…" fits is empty.
func fitText(sty text.Style, txt string, width vg.Length, maxLines int) []string {
	var out []string
	for _, line := range strings.Split(txt, "\n") {
		out = append(out, fitLine(sty, line, width, maxLines)...)
	}
	return out
}

// fitLine is fitText of one line.
func fitLine(sty text.Style, line string, width vg.Length, maxLines int) []string {
	var out []string
	for {
		if len(out) > 0 {
			line = strings.TrimLeft(line, " ")
		}
		if maxLines > 0 && len(out) == maxLines-1 || sty.Width(line) <= width {
			return append(out, shorten(sty, line, width))
		}
		cut := breakAt(sty, line, width)
		if cut == 0 {
			// Not even the first word fits: it is shortened, and the
			// rest goes on the next line.
			word, rest, found := strings.Cut(line, " ")
			out = append(out, shorten(sty, word, width))
			if !found {
				return out
			}
			line = rest
			continue
		}
		out = append(out, strings.TrimRight(line[:cut], " "))
		line = line[cut:]
	}
}

// breakAt is where fitLine cuts line, a byte index of a space, so that
// line[:cut] fits width: the last space after a comma where that prefix
// is half the width at least, else the last space; 0 where no prefix
// fits.
func breakAt(sty text.Style, line string, width vg.Length) int {
	comma, space := 0, 0
	for i := 1; i < len(line); i++ {
		if line[i] != ' ' || line[i-1] == ' ' {
			continue
		}
		if sty.Width(line[:i]) > width {
			break // a longer prefix is no narrower
		}
		space = i
		if line[i-1] == ',' {
			comma = i
		}
	}
	if comma > 0 && 2*sty.Width(line[:comma]) >= width {
		return comma
	}
	return space
}

// shorten is s where it fits width in sty's font, else its longest
// prefix that fits followed by "…", or "" where not even "…" fits.
func shorten(sty text.Style, s string, width vg.Length) string {
	if sty.Width(s) <= width {
		return s
	}
	r := []rune(s)
	fits := func(k int) bool { return sty.Width(string(r[:k])+ellipsis) <= width }
	if !fits(0) {
		return ""
	}
	lo, hi := 0, len(r)
	for lo < hi { // the longest k that fits: widths grow with k
		mid := (lo + hi + 1) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return strings.TrimRight(string(r[:lo]), " ,") + ellipsis
}

// textSize is the box that face draws s in: its advance, and the font's
// ascent above the baseline and descent below it.
func textSize(f font.Face, s string) vg.Point {
	e := f.Extents()
	return vg.Point{X: f.Width(s), Y: e.Ascent + e.Descent}
}

// fillInBox draws s with face f in box (whose size is textSize's): its
// baseline starts the font's descent above the box's bottom-left corner.
func fillInBox(c draw.Canvas, f font.Face, box vg.Rectangle, s string) {
	c.SetColor(color.Black)
	c.FillString(f, vg.Point{X: box.Min.X, Y: box.Min.Y + f.Extents().Descent}, s)
}

// overlaps reports whether a and b share more than an edge.
func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

// inside reports whether a lies within b.
func inside(a, b vg.Rectangle) bool {
	return a.Min.X >= b.Min.X && a.Max.X <= b.Max.X && a.Min.Y >= b.Min.Y && a.Max.Y <= b.Max.Y
}

// placeLabels chooses a box for each label, in order, from its
// candidates (cands[i], in order of preference): of those inside bounds
// that overlap neither a box chosen before nor any of hard, the one that
// touches the fewest of soft (markers and lines a label had better not
// hide, each a group of boxes that counts once), the earliest of equals.
// A label none of whose candidates is free is left out, its choice -1: a
// label on another cannot be read. Labels keep labelGap apart, so that
// two side by side do not read as one word.
func placeLabels(cands [][]vg.Rectangle, bounds vg.Rectangle, hard []vg.Rectangle, soft [][]vg.Rectangle) []int {
	choice := make([]int, len(cands))
	placed := slices.Clone(hard)
	for i, cs := range cands {
		choice[i] = -1
		best := 0
		for j, b := range cs {
			if !inside(b, bounds) || anyOverlap(grow(b, labelGap), placed) {
				continue
			}
			covers := 0
			for _, s := range soft {
				if anyOverlap(b, s) {
					covers++
				}
			}
			if choice[i] < 0 || covers < best {
				choice[i], best = j, covers
			}
		}
		if choice[i] >= 0 {
			placed = append(placed, cs[choice[i]])
		}
	}
	return choice
}

// labelGap is the least room between two labels placeLabels places.
const labelGap = vg.Length(2)

// grow is r with d more room on every side.
func grow(r vg.Rectangle, d vg.Length) vg.Rectangle {
	return vg.Rectangle{Min: vg.Point{X: r.Min.X - d, Y: r.Min.Y - d}, Max: vg.Point{X: r.Max.X + d, Y: r.Max.Y + d}}
}

// anyOverlap reports whether b overlaps one of rs.
func anyOverlap(b vg.Rectangle, rs []vg.Rectangle) bool {
	for _, r := range rs {
		if overlaps(b, r) {
			return true
		}
	}
	return false
}

// rectAt is the rectangle of size with its bottom-left corner at min.
func rectAt(min, size vg.Point) vg.Rectangle {
	return vg.Rectangle{Min: min, Max: min.Add(size)}
}

// aroundDot lists the boxes of size a label of the dot at p may take, in
// order of preference, each gap clear of p: centred above it, centred
// below, then shifted right and left above and below, then beside it
// right and left, last because a label between two dots reads as
// either's; then centred above and below by half a label's height and a
// whole one more, to clear a line or a marker just past the dot; and,
// for a dot near a side of bounds, above and below it moved along the
// side to lie within bounds.
func aroundDot(p, size vg.Point, gap vg.Length, bounds vg.Rectangle) []vg.Rectangle {
	w, h := size.X, size.Y
	above, below := p.Y+gap, p.Y-gap-h
	right, left := p.X-gap/2, p.X+gap/2-w
	within := min(max(p.X-w/2, bounds.Min.X), bounds.Max.X-w)
	return []vg.Rectangle{
		rectAt(vg.Point{X: p.X - w/2, Y: above}, size),
		rectAt(vg.Point{X: p.X - w/2, Y: below}, size),
		rectAt(vg.Point{X: right, Y: above}, size),
		rectAt(vg.Point{X: left, Y: above}, size),
		rectAt(vg.Point{X: right, Y: below}, size),
		rectAt(vg.Point{X: left, Y: below}, size),
		rectAt(vg.Point{X: p.X + gap, Y: p.Y - h/2}, size),
		rectAt(vg.Point{X: p.X - gap - w, Y: p.Y - h/2}, size),
		rectAt(vg.Point{X: p.X - w/2, Y: above + h/2}, size),
		rectAt(vg.Point{X: p.X - w/2, Y: below - h/2}, size),
		rectAt(vg.Point{X: p.X - w/2, Y: above + h}, size),
		rectAt(vg.Point{X: p.X - w/2, Y: below - h}, size),
		rectAt(vg.Point{X: within, Y: above}, size),
		rectAt(vg.Point{X: within, Y: below}, size),
	}
}

// endsFirst is the order in which a row of n labels, sorted along the
// axis, is placed: the first and the last, which say the range, then
// the rest in turn; where they cannot all be placed, those in between
// give way.
func endsFirst(n int) []int {
	if n == 0 {
		return nil
	}
	order := []int{0}
	if n > 1 {
		order = append(order, n-1)
	}
	for i := 1; i < n-1; i++ {
		order = append(order, i)
	}
	return order
}

// segmentBoxes covers the segment from a to b with boxes about step
// long, for placeLabels to tell a label that lies across it.
func segmentBoxes(a, b vg.Point, step vg.Length) []vg.Rectangle {
	n := max(1, int(math.Ceil(math.Hypot(float64(b.X-a.X), float64(b.Y-a.Y))/float64(step))))
	out := make([]vg.Rectangle, n)
	for i := range out {
		p := lerp(a, b, float64(i)/float64(n))
		q := lerp(a, b, float64(i+1)/float64(n))
		out[i] = vg.Rectangle{
			Min: vg.Point{X: min(p.X, q.X), Y: min(p.Y, q.Y)},
			Max: vg.Point{X: max(p.X, q.X), Y: max(p.Y, q.Y)},
		}
	}
	return out
}

func lerp(a, b vg.Point, t float64) vg.Point {
	return vg.Point{X: a.X + (b.X-a.X)*vg.Length(t), Y: a.Y + (b.Y-a.Y)*vg.Length(t)}
}

// chartLegend is a chart's legend: gonum's draws each entry on one line,
// however wide, and WriteChart keeps the legend to a quarter of the
// chart (layoutLegend).
type chartLegend struct {
	entries []legendEntry
}

type legendEntry struct {
	text   string
	thumbs []plot.Thumbnailer
}

// Add adds an entry, its marker drawn by thumbs one over the other.
func (l *chartLegend) Add(text string, thumbs ...plot.Thumbnailer) {
	l.entries = append(l.entries, legendEntry{text, thumbs})
}

func (l *chartLegend) texts() []string {
	out := make([]string, len(l.entries))
	for i, e := range l.entries {
		out[i] = e.text
	}
	return out
}

// legendLayout is a legend laid out: its font size, each entry's lines,
// and the width and height it takes.
type legendLayout struct {
	size          vg.Length
	lines         [][]string
	width, height vg.Length
}

// layoutLegend lays out a legend of texts in at most maxW by maxH: in
// the largest of 12, 11 and 10 points where each entry fits on one line,
// else wrapped (fitText, two lines at most) in the largest size from 12
// down to 8 points where the entries fit maxH; 8 points where none does.
// A thumbnail and a space precede each entry's text.
func layoutLegend(texts []string, maxW, maxH vg.Length) legendLayout {
	at := func(size vg.Length) (legendLayout, bool) {
		f := face(size)
		sty := text.Style{Font: f.Font, Handler: plot.DefaultTextHandler}
		pre := legendThumb + f.Width(" ")
		l := legendLayout{size: size}
		wrapped := false
		for _, t := range texts {
			lines := fitText(sty, t, maxW-pre, legendLines)
			wrapped = wrapped || len(lines) > 1 || lines[0] != t
			for _, s := range lines {
				l.width = max(l.width, pre+f.Width(s))
			}
			l.lines = append(l.lines, lines)
			l.height += vg.Length(len(lines)) * f.Extents().Height
		}
		return l, wrapped
	}
	for _, size := range []vg.Length{12, 11, 10} {
		if l, wrapped := at(size); !wrapped && l.height <= maxH {
			return l
		}
	}
	for _, size := range []vg.Length{12, 11, 10, 9} {
		if l, _ := at(size); l.height <= maxH {
			return l
		}
	}
	l, _ := at(8)
	return l
}

// draw draws the legend's entries laid out as l, its top-left corner at
// (x, top): each entry's thumbnail on its first line, its text beside.
func (l legendLayout) draw(c draw.Canvas, entries []legendEntry, x, top vg.Length) {
	f := face(l.size)
	e := f.Extents()
	textX := x + legendThumb + f.Width(" ")
	y := top
	for i, en := range entries {
		icon := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: y - e.Ascent - e.Descent},
			Max: vg.Point{X: x + legendThumb, Y: y},
		}}
		for _, t := range en.thumbs {
			t.Thumbnail(&icon)
		}
		for _, s := range l.lines[i] {
			box := rectAt(vg.Point{X: textX, Y: y - e.Ascent - e.Descent}, textSize(f, s))
			fillInBox(c, f, box, s)
			y -= e.Height
		}
	}
}

// drawChart draws p and its legend on c: the legend to the right of the
// plot, where it hides no point, in a column of at most a quarter of c's
// width, its top level with the plot's axes where it fits below them;
// the plot in the rest, its title fitted to that width and its axis
// labels to the sides of its data area (fitText). It returns where it
// put the legend's column and the data area.
//
// drawChart draws the axis labels itself: gonum pads the data area for
// an axis label as though it were centred at the mean of the axis's
// range, which on a log axis lies near its end, so that a long label
// shrank the data area by the part of it that seemed to stick out.
func drawChart(c draw.Canvas, p *plot.Plot, legend chartLegend) chartAreas {
	size := c.Size()
	var lay legendLayout
	var lw vg.Length
	if len(legend.entries) > 0 {
		lay = layoutLegend(legend.texts(), size.X/4-2*legendMargin, size.Y-2*legendMargin)
		lw = lay.width + 2*legendMargin
	}
	pc := draw.Crop(c, 0, -lw, 0, 0)
	if p.Title.Text != "" {
		// A margin either side: gonum centres the title on pc.
		p.Title.Text = strings.Join(fitText(p.Title.TextStyle, p.Title.Text, pc.Size().X-2*legendMargin, titleLines), "\n")
	}
	xl, yl := p.X.Label, p.Y.Label
	p.X.Label.Text, p.Y.Label.Text = "", ""
	// Each label's lines depend on the other's: the Y label's room
	// narrows the data area, the X label's lowers it.
	var xText, yText string
	var inner draw.Canvas
	for range 3 {
		inner = draw.Crop(pc, 0, 0, axisLabelRoom(xl.TextStyle, xl.Padding, xText), 0)
		yText = strings.Join(fitText(yl.TextStyle, yl.Text, p.DataCanvas(inner).Size().Y, 2), "\n")
		yRoom := axisLabelRoom(yl.TextStyle, yl.Padding, yText)
		if yText != "" {
			yRoom += yl.TextStyle.FontExtents().Descent + yLabelInset
		}
		inner = draw.Crop(inner, yRoom, 0, 0, 0)
		was := xText
		xText = strings.Join(fitText(xl.TextStyle, xl.Text, p.DataCanvas(inner).Size().X, 2), "\n")
		if strings.Count(xText, "\n") == strings.Count(was, "\n") && was != "" {
			break
		}
	}
	p.Draw(inner)
	dc := p.DataCanvas(inner)
	if xText != "" {
		// Where gonum writes it: its bottom on the canvas's, centred.
		pc.FillText(xl.TextStyle, vg.Point{X: dc.Center().X, Y: pc.Min.Y + xl.TextStyle.FontExtents().Descent}, xText)
	}
	if yText != "" {
		sty := yl.TextStyle
		sty.Rotation += math.Pi / 2
		x := pc.Min.X + yLabelInset + yl.TextStyle.Height(yText) - yl.TextStyle.FontExtents().Descent
		pc.FillText(sty, vg.Point{X: x, Y: dc.Center().Y}, yText)
	}
	if len(legend.entries) > 0 {
		top := min(c.Max.Y-legendMargin, max(dc.Max.Y, c.Min.Y+legendMargin+lay.height))
		lay.draw(c, legend.entries, c.Max.X-lw+legendMargin, top)
	}
	return chartAreas{legendWidth: lw, data: dc.Rectangle}
}

// chartAreas is where drawChart put a chart's parts.
type chartAreas struct {
	legendWidth vg.Length    // the legend's column, margins included
	data        vg.Rectangle // the plot's data area
}

// yLabelInset keeps the Y axis's label off the canvas's left edge, which
// gonum's placement leaves its tallest glyphs touching.
const yLabelInset = vg.Length(2)

// axisLabelRoom is the room an axis label of txt in sty takes across its
// axis, padding included; none where txt is empty.
func axisLabelRoom(sty text.Style, padding vg.Length, txt string) vg.Length {
	if txt == "" {
		return 0
	}
	return sty.Height(txt) + padding
}
