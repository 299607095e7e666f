package heatmap

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/attn-go/attn/backend"
)

// Limits of what Write draws.
const (
	// MaxSide is the largest number of rows or of columns Write draws:
	// 4096 × 4096 weights are already a 16-megapixel picture.
	MaxSide = 4096
	// AnnotateLimit is the largest side for which AnnotateAuto writes
	// each cell's value in it.
	AnnotateLimit = 12
	// VectorCells is the largest number of cells drawn as vector
	// rectangles; above it the cells are one raster image.
	VectorCells = 128 * 128
	// DefaultDPI is the resolution of raster formats when Options.DPI
	// is 0.
	DefaultDPI = 150
	// MaxDPI is the highest Options.DPI.
	MaxDPI = 600
	// MaxPixels bounds a raster figure (width × height in pixels, 128
	// MiB of RGBA), MaxSize each side of any figure.
	MaxPixels = 1 << 25
	MaxSize   = 200 * vg.Inch
)

// ErrRange reports a value outside what a heatmap of weights accepts: a
// negative weight, or an option out of its range.
var ErrRange = errors.New("heatmap: value out of range")

// Annotation says whether each cell's value is written in it.
type Annotation int

// The annotation modes.
const (
	// AnnotateAuto writes the values when both sides are at most
	// AnnotateLimit.
	AnnotateAuto Annotation = iota
	// AnnotateOn always writes them, in a font scaled to the cells.
	AnnotateOn
	// AnnotateOff never writes them.
	AnnotateOff
)

// Options are the optional parts of a heatmap. The zero value (or a nil
// *Options) draws indices 0 … n−1 on the axes, labelled "key" and
// "query", sized to the matrix.
type Options struct {
	// Title is drawn above the cells; empty for none.
	Title string
	// RowLabels name the queries, top to bottom, and ColLabels the
	// keys, left to right. Each is nil or has one label per row or
	// column. Labels longer than 24 characters are shortened with "…".
	// When the cells are too small for every label, every k-th is
	// shown.
	RowLabels, ColLabels []string
	// XLabel and YLabel name the axes; empty means "key" and "query".
	XLabel, YLabel string
	// Annotate says whether the values are written in the cells.
	Annotate Annotation
	// Max is the weight drawn in the palette's last colour; 0 means the
	// largest weight (or 1 when every weight is 0).
	Max float64
	// Width and Height are the size of the whole figure; 0 sizes it to
	// the matrix with square cells. When only one is given, the other
	// follows from square cells.
	Width, Height vg.Length
	// DPI is the resolution of raster formats (png, jpg, tif); 0 means
	// DefaultDPI.
	DPI int
}

// formats maps the names Write accepts to the name gonum/plot registers
// them under.
var formats = map[string]string{
	"png": "png", "jpg": "jpg", "jpeg": "jpeg", "tif": "tif", "tiff": "tiff",
	"svg": "svg", "pdf": "pdf",
}

var raster = map[string]bool{"png": true, "jpg": true, "jpeg": true, "tif": true, "tiff": true}

// Formats lists the formats Write accepts.
func Formats() []string {
	return []string{"png", "jpg", "jpeg", "tif", "tiff", "svg", "pdf"}
}

// FormatOf returns the format a file name's extension asks for: "png"
// for "attn.PNG". It is an error wrapping backend.ErrUnsupported when
// the extension is missing or not one of Formats.
func FormatOf(path string) (string, error) {
	ext := strings.TrimPrefix(filepath.Ext(path), ".")
	if ext == "" {
		return "", backend.Errorf(backend.ErrUnsupported, "%s has no extension to choose the image format by (%s)", path, strings.Join(Formats(), ", "))
	}
	f, ok := formats[strings.ToLower(ext)]
	if !ok {
		return "", backend.Errorf(backend.ErrUnsupported, "%s: image format %q is not one of %s", path, ext, strings.Join(Formats(), ", "))
	}
	return f, nil
}

func checkFormat(format string) (string, error) {
	f, ok := formats[strings.ToLower(strings.TrimPrefix(format, "."))]
	if !ok {
		return "", backend.Errorf(backend.ErrUnsupported, "image format %q is not one of %s", format, strings.Join(Formats(), ", "))
	}
	return f, nil
}

// Write draws the rows × cols weights, row-major (weights[i*cols+j] is
// query i's weight on key j), as a heatmap in the given format ("png",
// "svg", "pdf", … see Formats) and writes it to w. Nothing is written
// when the input is refused.
func Write(w io.Writer, format string, rows, cols int, weights []float32, opt *Options) (err error) {
	f, format, err := plan(format, rows, cols, weights, opt)
	if err != nil {
		return err
	}
	c, err := newCanvas(format, f.width, f.height, f.dpi)
	if err != nil {
		return err
	}
	// gonum/plot panics on what it cannot draw; nothing has been
	// written to w while drawing.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("drawing the %d×%d heatmap as %s: %v", rows, cols, format, p)
		}
	}()
	f.draw(draw.New(c))
	_, err = c.WriteTo(w)
	return err
}

