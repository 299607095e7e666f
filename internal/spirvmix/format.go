package spirvmix

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// Ratio is a/b with one decimal, "-" where b is 0.
func Ratio(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(a)/float64(b))
}

// Summary is the module's counts in one line.
func (r *Report) Summary() string {
	c := r.Module
	return fmt.Sprintf("%d functions, %d loops, %d loop counters, %d UMin, %d index clamps%s, %d FAdd/FMul, %d barriers, %d conversions",
		r.Funcs, len(r.Loops), c.Counters, c.UMins, c.Clamps, clampedIn(c.ClampedIn), r.FAddFMul, c.Barriers, c.Conversions)
}

// clampedIn lists the clamps by storage class, " (12 Workgroup, 2
// Function)", "" for none.
func clampedIn(by map[string]int) string {
	if len(by) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%d %s", by[k], k))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// TableHeader names Row's columns, tab-separated.
const TableHeader = "loop\tin\tdepth\tinstr\tfma\tgld\twld\twst\tbar\tsg\tctr\tclamp\tcall\tfma/gld\tfma/wld\tfma/bar\tB/gld\tchk/it\tcvt/it"

// Row is one loop's counts and ratios, tab-separated, under TableHeader:
// the loop (marked * when innermost), its parent, depth, counts, then
// FMAs per global load, per workgroup load and per barrier, bytes a
// global load, checks (counters and clamps) and conversions an iteration.
func (l Loop) Row() string {
	c := l.Counts
	name := l.Name
	if l.Inner {
		name += "*"
	}
	in := l.Parent
	if in == "" {
		in = l.Func
	}
	return fmt.Sprintf("%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%d\t%d",
		name, in, l.Depth, c.Instrs, c.FMA, c.GlobalLoads, c.WorkgroupLoads, c.WorkgroupStores,
		c.Barriers, c.Subgroup, c.Counters, c.Clamps, c.Calls,
		Ratio(c.FMA, c.GlobalLoads), Ratio(c.FMA, c.WorkgroupLoads), Ratio(c.FMA, c.Barriers),
		Ratio(c.GlobalLoadBytes, c.GlobalLoads), c.Counters+c.Clamps, c.Conversions)
}

// WriteTable writes the loops as an aligned table (only the innermost
// ones when inner is set), each line prefixed by indent.
func (r *Report) WriteTable(w io.Writer, indent string, inner bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	rows := []string{TableHeader}
	for _, l := range r.Loops {
		if !inner || l.Inner {
			rows = append(rows, l.Row())
		}
	}
	for _, row := range rows {
		if _, err := fmt.Fprintf(tw, "%s%s\t\n", indent, row); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// Legend says how the table counts, for the end of a report.
const Legend = `Static counts per loop body: one pass over each of the loop's own blocks
(both arms of every branch; loops nested in it are their own rows; a call's
callee counted once), not a run's dynamic counts. * marks an innermost loop;
"in" is the enclosing loop or the function. fma: lanes of FAdd, FSub, FMul,
VectorTimesScalar and Fma, and of a Dot's operands. gld: loads from storage
buffers (B/gld their bytes); wld, wst: workgroup loads and stores; bar:
OpControlBarrier; sg: subgroup operations; ctr: naga's loop-bounding counters; clamp: UMin/SMin
indexing an access chain; chk/it: ctr + clamp; cvt/it: conversions
(OpFConvert, OpConvert*, pack/unpack), an instruction each.
`

// Hot is the loop with the most FMA lanes (the first written of equals)
// and the loops it is nested in, innermost first: where a kernel's
// arithmetic is and what feeds it. It is nil for a module without loops.
func (r *Report) Hot() []Loop {
	best := -1
	for i, l := range r.Loops {
		if best < 0 || l.Counts.FMA > r.Loops[best].Counts.FMA ||
			l.Counts.FMA == r.Loops[best].Counts.FMA && l.Name < r.Loops[best].Name {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	byName := map[string]Loop{}
	for _, l := range r.Loops {
		byName[l.Name] = l
	}
	path := []Loop{r.Loops[best]}
	for p := r.Loops[best].Parent; p != ""; p = byName[p].Parent {
		path = append(path, byName[p])
	}
	return path
}

// SummaryHeader and SummaryRow make a Markdown table of the hot loops:
// SummaryRow's first cells are what names the kernel, then the module's
// loops and counters, its UMins and index clamps, then the loop's counts
// and ratios.
const SummaryHeader = "| workload | kernel | loops, counters | UMin, clamps | loop | fma | gld | B/gld | wld | bar | sg | fma/gld | fma/wld | fma/bar | chk/it | cvt/it |\n" +
	"|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"

// SummaryRow is one loop of r's Hot path; workload and kernel are left
// blank by the caller on a kernel's later rows, and so are the module's
// cells when first is false.
func (r *Report) SummaryRow(workload, kernel string, l Loop, first bool) string {
	c := l.Counts
	mod, clamp := "", ""
	if first {
		mod = fmt.Sprintf("%d, %d", len(r.Loops), r.Module.Counters)
		clamp = fmt.Sprintf("%d, %d", r.Module.UMins, r.Module.Clamps)
	}
	name := l.Name
	if l.Parent != "" {
		name += " in " + l.Parent
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %d | %d | %s | %d | %d | %d | %s | %s | %s | %d | %d |",
		workload, kernel, mod, clamp, name, c.FMA, c.GlobalLoads, Ratio(c.GlobalLoadBytes, c.GlobalLoads),
		c.WorkgroupLoads, c.Barriers, c.Subgroup, Ratio(c.FMA, c.GlobalLoads), Ratio(c.FMA, c.WorkgroupLoads),
		Ratio(c.FMA, c.Barriers), c.Counters+c.Clamps, c.Conversions)
}
