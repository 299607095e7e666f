package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Row is one distinct shader module of a plan and build: the kernel it
// was compiled for (its pipeline's label less the entry point), the
// workloads that compiled it, and ACO's statistics of it.
type Row struct {
	Target    string   `json:"target"`
	Binding   string   `json:"binding"`
	Kernel    string   `json:"kernel"`
	Entry     string   `json:"entry"`
	Workloads []string `json:"workloads"`
	// Wave is the subgroup size ACO compiled the kernel at (32 or 64).
	Wave int `json:"wave"`
	// Stats is every statistic the driver reported, by its name
	// ("VGPRs", "Spilled SGPRs", "Subgroups per SIMD", "Latency", ...).
	Stats map[string]float64 `json:"stats"`
	// Error is why the module did not compile, "" where it did.
	Error   string   `json:"error,omitempty"`
	Verdict *Verdict `json:"verdict,omitempty"`

	spv []byte
}

// Name is the kernel's name: its label's first word (lanedecode,
// fusedtile, merge, ...).
func (r *Row) Name() string {
	name, _, _ := strings.Cut(r.Kernel, " ")
	return name
}

func (r *Row) stat(name string) int {
	return int(r.Stats[name])
}

// VGPRs, SGPRs and the rest are the statistics the tables show.
func (r *Row) VGPRs() int  { return r.stat("VGPRs") }
func (r *Row) Spills() int { return r.stat("Spilled VGPRs") + r.stat("Spilled SGPRs") }
func (r *Row) LDS() int    { return r.stat("LDS size") }

// acoLine is one line of acostats's output.
type acoLine struct {
	Device      string `json:"device"`
	File        string `json:"file"`
	Error       string `json:"error"`
	VkResult    *int   `json:"vkresult"`
	Executables []struct {
		Name         string                     `json:"name"`
		SubgroupSize int                        `json:"subgroup_size"`
		Stats        map[string]json.RawMessage `json:"stats"`
	} `json:"executables"`
}

// moduleStats is one module's line: its compute executable's statistics
// and subgroup size, or why it did not compile.
type moduleStats struct {
	wave  int
	stats map[string]float64
	err   string
}

// ParseStats reads acostats's output: the device's line, then a line a
// module in the order they were given.
func ParseStats(r io.Reader) (device string, mods []moduleStats, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var l acoLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			return "", nil, fmt.Errorf("acostats: %v in %q", err, line)
		}
		switch {
		case l.Device != "":
			device = l.Device
		case l.File == "" && l.Error != "":
			return "", nil, fmt.Errorf("acostats: %s", l.Error)
		case l.File == "":
			return "", nil, fmt.Errorf("acostats: a line with no file: %q", line)
		default:
			m := moduleStats{err: l.Error}
			if l.VkResult != nil {
				m.err += fmt.Sprintf(" (VkResult %d)", *l.VkResult)
			}
			for _, x := range l.Executables {
				m.wave = x.SubgroupSize
				m.stats = map[string]float64{}
				for k, v := range x.Stats {
					var f float64
					if json.Unmarshal(v, &f) == nil {
						m.stats[k] = f
					}
				}
			}
			if m.err == "" && m.stats == nil {
				m.err = "no executable"
			}
			mods = append(mods, m)
		}
	}
	if err := sc.Err(); err != nil {
		return "", nil, err
	}
	if device == "" {
		return "", nil, fmt.Errorf("acostats: no device line")
	}
	return device, mods, nil
}

func (r *Row) fill(m moduleStats) {
	r.Wave, r.Stats, r.Error = m.wave, m.stats, m.err
	// The driver's hashes change with any byte of the module: they
	// would make every diff of the JSON noisy.
	delete(r.Stats, "Driver pipeline hash")
	delete(r.Stats, "Hash")
}

// columns are the table's statistics: header and the driver's name.
var columns = []struct{ head, stat string }{
	{"VGPRs", "VGPRs"},
	{"pre-sched V", "Pre-Sched VGPRs"},
	{"SGPRs", "SGPRs"},
	{"spilled V", "Spilled VGPRs"},
	{"spilled S", "Spilled SGPRs"},
	{"scratch", "Scratch size"},
	{"LDS", "LDS size"},
	{"waves/SIMD", "Subgroups per SIMD"},
	{"instrs", "Instructions"},
	{"VALU", "VALU"},
	{"SALU", "SALU"},
	{"VMEM", "VMEM"},
	{"SMEM", "SMEM"},
	{"latency", "Latency"},
	{"inv. throughput", "Inverse Throughput"},
}

