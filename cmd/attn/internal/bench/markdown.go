package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// WriteMarkdown writes the report as Markdown for a README: the machine
// and its CPU features, versions, the kernel attn-cpu ran on, and the
// command, then for each causal setting a table of GFLOP/s (with the
// fraction of the roofline of the ceilings measured in the run and of the
// FMA peak), one of tokens/s and GB/s (with the fraction of the read
// bandwidth), one of the device's own time beside the wall time where a
// point recorded it (gpu_s), and one of peak memory, implementations down
// and N across. A point that
// did not run shows its status; one whose answers were wrong says so next
// to its speed, as does one flagged above a ceiling (listed with its
// flag after the tables).
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	rev := r.Versions["vcs.revision"]
	if rev == "" {
		rev = "(revision not recorded)"
	}
	if tags := r.Versions["-tags"]; tags != "" {
		rev += " -tags " + tags
	}
	cpu := r.Machine.CPU
	if f := featureList(r.Machine.CPUFeatures); f != "" {
		cpu += " (" + f + ")"
	}
	if k := kernelPhrase(r.Points); k != "" {
		rev += ", " + k
	}
	if g, ok := r.Env["GODEBUG"]; ok && g != "(unset)" {
		rev += ", GODEBUG " + g
	}
	var ceilings []string
	if r.Machine.ReadGBPS > 0 {
		ceilings = append(ceilings, fmt.Sprintf("read bandwidth %.1f GB/s", r.Machine.ReadGBPS))
	}
	if r.Machine.SgemmGFLOPS > 0 {
		ceilings = append(ceilings, fmt.Sprintf("Sgemm %.1f GFLOP/s on every thread", r.Machine.SgemmGFLOPS))
	}
	if r.Machine.FMAGFLOPS > 0 {
		ceilings = append(ceilings, fmt.Sprintf("FMA peak %.1f GFLOP/s (%s)", r.Machine.FMAGFLOPS, r.Machine.FMAKernel))
	}
	if r.Machine.AMXGFLOPS > 0 {
		ceilings = append(ceilings, fmt.Sprintf("AMX peak %.1f GFLOP/s in bfloat16 (%s)", r.Machine.AMXGFLOPS, r.Machine.AMXKernel))
	}
	measured := ""
	if len(ceilings) > 0 {
		measured = ", " + strings.Join(ceilings, " and ") + " (" + r.Machine.measuredIn() + ")"
	}
	fmt.Fprintf(&b, "%s, %d CPUs (GOMAXPROCS %d)%s, %s; %s, attn %s, OPENBLAS_CORETYPE %s.\n\n",
		cpu, r.Machine.CPUs, r.Machine.GOMAXPROCS, measured, r.Date.Format("2006-01-02"),
		r.Versions["go"], rev, r.Env["OPENBLAS_CORETYPE"])
	if line := GPUCeilingsLine(r.Machine.gpuCeilings(), len(r.Machine.CeilingProbes)); line != "" {
		fmt.Fprintf(&b, "%s.\n\n", line)
	}
	fmt.Fprintf(&b, "    %s\n\n", rerunnable(r.Command))
	for _, causal := range []bool{false, true} {
		sub := r.filter(func(pt Point) bool { return pt.Causal == causal })
		if len(sub.Points) == 0 {
			continue
		}
		what, counted := "non-causal", ""
		if causal {
			what = "causal"
		}
		if causal || slices.ContainsFunc(sub.Points, func(pt Point) bool { return pt.Window != nil }) {
			counted = " (only the attended pairs counted)"
		}
		ns := sub.sweptNs()
		rows := sub.series(false)
		title, _, _ := strings.Cut(sub.title("GFLOP/s, "+what+counted), "\n")
		ofRoof := ""
		if slices.ContainsFunc(sub.Points, func(pt Point) bool { return pt.RooflineFrac > 0 }) {
			ofRoof = fmt.Sprintf(" (in brackets, of the roofline min(%.1f GFLOP/s, intensity × %.1f GB/s), C where compute bounds it, M where memory does)",
				r.Machine.SgemmGFLOPS, r.Machine.ReadGBPS)
		}
		if slices.ContainsFunc(sub.Points, func(pt Point) bool { return pt.FMAFrac > 0 }) {
			ofRoof += fmt.Sprintf(" (and after it, of the %.1f GFLOP/s FMA peak)", r.Machine.FMAGFLOPS)
		}
		if slices.ContainsFunc(sub.Points, func(pt Point) bool { return pt.AMXFrac > 0 }) {
			ofRoof += fmt.Sprintf(" (AMX: a bfloat16 point's, of the tiles' %.1f GFLOP/s peak)", r.Machine.AMXGFLOPS)
		}
		if slices.ContainsFunc(sub.Points, func(pt Point) bool { return pt.GPUFMAFrac > 0 }) {
			ofRoof += " (GPU FMA: by device time, of the GPU's FMA ceiling in the point's dtype)"
		}
		fmt.Fprintf(&b, "%s%s:\n\n", title, ofRoof)
		table(&b, "GFLOP/s", ns, rows, func(pt Point) string {
			if pt.Runs == 0 {
				return string(pt.Status)
			}
			s := fmt.Sprintf("%.1f", pt.GFLOPS)
			var of []string
			if pt.RooflineFrac > 0 { // none on a GPU (placement)
				of = append(of, roofString(pt))
			}
			if pt.FMAFrac > 0 {
				of = append(of, fracString(pt.FMAFrac)+" FMA")
			}
			if pt.AMXFrac > 0 {
				of = append(of, fracString(pt.AMXFrac)+" AMX")
			}
			if pt.GPUFMAFrac > 0 {
				of = append(of, fracString(pt.GPUFMAFrac)+" GPU FMA")
			}
			if pt.Flag != "" {
				of = append(of, "flagged")
			}
			if len(of) > 0 {
				s += " (" + strings.Join(of, ", ") + ")"
			}
			if pt.Status == StatusWrong {
				s += ", wrong"
			}
			return s
		})
		ofBW := ""
		if r.Machine.ReadGBPS > 0 {
			ofBW = fmt.Sprintf(" (in brackets, of the %.1f GB/s the machine reads)", r.Machine.ReadGBPS)
		}
		if slices.ContainsFunc(sub.Points, func(pt Point) bool { return pt.GPUReadFrac > 0 }) {
			ofBW += fmt.Sprintf(" (GPU BW: by device time, of the %.1f GB/s WGSL reads on the GPU)", r.Machine.GPUReadGBPS)
		}
		fmt.Fprintf(&b, "Tokens/s (B·Nq / median time) and GB/s of compulsory traffic%s, %s:\n\n", ofBW, what)
		table(&b, "tok/s, GB/s", ns, rows, func(pt Point) string {
			if pt.Runs == 0 {
				return string(pt.Status)
			}
			s := fmt.Sprintf("%s, %.2f", rateString(pt.tokensPerS()), pt.GBPS)
			var of []string
			if pt.ReadBWFrac > 0 { // none on a discrete GPU (inHostMemory)
				of = append(of, fracString(pt.ReadBWFrac))
			}
			if pt.GPUReadFrac > 0 {
				of = append(of, fracString(pt.GPUReadFrac)+" GPU BW")
			}
			if len(of) > 0 {
				s += " (" + strings.Join(of, ", ") + ")"
			}
			if pt.Status == StatusWrong {
				s += ", wrong"
			}
			return s
		})
		if slices.ContainsFunc(sub.Points, func(pt Point) bool { return pt.GPUS > 0 }) {
			fmt.Fprintf(&b, "Time on the device (gpu_s, the median of its own timestamps) and wall time (median), %s:\n\n", what)
			table(&b, "device, wall", ns, rows, func(pt Point) string {
				if pt.Runs == 0 {
					return string(pt.Status)
				}
				return gpuString(pt.GPUS) + ", " + roundDuration(time.Duration(pt.MedianS*float64(time.Second))).String()
			})
		}
		fmt.Fprintf(&b, "Peak memory, %s (process RSS; device bytes for the GPU):\n\n", what)
		table(&b, "peak", ns, rows, func(pt Point) string {
			if pt.Runs == 0 {
				return string(pt.Status)
			}
			s := memString(pt.PeakRSS)
			if pt.DeviceBytes > 0 {
				s += " (" + memString(pt.DeviceBytes) + ")"
			}
			return s
		})
	}
	// One note per implementation and status: the first point's error.
	var notes []string
	seen := map[string]bool{}
	for _, pt := range r.Points {
		key := pt.Impl + " " + pt.Strategy + " " + pt.DType + " " + string(pt.Status)
		if pt.Status == StatusOK || seen[key] {
			continue
		}
		seen[key] = true
		causal := ""
		if pt.Causal {
			causal = ", causal"
		}
		if pt.DType != "" {
			causal += ", " + pt.DType
		}
		n := fmt.Sprintf("N=%d", pt.N)
		if pt.Decode() {
			n += fmt.Sprintf(" Nq=%d", pt.Nq)
		}
		notes = append(notes, fmt.Sprintf("- %s %s, %s from %s%s: %s", pt.Impl, pt.Strategy, pt.Status, n, causal, pt.Error))
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, "Points that did not run cleanly:\n\n%s\n", strings.Join(notes, "\n"))
	}
	var flags []string
	for _, pt := range r.Points {
		if pt.Flag != "" {
			flags = append(flags, fmt.Sprintf("- %s: %s", pointName(pt), pt.Flag))
		}
	}
	if len(flags) > 0 {
		fmt.Fprintf(&b, "\nPoints above a ceiling once measured again (flag):\n\n%s\n", strings.Join(flags, "\n"))
	}
	b.WriteString("\nWhat the columns mean:\n\n")
	if err := WriteGlossary(&b, GlossaryKeys(r.Points), true); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// pointName names a point in a note: its implementation, strategy,