// plan checks the input and lays the figure out for the format.
func plan(format string, rows, cols int, weights []float32, opt *Options) (*figure, string, error) {
	if opt == nil {
		opt = &Options{}
	}
	format, err := checkFormat(format)
	if err != nil {
		return nil, "", err
	}
	vmax, err := check(rows, cols, weights, opt)
	if err != nil {
		return nil, "", err
	}
	dpi := opt.DPI
	if dpi == 0 {
		dpi = DefaultDPI
	}
	f, err := newFigure(rows, cols, weights, vmax, opt, dpi, raster[format])
	if err != nil {
		return nil, "", err
	}
	if f.width > MaxSize || f.height > MaxSize {
		return nil, "", backend.Errorf(backend.ErrTooLarge, "a figure of %.0f × %.0f inches is larger than the %.0f inches a side this package draws", f.width/vg.Inch, f.height/vg.Inch, MaxSize/vg.Inch)
	}
	if raster[format] {
		// Whole pixels, so that the drawing fills the image exactly.
		px := func(l vg.Length) float64 { return math.Max(1, math.Round(l.Dots(float64(dpi)))) }
		wpx, hpx := px(f.width), px(f.height)
		if wpx*hpx > MaxPixels {
			return nil, "", backend.Errorf(backend.ErrTooLarge, "a %s of %.0f × %.0f pixels (%.3g × %.3g inches at %d dpi) is more than the %d megapixels this package draws", format, wpx, hpx, f.width/vg.Inch, f.height/vg.Inch, dpi, MaxPixels>>20)
		}
		f.width = vg.Length(wpx/float64(dpi)) * vg.Inch
		f.height = vg.Length(hpx/float64(dpi)) * vg.Inch
	}
	return f, format, nil
}

// newCanvas returns a canvas of the format; raster ones at dpi.
func newCanvas(format string, w, h vg.Length, dpi int) (vg.CanvasWriterTo, error) {
	img := func() *vgimg.Canvas { return vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi)) }
	switch format {
	case "png":
		return vgimg.PngCanvas{Canvas: img()}, nil
	case "jpg", "jpeg":
		return vgimg.JpegCanvas{Canvas: img()}, nil
	case "tif", "tiff":
		return vgimg.TiffCanvas{Canvas: img()}, nil
	}
	return draw.NewFormattedCanvas(w, h, format)
}

// check validates the input and returns the top of the colour range.
func check(rows, cols int, weights []float32, opt *Options) (vmax float64, err error) {
	switch {
	case rows < 1 || cols < 1:
		return 0, backend.Errorf(backend.ErrShape, "%d×%d weights: a heatmap needs at least one row and one column", rows, cols)
	case rows > MaxSide || cols > MaxSide:
		return 0, backend.Errorf(backend.ErrTooLarge, "%d×%d weights: a heatmap draws at most %d×%d", rows, cols, MaxSide, MaxSide)
	case len(weights) != rows*cols:
		return 0, backend.Errorf(backend.ErrShape, "%d×%d weights need %d values, have %d", rows, cols, rows*cols, len(weights))
	case opt.RowLabels != nil && len(opt.RowLabels) != rows:
		return 0, backend.Errorf(backend.ErrShape, "%d row labels for %d×%d weights: want one per row (%d)", len(opt.RowLabels), rows, cols, rows)
	case opt.ColLabels != nil && len(opt.ColLabels) != cols:
		return 0, backend.Errorf(backend.ErrShape, "%d column labels for %d×%d weights: want one per column (%d)", len(opt.ColLabels), rows, cols, cols)
	case math.IsNaN(opt.Max) || math.IsInf(opt.Max, 0) || opt.Max < 0:
		return 0, backend.Errorf(ErrRange, "colour range maximum %v: want a finite value ≥ 0 (0 for the largest weight)", opt.Max)
	case !(opt.Width >= 0 && opt.Width <= MaxSize) || !(opt.Height >= 0 && opt.Height <= MaxSize):
		return 0, backend.Errorf(ErrRange, "figure size %v × %v points: want sizes from 0 (to size it to the matrix) to %v", opt.Width.Points(), opt.Height.Points(), MaxSize.Points())
	case opt.DPI < 0 || opt.DPI > MaxDPI:
		return 0, backend.Errorf(ErrRange, "%d dpi: want 1 to %d (0 for %d)", opt.DPI, MaxDPI, DefaultDPI)
	case opt.Annotate < AnnotateAuto || opt.Annotate > AnnotateOff:
		return 0, backend.Errorf(ErrRange, "annotation mode %d is not AnnotateAuto, AnnotateOn or AnnotateOff", int(opt.Annotate))
	}
	var largest float64
	for k, v := range weights {
		f := float64(v)
		switch {
		case math.IsNaN(f) || math.IsInf(f, 0):
			return 0, backend.Errorf(backend.ErrNonFinite, "weight (%d, %d) of the %d×%d weights is %v", k/cols, k%cols, rows, cols, v)
		case f < 0:
			return 0, backend.Errorf(ErrRange, "weight (%d, %d) of the %d×%d weights is %v: weights are ≥ 0", k/cols, k%cols, rows, cols, v)
		}
		largest = max(largest, f)
	}
	vmax = opt.Max
	if vmax == 0 {
		vmax = largest
	}
	if vmax == 0 {
		vmax = 1 // every key hidden from every query: all zeros
	}
	return vmax, nil
}

// Error wording shared by the layout.
func tooSmall(what string, have, need vg.Length) error {
	return backend.Errorf(ErrRange, "figure %s %.0f points is too small: its labels and colour bar alone need %.0f", what, have.Points(), need.Points())
}

// shorten cuts a label to n runes, marking the cut with "…".
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// valueLabel is the text written in a cell: two decimals, and "0" for a
// weight that is exactly 0 (a masked key) so that it stands apart from
// one that rounds to 0.00.
func valueLabel(v float32) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%.2f", v)
}
