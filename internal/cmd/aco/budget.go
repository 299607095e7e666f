package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Issue 101's budgets: no kernel spills; a decoding kernel holds at most
// 64 VGPRs (RDNA3's 24 waves a SIMD at wave32, an NVIDIA SM's 32 warps
// at 64 registers a thread), every other kernel (prefill, the backward,
// the staged path's) at most 128.
const (
	decodeBudget = 64
	otherBudget  = 128
)

// decoding are the kernels of a decoding step: each cache dtype's,
// index lists' and trees' (lanedecode.wgsl, or fuseddecode.wgsl without
// subgroups) and merge.wgsl, which folds the step's splits.
var decoding = []string{"lanedecode", "fuseddecode", "merge"}

// planMemory is each plan's workgroup memory in bytes: lavapipe's
// limit for the hardware plan (the adapter the captures run on), and
// each target's (gpu/internal/plan's Targets, which this package cannot
// import). A kernel whose LDS is past it would not run on that device:
// WebGPU's limit, which wgpu-native 29 does not check when it creates a
// pipeline (lavapipe compiled rdna3's 62 KiB tiles).
var planMemory = map[string]int{
	"hardware": 32 << 10,
	"h100":     48 << 10,
	"h200":     48 << 10,
	"rdna3":    64 << 10,
	"apple":    32 << 10,
}

// Budget is the VGPRs issue 101 allows the kernel called name.
func Budget(name string) int {
	if slices.Contains(decoding, name) {
		return decodeBudget
	}
	return otherBudget
}

// Allowance is a kernel that does not meet its budget today, listed in
// the budgets file: the VGPRs and spills it may have, so that it grows
// no worse, and the LDS bytes past its plan's workgroup memory (0: none).
type Allowance struct {
	VGPRs, Spills, LDS int
}

// Budgets is the budgets file: allowances by plan, build, workload and
// kernel name.
type Budgets struct {
	allow map[string]Allowance
}

func budgetKey(plan, binding, workload, kernel string) string {
	return plan + " " + binding + " " + workload + " " + kernel
}

// ParseBudgets reads a budgets file: '#' starts a comment; each other
// line is
//
//	PLAN BUILD WORKLOAD KERNEL vgprs=N [spills=N] [lds=N]
//
// (plan hardware, h200, ...; build wgpu-native or gogpu; the workload
// and the kernel's name as the table gives them; lds, ACO's LDS size in
// bytes where it is past the plan's workgroup memory).
func ParseBudgets(r io.Reader) (*Budgets, error) {
	b := &Budgets{allow: map[string]Allowance{}}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 5 || len(f) > 7 {
			return nil, fmt.Errorf("line %d: want PLAN BUILD WORKLOAD KERNEL vgprs=N [spills=N] [lds=N], have %q", n, strings.TrimSpace(line))
		}
		var a Allowance
		haveV := false
		for _, kv := range f[4:] {
			k, v, ok := strings.Cut(kv, "=")
			x, err := strconv.Atoi(v)
			if !ok || err != nil || x < 0 {
				return nil, fmt.Errorf("line %d: %q: want vgprs=N, spills=N or lds=N", n, kv)
			}
			switch k {
			case "vgprs":
				a.VGPRs, haveV = x, true
			case "spills":
				a.Spills = x
			case "lds":
				a.LDS = x
			default:
				return nil, fmt.Errorf("line %d: %q: want vgprs=N, spills=N or lds=N", n, kv)
			}
		}
		if !haveV {
			return nil, fmt.Errorf("line %d: no vgprs=N", n)
		}
		key := budgetKey(f[0], f[1], f[2], f[3])
		if _, dup := b.allow[key]; dup {
			return nil, fmt.Errorf("line %d: %s listed twice", n, key)
		}
		b.allow[key] = a
	}
	return b, sc.Err()
}

// Verdict is a kernel held to its budget.
type Verdict struct {
	// Budget is issue 101's VGPRs for the kernel; Allowed what it may
	// have, the budget or its listed allowance, and AllowedSpills the
	// spills (0 unless listed). Memory is the plan's workgroup memory,
	// AllowedLDS the LDS bytes the kernel may have (Memory unless
	// listed past it).
	Budget, Allowed, AllowedSpills int
	Memory, AllowedLDS             int
	Listed                         bool
	Fail                           bool
	Text                           string
}

