// Package heatmap draws attention weights as a heatmap, the picture the
// illustrated self-attention tutorials draw: one cell per weight, the
// queries down the side and the keys along the bottom, with a colour bar.
//
//	          key 0  key 1  key 2
//	query 0 [ P₀₀    P₀₁    P₀₂ ]
//	query 1 [ P₁₀    P₁₁    P₁₂ ]
//
// # Layout of the input
//
// Write takes the weights of one head as a dense row-major []float32 of
// rows × cols values: weights[i*cols+j] is how much query i attends to
// key j (the [Nq, Nk] matrix kernels.Attention returns with
// Options.Weights for a rank-2 problem, or one [Nq, Nk] slice of its
// [B, H, Nq, Nk] weights). Row 0 is drawn at the top, as a matrix is
// written, and column 0 at the left.
//
// # Colours
//
// The palette is sequential and perceptually ordered (Kenneth Moreland's
// luminance interpolation of ColorBrewer's yellow-green-blue scheme, as
// gonum.org/v1/plot/palette/moreland and brewer provide it): light for
// weights near 0, dark blue for the largest. The colour range is
// [0, Options.Max]; when Max is 0 it is [0, the largest weight], so that
// the rows of a long sequence, whose weights are all small, still show
// their structure. Set Max to 1 to draw every picture on the same scale
// of probabilities. Weights above Max get the last colour.
//
// # Sizes and formats
//
// Matrices up to MaxSide × MaxSide are drawn. Without Options.Width and
// Height the figure is sized so that cells are square, at most
// 0.75 inch and at least one pixel at Options.DPI (DefaultDPI, 150),
// widened if need be for the title. Tick labels are thinned to every
// 2nd, 5th, 10th … cell when the cells are too small for all of them,
// and column labels wider than their cells are turned a quarter. Cell
// values are written inside the cells when both sides are at most
// AnnotateLimit, unless Options.Annotate says otherwise: two decimals,
// and "0" for a weight that is exactly 0 (a masked key).
//
// The format is png, jpg, tif, svg or pdf (FormatOf reads it from a
// file name). Raster formats draw the cells as an image of about one
// point per pixel, which leaves no anti-aliased seams between cells;
// svg and pdf draw them as rectangles, up to VectorCells cells, and as
// an embedded image of one pixel per weight above that.
//
// # Errors
//
// Bad input is an error naming the sizes, never a panic, and nothing is
// written to the io.Writer then:
//
//   - a shape that does not match the data or the labels:
//     backend.ErrShape;
//   - a matrix over MaxSide, or a figure over MaxSize or MaxPixels:
//     backend.ErrTooLarge;
//   - NaN or an infinity: backend.ErrNonFinite;
//   - a negative weight, an option out of range, or a figure too small
//     for its labels: ErrRange;
//   - an unknown format: backend.ErrUnsupported.
package heatmap
