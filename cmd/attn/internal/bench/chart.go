package bench

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Chart names a chart WriteChart draws.
type Chart string

const (
	// ChartGFLOPS is GFLOP/s against N (log-scaled), one line per
	// implementation and strategy, with the interquartile range of the
	// timed runs as error bars.
	ChartGFLOPS Chart = "gflops"
	// ChartMemory is peak memory against N (both log-scaled): each
	// process's peak RSS, and attn's device bytes as dashed lines.
	ChartMemory Chart = "memory"
	// ChartRoofline is GFLOP/s against arithmetic intensity (both
	// log-scaled): a dot per point with a fraction of the roofline (a
	// point on the host's CPU), labelled by N, under the roofline of the
	// ceilings measured in the run, Machine.SgemmGFLOPS and
	// Machine.ReadGBPS.
	ChartRoofline Chart = "roofline"
)

// Charts lists every chart, in the order the README shows them.
var Charts = []Chart{ChartGFLOPS, ChartMemory, ChartRoofline}

// ChartFile is one chart file of a report: a chart of its points, or of
// those of one causal setting when the sweep measured both (causal and
// non-causal curves on one chart would double its lines).
type ChartFile struct {
	Name  string // gflops.png, gflops-causal.png, ...
	Chart Chart
	keep  func(Point) bool
}

// ChartFiles lists the chart files of r in the given format ("png",
// "svg", "pdf"): each chart once, or once per causal setting; none
// where no point ran, and the roofline only where it has a point to
// draw (hasRoofline).
func (r *Report) ChartFiles(format string) []ChartFile {
	seen := map[bool]bool{}
	for _, pt := range r.Points {
		seen[pt.Causal] = true
	}
	var files []ChartFile
	add := func(name string, c Chart, keep func(Point) bool) {
		sub := r.filter(keep)
		if len(sub.series(true)) == 0 || c == ChartRoofline && !sub.hasRoofline() || c == ChartMemory && !sub.hasMemory() {
			return // nothing ran (or measured): no chart, rather than empty axes
		}
		files = append(files, ChartFile{Name: name + "." + format, Chart: c, keep: keep})
	}
	for _, c := range Charts {
		if len(seen) < 2 {
			add(string(c), c, func(Point) bool { return true })
			continue
		}
		add(string(c), c, func(pt Point) bool { return !pt.Causal })
		add(string(c)+"-causal", c, func(pt Point) bool { return pt.Causal })
	}
	return files
}

// WriteChartFile draws f, in the format its name ends with.
func (r *Report) WriteChartFile(w io.Writer, f ChartFile) error {
	return r.filter(f.keep).WriteChart(w, f.Chart, strings.TrimPrefix(filepath.Ext(f.Name), "."))
}

// filter is r with only the points keep keeps (all when keep is nil).
func (r *Report) filter(keep func(Point) bool) *Report {
	sub := *r
	sub.Points = nil
	for _, pt := range r.Points {
		if keep == nil || keep(pt) {
			sub.Points = append(sub.Points, pt)
		}
	}
	return &sub
}

// sweptNs lists the sequence lengths of r's points, ascending.
func (r *Report) sweptNs() []int {
	var ns []int
	for _, pt := range r.Points {
		if !slices.Contains(ns, pt.N) {
			ns = append(ns, pt.N)
		}
	}
	slices.Sort(ns)
	return ns
}

// series is one line of a chart: the points of one implementation and
// strategy (and of one value of each dimension the sweep varied besides N).
type series struct {
	label  string
	points []Point
	wrong  bool
}