// shape and dtype ("attn-cpu fused N=2048 Nq=1, causal, bf16").
func pointName(pt Point) string {
	s := fmt.Sprintf("%s %s N=%d", pt.Impl, pt.Strategy, pt.N)
	if pt.Decode() {
		s += fmt.Sprintf(" Nq=%d", pt.Nq)
	}
	if pt.Causal {
		s += ", causal"
	}
	if pt.DType != "" {
		s += ", " + pt.DType
	}
	if pt.Layers > 0 {
		s += fmt.Sprintf(", L=%d", pt.Layers)
	}
	return s
}

// table writes one Markdown table: a row per series, a column per N.
func table(b *strings.Builder, corner string, ns []int, rows []*series, cell func(Point) string) {
	fmt.Fprintf(b, "| %s |", corner)
	for _, n := range ns {
		fmt.Fprintf(b, " N=%d |", n)
	}
	b.WriteString("\n|---|")
	for range ns {
		b.WriteString("---:|")
	}
	for _, s := range rows {
		fmt.Fprintf(b, "\n| %s |", s.label)
		for _, n := range ns {
			c := ""
			for _, pt := range s.points {
				if pt.N == n {
					c = cell(pt)
				}
			}
			fmt.Fprintf(b, " %s |", c)
		}
	}
	b.WriteString("\n\n")
}