// allowance is the allowance listed for r: under any of its workloads
// (its module is the same in each), the largest.
func (b *Budgets) allowance(r *Row) (Allowance, bool) {
	var a Allowance
	found := false
	for _, w := range r.Workloads {
		if x, ok := b.allow[budgetKey(r.Target, r.Binding, w, r.Name())]; ok {
			a.VGPRs, a.Spills, a.LDS = max(a.VGPRs, x.VGPRs), max(a.Spills, x.Spills), max(a.LDS, x.LDS)
			found = true
		}
	}
	return a, found
}

// Check sets each row's verdict: it fails where the kernel did not
// compile, spills more than allowed (nothing, unless listed), has more
// VGPRs than allowed (its budget, unless listed) or more LDS than its
// plan's workgroup memory (unless listed).
func (b *Budgets) Check(rows []*Row) {
	for _, r := range rows {
		v := &Verdict{Budget: Budget(r.Name()), Memory: planMemory[r.Target]}
		v.Allowed, v.AllowedLDS = v.Budget, v.Memory
		if a, ok := b.allowance(r); ok {
			v.Listed, v.Allowed, v.AllowedSpills = true, a.VGPRs, a.Spills
			v.AllowedLDS = max(v.AllowedLDS, a.LDS)
		}
		r.Verdict = v
		vg, sp, lds := r.VGPRs(), r.Spills(), r.LDS()
		var fails []string
		switch {
		case r.Error != "":
			fails = append(fails, "did not compile: "+r.Error)
		default:
			if sp > v.AllowedSpills {
				if v.Listed {
					fails = append(fails, fmt.Sprintf("spills %d, past its allowance of %d", sp, v.AllowedSpills))
				} else {
					fails = append(fails, fmt.Sprintf("spills %d", sp))
				}
			}
			if vg > v.Allowed {
				if v.Listed {
					fails = append(fails, fmt.Sprintf("%d VGPRs, past its allowance of %d", vg, v.Allowed))
				} else {
					fails = append(fails, fmt.Sprintf("%d VGPRs, past its budget of %d", vg, v.Budget))
				}
			}
			if v.Memory > 0 && lds > v.AllowedLDS {
				fails = append(fails, fmt.Sprintf("%d bytes of LDS, past the %s plan's %d of workgroup memory", lds, r.Target, v.Memory))
			}
		}
		meets := vg <= v.Budget && sp == 0 && (v.Memory == 0 || lds <= v.Memory)
		a, _ := b.allowance(r)
		switch {
		case len(fails) > 0:
			v.Fail, v.Text = true, "FAIL: "+strings.Join(fails, "; ")
		case meets && v.Listed:
			v.Text = "ok: meets its budget, its allowance can go"
		case meets:
			v.Text = "ok"
		case vg < a.VGPRs || sp < a.Spills || a.LDS > 0 && lds < a.LDS:
			v.Text = fmt.Sprintf("over budget, under its allowance (vgprs=%d spills=%d lds=%d): lower it", a.VGPRs, a.Spills, a.LDS)
		default:
			v.Text = "over budget, at its allowance"
		}
		if !v.Fail && v.Memory > 0 && lds > v.Memory {
			v.Text += fmt.Sprintf(" (LDS %d, past the plan's %d)", lds, v.Memory)
		}
	}
}

// SeedBudgets is a budgets file's lines for rows: an allowance for each
// kernel over its budget or spilling, at what it has (a kernel's largest
// under one workload), so that none grows worse.
func SeedBudgets(rows []*Row) string {
	type entry struct {
		key string
		a   Allowance
	}
	var out []entry
	at := map[string]int{}
	for _, r := range rows {
		mem := planMemory[r.Target]
		over := mem > 0 && r.LDS() > mem
		if r.Error != "" || r.VGPRs() <= Budget(r.Name()) && r.Spills() == 0 && !over {
			continue
		}
		for _, w := range r.Workloads {
			key := budgetKey(r.Target, r.Binding, w, r.Name())
			i, ok := at[key]
			if !ok {
				i = len(out)
				at[key] = i
				out = append(out, entry{key: key})
			}
			out[i].a.VGPRs = max(out[i].a.VGPRs, r.VGPRs())
			out[i].a.Spills = max(out[i].a.Spills, r.Spills())
			if over {
				out[i].a.LDS = max(out[i].a.LDS, r.LDS())
			}
		}
	}
	var sb strings.Builder
	for _, e := range out {
		fmt.Fprintf(&sb, "%s vgprs=%d", e.key, e.a.VGPRs)
		if e.a.Spills > 0 {
			fmt.Fprintf(&sb, " spills=%d", e.a.Spills)
		}
		if e.a.LDS > 0 {
			fmt.Fprintf(&sb, " lds=%d", e.a.LDS)
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}