// series groups the points into lines, in the order they first appear;
// when ran is set, only the points that ran.
func (r *Report) series(ran bool) []*series {
	varied := func(f func(Point) string) bool {
		seen := map[string]bool{}
		for _, pt := range r.Points {
			seen[f(pt)] = true
		}
		return len(seen) > 1
	}
	var dims []func(Point) string
	for _, d := range []func(Point) string{
		func(pt Point) string { return map[bool]string{true: "causal", false: "non-causal"}[pt.Causal] },
		func(pt Point) string { return fmt.Sprintf("B=%d", pt.B) },
		func(pt Point) string { return fmt.Sprintf("H=%d", pt.H) },
		func(pt Point) string { return fmt.Sprintf("KVH=%d", pt.KVHeads) },
		func(pt Point) string { return fmt.Sprintf("D=%d", pt.D) },
		nqLabel,
		func(pt Point) string { return strings.TrimPrefix(sparseString(pt), "-") },
		func(pt Point) string { return pt.Variant.String() },
		func(pt Point) string { return pt.dtypeLabel() },
		func(pt Point) string {
			if pt.Layers == 0 {
				return ""
			}
			return fmt.Sprintf("L=%d", pt.Layers)
		},
	} {
		if varied(d) {
			dims = append(dims, d)
		}
	}
	var out []*series
	byLabel := map[string]*series{}
	for _, pt := range r.Points {
		if ran && pt.Runs == 0 {
			continue // did not run: the table says why
		}
		parts := []string{pt.Impl}
		if strings.HasPrefix(pt.Impl, "attn-") {
			parts = append(parts, pt.Strategy)
		}
		for _, d := range dims {
			if v := d(pt); v != "" {
				parts = append(parts, v)
			}
		}
		label := strings.Join(parts, " ")
		s := byLabel[label]
		if s == nil {
			s = &series{label: label}
			byLabel[label] = s
			out = append(out, s)
		}
		s.points = append(s.points, pt)
		s.wrong = s.wrong || pt.Status == StatusWrong
	}
	return out
}

// style is how a chart draws s, the ith series of r.series(true): its
// legend label, colour and marker, the same on every chart.
func (s *series) style(i int) (label string, col color.Color, shape draw.GlyphDrawer) {
	label = s.label
	if s.wrong {
		label += " (wrong answers)"
	}
	return label, seriesColors[i%len(seriesColors)], plotutil.Shape(i)
}

// title names what every point of the report shares.
func (r *Report) title(what string) string {
	var fixed []string
	same := func(f func(Point) int) (int, bool) {
		if len(r.Points) == 0 {
			return 0, false
		}
		v := f(r.Points[0])
		for _, pt := range r.Points {
			if f(pt) != v {
				return 0, false
			}
		}
		return v, true
	}
	for _, d := range []struct {
		name string
		f    func(Point) int
	}{
		{"B", func(pt Point) int { return pt.B }},
		{"H", func(pt Point) int { return pt.H }},
		{"KVH", func(pt Point) int { return pt.KVHeads }},
		{"D", func(pt Point) int { return pt.D }},
	} {
		if v, ok := same(d.f); ok && !(d.name == "KVH" && fixedH(r.Points, v)) {
			fixed = append(fixed, fmt.Sprintf("%s=%d", d.name, v))
		}
	}
	if len(r.Points) > 0 {
		if v := nqLabel(r.Points[0]); v != "" && !slices.ContainsFunc(r.Points, func(pt Point) bool { return nqLabel(pt) != v }) {
			fixed = append(fixed, v)
		}
	}
	if v, ok := same(func(pt Point) int { return map[bool]int{true: 1}[pt.Causal] }); ok && v == 1 {
		fixed = append(fixed, "causal")
	}
	if len(r.Points) > 0 {
		v := r.Points[0].Variant.String()
		if v != "" && !slices.ContainsFunc(r.Points, func(pt Point) bool { return pt.Variant.String() != v }) {
			fixed = append(fixed, v)
		}
	}
	machine := fmt.Sprintf("%s, %d CPUs", r.Machine.CPU, r.Machine.CPUs)
	if k := kernelPhrase(r.Points); k != "" {
		machine += ", " + k
	}
	return fmt.Sprintf("%s, %s\n%s, %s", what, strings.Join(fixed, " "), machine, r.Date.Format("2006-01-02"))
}

// gflopsLabel is the GFLOP/s axis's label: causal and windowed problems
// count only the pairs a query attends to (Flops), which the label says
// where the chart has such lines.
func (r *Report) gflopsLabel() string {
	masked, plain, windowed := false, false, false
	for _, pt := range r.Points {
		m := pt.Causal || pt.Window != nil
		masked, plain = masked || m, plain || !m
		windowed = windowed || pt.Window != nil
	}
	what := "causal"
	if windowed {
		what = "windowed"
		if slices.ContainsFunc(r.Points, func(pt Point) bool { return pt.Causal }) {
			what = "causal and windowed"
		}
	}
	switch {
	case masked && plain:
		return fmt.Sprintf("GFLOP/s (%s lines: attended pairs only)", what)
	case masked:
		return fmt.Sprintf("GFLOP/s (%s: attended pairs only)", what)
	}
	return "GFLOP/s"
}