// WriteTable writes every row as a text table, with each row's verdict
// where the budgets were checked.
func (rep *Report) WriteTable(w io.Writer, verdicts bool) {
	fmt.Fprintf(w, "ACO's statistics on %s (a compiler's verdict, not a speed)\n", rep.Device)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "plan\tbuild\tkernel\twave"
	for _, c := range columns {
		head += "\t" + c.head
	}
	if verdicts {
		head += "\tbudget\tverdict"
	}
	fmt.Fprintln(tw, head+"\tworkloads\t")
	for _, r := range rep.Rows {
		line := fmt.Sprintf("%s\t%s\t%s\t%d", r.Target, r.Binding, r.Kernel, r.Wave)
		for _, c := range columns {
			if r.Error != "" {
				line += "\t-"
			} else {
				line += fmt.Sprintf("\t%d", r.stat(c.stat))
			}
		}
		if verdicts && r.Verdict != nil {
			line += fmt.Sprintf("\t%d\t%s", r.Verdict.Budget, r.Verdict.Text)
		}
		line += "\t" + strings.Join(r.Workloads, ",")
		if r.Error != "" {
			line += "\terror: " + r.Error
		}
		fmt.Fprintln(tw, line+"\t")
	}
	tw.Flush()
}

// WriteMarkdown writes one Markdown table of every kernel: a column a
// plan and build, each cell VGPRs / SGPRs / spills (VGPRs and SGPRs) /
// waves a SIMD / VALU, and a row a kernel (its name, and its entry point
// where that is not main) and the workloads whose modules of it have the
// same numbers in every column.
func (rep *Report) WriteMarkdown(w io.Writer) {
	type col struct{ plan, binding string }
	var cols []col
	type key struct{ kernel, workload string }
	var keys []key
	cells := map[key]map[col]string{}
	for _, r := range rep.Rows {
		c := col{r.Target, r.Binding}
		if !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
		name := r.Name()
		if r.Entry != "main" {
			name += " " + r.Entry
		}
		for _, wl := range r.Workloads {
			k := key{name, wl}
			if cells[k] == nil {
				cells[k] = map[col]string{}
				keys = append(keys, k)
			}
			cells[k][c] = joinCell(cells[k][c], r.cell())
		}
	}
	fmt.Fprintln(w, "VGPRs / SGPRs / spilled VGPRs and SGPRs / waves a SIMD / VALU instructions; — where the build does not run the kernel; scratch and waves of 32 noted:")
	fmt.Fprintln(w)
	head, rule := "| kernel | workloads |", "|---|---|"
	for _, c := range cols {
		b := "default"
		if c.binding == "gogpu" {
			b = "gogpu"
		}
		head += fmt.Sprintf(" %s, %s |", c.plan, b)
		rule += "---|"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, rule)
	done := map[key]bool{}
	for i, k := range keys {
		if done[k] {
			continue
		}
		line := func(k key) string {
			var l string
			for _, c := range cols {
				l += " " + dash(cells[k][c]) + " |"
			}
			return l
		}
		cellsOf := line(k)
		wls := []string{k.workload}
		for _, o := range keys[i+1:] {
			if !done[o] && o.kernel == k.kernel && line(o) == cellsOf {
				done[o] = true
				wls = append(wls, o.workload)
			}
		}
		fmt.Fprintf(w, "| %s | %s |%s\n", k.kernel, strings.Join(wls, ", "), cellsOf)
	}
}

// cell is a row's Markdown cell: VGPRs / SGPRs / spills / waves / VALU,
// spills in bold, with the scratch and a wave of 32 where there are.
func (r *Row) cell() string {
	if r.Error != "" {
		return "error: " + r.Error
	}
	spill := fmt.Sprint(r.Spills())
	if r.Spills() > 0 {
		spill = "**" + spill + "**"
	}
	s := fmt.Sprintf("%d / %d / %s / %d / %d", r.VGPRs(), r.stat("SGPRs"), spill, r.stat("Subgroups per SIMD"), r.stat("VALU"))
	if sc := r.stat("Scratch size"); sc > 0 {
		s += fmt.Sprintf(", %d KiB scratch", (sc+1023)/1024)
	}
	if r.Wave != 64 {
		s += fmt.Sprintf(", wave%d", r.Wave)
	}
	return s
}

func joinCell(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func dash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