// gpuCeilings are the GPU's ceilings m records, in Ceilings' fields.
func (m Machine) gpuCeilings() Ceilings {
	return Ceilings{GPUReadGBPS: m.GPUReadGBPS, GPUFMAGFLOPS: m.GPUFMAGFLOPS, GPUF16GFLOPS: m.GPUF16GFLOPS, GPUNote: m.GPUCeilingsNote}
}

// GPUCeilingsLine is the line that reports the GPU's ceilings in c,
// the best of probes probes (one where probes < 2), with c.GPUNote:
// "GPU ceilings measured in the run (the best of 3 probes): read 4000.0
// GB/s, f32 FMA 50000.0 GFLOP/s, f16 FMA 100000.0 GFLOP/s (note)". ""
// where none was measured.
func GPUCeilingsLine(c Ceilings, probes int) string {
	if c.GPUReadGBPS <= 0 && c.GPUFMAGFLOPS <= 0 {
		return ""
	}
	rate := func(x float64, unit string) string {
		if x <= 0 {
			return "not measured"
		}
		return fmt.Sprintf("%.1f %s", x, unit)
	}
	s := "GPU ceilings measured in the run"
	if probes > 1 {
		s += fmt.Sprintf(" (the best of %d probes)", probes)
	}
	s += fmt.Sprintf(": read %s, f32 FMA %s, f16 FMA %s",
		rate(c.GPUReadGBPS, "GB/s"), rate(c.GPUFMAGFLOPS, "GFLOP/s"), rate(c.GPUF16GFLOPS, "GFLOP/s"))
	if c.GPUNote != "" {
		s += " (" + c.GPUNote + ")"
	}
	return s
}