// rateBars is the interquartile range of pt's runs as rates: the GFLOP/s
// of its third and of its first quartile time. ok is false when pt
// recorded no quartiles (reports of attn-bench/1 before they were added).
func rateBars(pt Point) (lo, hi float64, ok bool) {
	if !pt.hasQuartiles() || pt.MedianS <= 0 {
		return 0, 0, false
	}
	flops := pt.GFLOPS * pt.MedianS
	return flops / pt.Q3S, flops / pt.Q1S, true
}

// barsCaption says what the error bars of the GFLOP/s chart show.
func (r *Report) barsCaption() string {
	lo, hi := 0, 0
	for _, pt := range r.Points {
		if _, _, ok := rateBars(pt); ok {
			if lo == 0 || pt.Runs < lo {
				lo = pt.Runs
			}
			hi = max(hi, pt.Runs)
		}
	}
	switch {
	case hi == 0:
		return "no error bars: the report records no quartiles of the runs"
	case lo == hi:
		return fmt.Sprintf("bars: interquartile range of each point's %d timed runs", lo)
	}
	return fmt.Sprintf("bars: interquartile range of each point's timed runs (%d–%d runs)", lo, hi)
}

// nqLabel names a point's query rows where they are fewer than its keys
// ("Nq=1"), and is "" where Nq = N: a sweep of N at Nq = N is one line.
func nqLabel(pt Point) string {
	if !pt.Decode() {
		return ""
	}
	return fmt.Sprintf("Nq=%d", pt.Nq)
}

// fixedH reports whether every point has kvh = H, so KVH need not be named.
func fixedH(points []Point, kvh int) bool {
	for _, pt := range points {
		if pt.H != kvh {
			return false
		}
	}
	return true
}

// WriteChart draws chart c of the report as a PNG (or SVG, PDF, by
// format: "png", "svg", "pdf"), 10×5 inches with the legend on the right
// in at most a quarter of the width (drawChart).
func (r *Report) WriteChart(w io.Writer, c Chart, format string) error {
	p, legend, err := r.plot(c)
	if err != nil {
		return err
	}
	cw, err := draw.NewFormattedCanvas(chartWidth, chartHeight, format)
	if err != nil {
		return err
	}
	drawChart(draw.New(cw), p, legend)
	_, err = cw.WriteTo(w)
	return err
}

// The size WriteChart draws a chart at.
const chartWidth, chartHeight = 10 * vg.Inch, 5 * vg.Inch

// plot builds chart c of the report and its legend.
func (r *Report) plot(c Chart) (*plot.Plot, chartLegend, error) {
	switch c {
	case ChartRoofline:
		return r.plotRoofline()
	case ChartGFLOPS, ChartMemory:
	default:
		return nil, chartLegend{}, fmt.Errorf("bench: no chart %q (have %s, %s, %s)", c, ChartGFLOPS, ChartMemory, ChartRoofline)
	}
	p := plot.New()
	p.X.Label.Text = "sequence length N (Nq = Nk)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = log2Ticks{formatN}
	if ns := r.sweptNs(); len(ns) == 1 {
		// An octave either side, rather than gonum's ±1 around the one N.
		p.X.Min, p.X.Max = float64(ns[0])/2, float64(ns[0])*2
	}
	p.Add(plotter.NewGrid())
	var legend chartLegend

	all := r.series(true)
	for i, s := range all {
		label, col, shape := s.style(i)
		switch c {
		case ChartGFLOPS:
			var xy, barXY plotter.XYs
			var errs plotter.YErrors
			for _, pt := range s.points {
				xy = append(xy, plotter.XY{X: float64(pt.N), Y: pt.GFLOPS})
				if lo, hi, ok := rateBars(pt); ok {
					barXY = append(barXY, xy[len(xy)-1])
					errs = append(errs, struct{ Low, High float64 }{pt.GFLOPS - lo, hi - pt.GFLOPS})
				}
			}
			if err := addLine(p, &legend, label, xy, col, shape, nil); err != nil {
				return nil, legend, err
			}
			if len(barXY) > 0 {
				eb, err := plotter.NewYErrorBars(yErrs{barXY, errs})
				if err != nil {
					return nil, legend, err
				}
				eb.Color = col
				p.Add(eb)
			}
		case ChartMemory:
			var rss, dev plotter.XYs
			for _, pt := range s.points {
				if pt.PeakRSS > 0 {
					rss = append(rss, plotter.XY{X: float64(pt.N), Y: float64(pt.PeakRSS) / (1 << 20)})
				}
				if pt.DeviceBytes > 0 {
					dev = append(dev, plotter.XY{X: float64(pt.N), Y: float64(pt.DeviceBytes) / (1 << 20)})
				}
			}
			if len(rss) > 0 {
				if err := addLine(p, &legend, label+" RSS", rss, col, shape, nil); err != nil {
					return nil, legend, err
				}
			}
			if len(dev) > 0 {
				if err := addLine(p, &legend, label+" device", dev, col, shape, []vg.Length{vg.Points(5), vg.Points(3)}); err != nil {
					return nil, legend, err
				}
			}
		}
	}
	switch c {
	case ChartGFLOPS:
		p.Title.Text = r.title("attention throughput") + "\n" + r.barsCaption()
		p.Y.Label.Text = r.gflopsLabel()
		p.Y.Min = 0
		p.Y.Tick.Marker = niceTicks{}
	case ChartMemory:
		p.Title.Text = r.title("peak memory")
		p.Y.Label.Text = "peak memory"
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = log2Ticks{formatMiB}
		if p.Y.Min <= 0 {
			p.Y.Min = 1
		}
		if p.Y.Max < 1.25*p.Y.Min {
			// Points at about one size (one N, or flat lines) get two
			// octaves around them, labelled at round sizes, rather than
			// gonum's ±1 MiB around one point (1019.5 … 1021.5 MiB).
			c := math.Sqrt(p.Y.Min * max(p.Y.Max, p.Y.Min))
			p.Y.Min, p.Y.Max = c/2, 2*c
		}
	}
	if len(all) == 0 {
		p.Title.Text += "\n(no point ran)"
		p.X.Min, p.X.Max = 1, 2
		p.Y.Min, p.Y.Max = 1, 2
	}
	return p, legend, nil
}

// seriesColors tell up to twelve lines apart (plotutil's palette has
// seven, and a peers run draws more): Tableau's ten, then two darker.
var seriesColors = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
	color.RGBA{227, 119, 194, 255}, color.RGBA{127, 127, 127, 255}, color.RGBA{188, 189, 34, 255},
	color.RGBA{23, 190, 207, 255}, color.RGBA{0, 0, 0, 255}, color.RGBA{0, 90, 50, 255},
}

// addLine adds a line with markers and its legend entry.
func addLine(p *plot.Plot, legend *chartLegend, label string, xy plotter.XYs, col color.Color, shape draw.GlyphDrawer, dashes []vg.Length) error {
	l, sc, err := plotter.NewLinePoints(xy)
	if err != nil {
		return err
	}
	l.Color, l.Width, l.Dashes = col, vg.Points(1.5), dashes
	sc.Color, sc.Shape = col, shape
	p.Add(l, sc)
	legend.Add(label, l, sc)
	return nil
}

// yErrs pairs points with their error bars for plotter.NewYErrorBars.
type yErrs struct {
	plotter.XYs
	plotter.YErrors
}

// hasRoofline reports whether r has a roofline to draw: both ceilings
// measured, and a point with a fraction of them.
func (r *Report) hasRoofline() bool {
	return r.Machine.SgemmGFLOPS > 0 && r.Machine.ReadGBPS > 0 && slices.ContainsFunc(r.Points, onRoofline)
}

// onRoofline reports whether the roofline chart draws pt.
// hasMemory reports whether some point measured its memory (a peak RSS
// or device bytes): the memory chart's log axes hold nothing else.
func (r *Report) hasMemory() bool {
	return slices.ContainsFunc(r.Points, func(pt Point) bool { return pt.PeakRSS > 0 || pt.DeviceBytes > 0 })
}

func onRoofline(pt Point) bool { return pt.RooflineFrac > 0 && pt.Intensity > 0 && pt.GFLOPS > 0 }

// dots are the points of the ith series of r.series(true) (whose
// colour and marker it keeps on every chart) that the roofline chart
// draws, as (intensity, GFLOP/s).
type dots struct {
	i  int
	s  *series
	xy plotter.XYs
	n  []int // each dot's N
}

// rooflineDots lists the dots of the roofline chart, series by series:
// those with a point on it (onRoofline), not a GPU's.
func (r *Report) rooflineDots() []dots {
	var out []dots
	for i, s := range r.series(true) {
		d := dots{i: i, s: s}
		for _, pt := range s.points {
			if onRoofline(pt) {
				d.xy = append(d.xy, plotter.XY{X: pt.Intensity, Y: pt.GFLOPS})
				d.n = append(d.n, pt.N)
			}
		}
		if len(d.xy) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// flaggedDots are the roofline chart's dots of flagged points
// (Point.Flag), as (intensity, GFLOP/s).
func (r *Report) flaggedDots() plotter.XYs {
	var out plotter.XYs
	for _, pt := range r.Points {
		if pt.Flag != "" && onRoofline(pt) {
			out = append(out, plotter.XY{X: pt.Intensity, Y: pt.GFLOPS})
		}
	}
	return out
}

// measuredIn says how the ceilings of m were measured: "measured in the
// run", or "the best of 4 probes in the run".
func (m Machine) measuredIn() string {
	if n := len(m.CeilingProbes); n > 1 {
		return fmt.Sprintf("the best of %d probes in the run", n)
	}
	return "measured in the run"
}

// nLabels labels the roofline chart's dots by N, in order of intensity:
// without them the chart would not say which N a dot is. Dots each
// within a quarter of an octave of intensity of the next share one
// label, at the highest of them: a staged point's intensity hardly moves
// with N, and the dots of one N and one strategy share theirs across
// implementations, so that one label per dot would be written over
// itself. A label of several Ns gives their range. Where each label goes
// around its dot is decided when the chart is drawn (roofLabels).
func nLabels(ds []dots) plotter.XYLabels {
	type dot struct {
		xy plotter.XY
		n  int
	}
	var all []dot
	for _, d := range ds {
		for j, xy := range d.xy {
			all = append(all, dot{xy, d.n[j]})
		}
	}
	slices.SortFunc(all, func(a, b dot) int { return cmp.Compare(a.xy.X, b.xy.X) })
	var out plotter.XYLabels
	for lo := 0; lo < len(all); {
		hi, top := lo, all[lo].xy
		nmin, nmax := all[lo].n, all[lo].n
		// A dot within a quarter octave of the cluster's last one joins
		// it, so that a cluster is cut only where a gap is: measured
		// from the first dot, staged points spread over a third of an
		// octave were cut in two whose labels lay on each other.
		for hi < len(all) && (hi == lo || all[hi].xy.X <= all[hi-1].xy.X*math.Pow(2, 0.25)) {
			if all[hi].xy.Y > top.Y {
				top = all[hi].xy
			}
			nmin, nmax = min(nmin, all[hi].n), max(nmax, all[hi].n)
			hi++
		}
		label := "N=" + formatN(float64(nmin))
		if nmax != nmin {
			label += "–" + formatN(float64(nmax))
		}
		out.XYs = append(out.XYs, top)
		out.Labels = append(out.Labels, label)
		lo = hi
	}
	return out
}

// memoryLabel names the memory ceiling on its own line, the sloped part
// of the roofline from xlo to the ridge: beside the points, as it was, it
// read as a label of the points.
func memoryLabel(xlo, sgemm, bw float64) (*lineLabel, error) {
	return newLineLabel(plotter.XY{X: xlo, Y: xlo * bw}, plotter.XY{X: sgemm / bw, Y: sgemm}, fmt.Sprintf("memory: intensity × %.1f GB/s", bw))
}

// plotRoofline builds the roofline chart and its legend: the two
// ceilings, meeting at the ridge, an octave past the points either side
// (and four octaves of the memory ceiling at least), each labelled on its
// line, and a dot for each point with a fraction of
// them, in the colour and marker of its series on the GFLOP/s chart,
// labelled by N (nLabels).
func (r *Report) plotRoofline() (*plot.Plot, chartLegend, error) {
	p := plot.New()
	p.X.Label.Text = "arithmetic intensity (flop per compulsory byte)"
	p.Y.Label.Text = r.gflopsLabel()
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = log2Ticks{shortNumber}, log2Ticks{shortNumber}
	p.Add(plotter.NewGrid())
	var legend chartLegend
	p.Title.Text = r.title("roofline")
	if !r.hasRoofline() {
		p.Title.Text += "\n(no roofline: it needs the Sgemm rate and the read bandwidth measured, and points on the host's CPU)"
		p.X.Min, p.X.Max = 1, 2
		p.Y.Min, p.Y.Max = 1, 2
		return p, legend, nil
	}
	sgemm, bw := r.Machine.SgemmGFLOPS, r.Machine.ReadGBPS
	ridge := sgemm / bw
	xlo, xhi, ylo, yhi := ridge, ridge, sgemm, sgemm
	ds := r.rooflineDots()
	for _, d := range ds {
		for _, xy := range d.xy {
			xlo, xhi = min(xlo, xy.X), max(xhi, xy.X)
			ylo, yhi = min(ylo, xy.Y), max(yhi, xy.Y)
		}
		label, col, shape := d.s.style(d.i)
		sc, err := plotter.NewScatter(d.xy)
		if err != nil {
			return nil, legend, err
		}
		sc.Color, sc.Shape, sc.Radius = col, shape, vg.Points(dotRadius)
		p.Add(sc)
		legend.Add(label, sc)
	}
	// A point flagged above a ceiling (Point.Flag) is ringed in red, so
	// that a dot over the roof reads as a doubt, not a result.
	if flagged := r.flaggedDots(); len(flagged) > 0 {
		ring, err := plotter.NewScatter(flagged)
		if err != nil {
			return nil, legend, err
		}
		ring.Color, ring.Shape, ring.Radius = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, draw.RingGlyph{}, vg.Points(8)
		p.Add(ring)
		legend.Add("above a ceiling once measured again (flag)", ring)
	}
	// At least four octaves of the memory ceiling, so that its slope
	// shows and its label fits on it.
	xlo, xhi = min(xlo/2, ridge/16), xhi*2
	ylo = min(ylo, xlo*bw)
	roof, err := plotter.NewLine(plotter.XYs{{X: xlo, Y: xlo * bw}, {X: ridge, Y: sgemm}, {X: xhi, Y: sgemm}})
	if err != nil {
		return nil, legend, err
	}
	roof.Color, roof.Width = color.Black, vg.Points(2)
	p.Add(roof)
	legend.Add("roofline", roof)
	mem, err := memoryLabel(xlo, sgemm, bw)
	if err != nil {
		return nil, legend, err
	}
	p.Add(mem)
	labels := &roofLabels{sgemm: sgemm, bw: bw, roof: roof.XYs, mem: mem, ns: nLabels(ds)}
	for _, d := range ds {
		labels.dots = append(labels.dots, d.xy...)
	}
	p.Add(labels)
	p.X.Min, p.X.Max = xlo, xhi
	p.Y.Min, p.Y.Max = ylo/2, yhi*2
	measured := "measured in the run"
	if n := len(r.Machine.CeilingProbes); n > 1 {
		measured = fmt.Sprintf("(best of %d probes)", n)
	}
	p.Title.Text += fmt.Sprintf("\nceilings %s: float32 Sgemm %.1f GFLOP/s on every thread, read %.1f GB/s", measured, sgemm, bw)
	return p, legend, nil
}

// roofLabels draws the roofline chart's labels in its data area: the
// compute ceiling's name on its line just right of the ridge, the
// ridge's above the corner, to its left, and each group of dots' N
// (nLabels) around its dot. Where each goes depends on the canvas's size
// and the axes' ranges, so they are placed when drawn (placeLabels): each
// in the first of its places (aroundDot for an N) that lies inside the
// area and on no other label nor the memory ceiling's, covering as few
// dots and as little of the roofline as it can. A label with no free
// place is left out; the first and last N are placed before the Ns
// between them (endsFirst), so that those give way first.
type roofLabels struct {
	sgemm, bw float64
	roof      plotter.XYs // the roofline's corners
	dots      plotter.XYs // every dot, which a label had better not hide
	mem       *lineLabel
	ns        plotter.XYLabels
}

// placedLabel is a label roofLabels draws, in box.
type placedLabel struct {
	text string
	box  vg.Rectangle
}

// Labels' sizes, in points: the text, the dots' marker radius (as the
// scatter draws them), and the gap from a dot to its label.
const (
	roofLabelSize = 10
	dotRadius     = 4
	dotGap        = dotRadius + 2
)

// layout places the labels on c, the data canvas of plt.
func (l *roofLabels) layout(c draw.Canvas, plt *plot.Plot) []placedLabel {
	f := face(roofLabelSize)
	trX, trY := plt.Transforms(&c)
	at := func(xy plotter.XY) vg.Point { return vg.Point{X: trX(xy.X), Y: trY(xy.Y)} }

	var hard []vg.Rectangle
	if l.mem != nil {
		hard = l.mem.boxes(c, plt)
	}
	var soft [][]vg.Rectangle
	for _, d := range l.dots {
		p := at(d)
		soft = append(soft, []vg.Rectangle{{Min: p.Add(vg.Point{X: -dotRadius, Y: -dotRadius}), Max: p.Add(vg.Point{X: dotRadius, Y: dotRadius})}})
	}
	for i := 1; i < len(l.roof); i++ {
		soft = append(soft, segmentBoxes(at(l.roof[i-1]), at(l.roof[i]), 4))
	}

	var texts []string
	var cands [][]vg.Rectangle
	ridge := at(plotter.XY{X: l.sgemm / l.bw, Y: l.sgemm})
	const g = 6 // from the ridge along the ceiling
	compute := fmt.Sprintf("compute: Sgemm %.1f GFLOP/s", l.sgemm)
	sz := textSize(f, compute)
	texts = append(texts, compute)
	cands = append(cands, []vg.Rectangle{
		rectAt(vg.Point{X: ridge.X + g, Y: ridge.Y + 3}, sz),
		rectAt(vg.Point{X: c.Max.X - g - sz.X, Y: ridge.Y + 3}, sz),
		rectAt(vg.Point{X: ridge.X + g, Y: ridge.Y - 3 - sz.Y}, sz),
		rectAt(vg.Point{X: c.Max.X - g - sz.X, Y: ridge.Y - 3 - sz.Y}, sz),
	})
	rl := fmt.Sprintf("ridge %s flop/B", shortNumber(math.Round(l.sgemm/l.bw*100)/100))
	sz = textSize(f, rl)
	texts = append(texts, rl)
	cands = append(cands, []vg.Rectangle{
		rectAt(vg.Point{X: ridge.X - g - sz.X, Y: ridge.Y + 3}, sz),
		rectAt(vg.Point{X: ridge.X + g, Y: ridge.Y - 3 - sz.Y}, sz),
		rectAt(vg.Point{X: ridge.X - g - sz.X, Y: ridge.Y - 3 - sz.Y}, sz),
	})
	for _, i := range endsFirst(len(l.ns.Labels)) {
		texts = append(texts, l.ns.Labels[i])
		cands = append(cands, aroundDot(at(l.ns.XYs[i]), textSize(f, l.ns.Labels[i]), dotGap, c.Rectangle))
	}
	var out []placedLabel
	for i, k := range placeLabels(cands, c.Rectangle, hard, soft) {
		if k >= 0 {
			out = append(out, placedLabel{texts[i], cands[i][k]})
		}
	}
	return out
}

// Plot implements plot.Plotter.
func (l *roofLabels) Plot(c draw.Canvas, plt *plot.Plot) {
	f := face(roofLabelSize)
	for _, pl := range l.layout(c, plt) {
		fillInBox(c, f, pl.box, pl.text)
	}
}
