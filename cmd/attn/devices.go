package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/gpu"
	"github.com/gogpu/gputypes"
)

const devicesSynopsis = "attn devices"

const devicesHelp = `Opens every backend linked into attn and describes its device: kind,
adapter, driver, threads (on a CPU with AMX's tiles, their peak in
bfloat16, timed for half a second), and for a GPU the limits that bound
attention,
its features, yes or no for each that attn's kernels may use (ShaderF16,
Subgroups, TimestampQuery, timestamps inside encoders and inside passes)
its subgroup size, and whether cooperative matrices (wgpu-native's
experimental tensor-core feature) are offered, granted or refused, with
wgpu-native's words. A backend that cannot open here is listed with the
reason. Then it lists every GPU adapter the gpu backend could run on
($ATTN_ADAPTER picks one by name), with its limits and features, or says
why there is none. The last line says which backend "auto" picks
($ATTN_BACKEND overrides it). Exits 0 when at least one backend opens.
`

func runDevices(c *cmdEnv, args []string) error {
	fs := flag.NewFlagSet("attn devices", flag.ContinueOnError)
	if err := c.parseFlags(fs, devicesSynopsis, devicesHelp, args); err != nil {
		return err
	}
	p := &printer{w: c.stdout}
	working := 0
	opened := map[gputypes.AdapterInfo]openedGPU{}
	for _, name := range backend.Registered() {
		be, err := backend.Open(name)
		if err != nil {
			p.printf("%s: unavailable: %s\n", name, reason(name, err))
			continue
		}
		working++
		var wf gpu.WebGPUFeatures
		if g, ok := be.(*gpu.Backend); ok {
			wf = g.WebGPU()
		}
		describe(p, be, wf)
		if info := be.Info(); info.Kind == backend.KindGPU {
			opened[info.Adapter] = openedGPU{name, gpuText(info, wf)}
		}
		if err := be.Close(); err != nil {
			p.printf("  close: %s\n", oneLine(err.Error()))
		}
	}
	adapters, err := gpu.DescribeAdapters()
	listAdapters(p, adapters, err, opened)

	auto := "auto"
	if env := strings.TrimSpace(os.Getenv(backend.EnvBackend)); env != "" {
		auto = fmt.Sprintf("auto (%s=%s)", backend.EnvBackend, env)
	}
	be, tried, err := backend.Select("auto")
	if err != nil {
		p.printf("%s: none: %s\n", auto, oneLine(err.Error()))
	} else {
		p.printf("%s: %s\n", auto, be.Name())
		for _, a := range tried {
			p.printf("  passed over %s: %s\n", a.Name, reason(a.Name, a.Err))
		}
		be.Close()
	}
	if p.err != nil {
		return p.err
	}
	if working == 0 {
		return errors.New("no backend could be opened")
	}
	return nil
}

// describe prints what a backend reports about its device; wf is a GPU
// backend's WebGPU features.
func describe(p *printer, be backend.Backend, wf gpu.WebGPUFeatures) {
	info := be.Info()
	a := info.Adapter
	p.printf("%s:\n", be.Name())
	p.printf("  kind: %s\n", info.Kind)
	p.printf("  adapter: %s\n", orNone(a.Name))
	describeVendor(p, a)
	if info.Kind == backend.KindCPU || info.Threads > 0 {
		p.printf("  threads: %d\n", info.Threads)
	}
	if info.Kind == backend.KindCPU && info.Threads > 0 {
		describeAMX(p, info.Threads)
	}
	if info.Kind == backend.KindGPU {
		describeGPU(p, info, wf)
	}
	caps := be.Caps()
	var cs []string
	for _, c := range []struct {
		on   bool
		name string
	}{{caps.Staged, "staged"}, {caps.Fused, "fused"}, {caps.Bias, "bias"}, {caps.KeepMask, "mask"},
		{caps.Causal, "causal"}, {caps.Variants, "variants"}, {caps.GQA, "gqa"}, {caps.BNHD, "bnhd"}, {caps.LSE, "lse"},
		{caps.Half, "f16, bf16"}, {caps.Quant8, "q8, fp8"}, {caps.Quant4, "q4"}, {caps.Seqs, "packed, paged"}, {caps.VFromK, "v-from-k"},
		{caps.Indices, "indices"}, {caps.Blocks, "block masks"}} {
		if c.on {
			cs = append(cs, c.name)
		}
	}
	if _, ok := be.(backend.Backwarder); ok {
		cs = append(cs, "backward")
	}
	p.printf("  supports: %s\n", orNone(strings.Join(cs, ", ")))
	if caps.FlushesSubnormals {
		p.printf("  float32 subnormals: may be flushed to zero\n")
	}
	if caps.MaxBufferLen > 0 {
		size := bytesString(4 * uint64(caps.MaxBufferLen))
		if _, ok := cpu.AvailableMemory(); ok && info.Kind == backend.KindCPU {
			// The CPU backend's limit is the memory available when it
			// opened, a moment ago.
			size += " available now"
		}
		p.printf("  largest buffer: %d float32 (%s)\n", caps.MaxBufferLen, size)
	}
	if info.Detail != "" {
		p.printf("  detail: %s\n", oneLine(info.Detail))
	}
}

// openedGPU is a backend that opened a GPU adapter, and what describe
// printed about the device it got from it.
type openedGPU struct {
	backend string
	text    string // describeGPU's lines
}

// listAdapters prints the GPU adapters gpu.DescribeAdapters found, each
// as one "gpu adapter:" entry, or why there is none. An adapter a backend
// has opened (opened is keyed by its AdapterInfo) gets one line when the
// backend's entry already showed the same limits and features; when the
// device differs from the adapter (a backend may ask for fewer features,
// say), the adapter is described in full too.
func listAdapters(p *printer, adapters []gpu.AdapterDescription, err error, opened map[gputypes.AdapterInfo]openedGPU) {
	for _, ad := range adapters {
		info := ad.Info
		a := info.Adapter
		text := gpuText(info, ad.WebGPU)
		o, ok := opened[a]
		if ok && o.text == text {
			p.printf("gpu adapter: %s: opened by %s, above\n", orNone(a.Name), o.backend)
			continue
		}
		p.printf("gpu adapter: %s", orNone(a.Name))
		if ok {
			p.printf(" (opened by %s, above, as a device with other limits or features)", o.backend)
		}
		p.printf("\n")
		describeVendor(p, a)
		p.printf("%s", text)
		if info.Detail != "" {
			p.printf("  detail: %s\n", oneLine(info.Detail))
		}
	}
	if err != nil {
		p.printf("gpu adapters: none: %s\n", reason("gpu", err))
	}
}

// gpuText is what describeGPU prints about info and wf.
func gpuText(info backend.Info, wf gpu.WebGPUFeatures) string {
	var sb strings.Builder
	describeGPU(&printer{w: &sb}, info, wf)
	return sb.String()
}

// describeVendor prints who made a device and its driver.
func describeVendor(p *printer, a gputypes.AdapterInfo) {
	p.printf("  vendor: %s", orNone(a.Vendor))
	if a.VendorID != 0 || a.DeviceID != 0 {
		p.printf(" (vendor id 0x%04x, device id 0x%04x)", a.VendorID, a.DeviceID)
	}
	p.printf("\n")
	p.printf("  driver: %s", orNone(a.Driver))
	if a.DriverInfo != "" {
		p.printf(" (%s)", a.DriverInfo)
	}
	p.printf("\n")
	p.printf("  device type: %s\n", a.DeviceType)
}

// describeGPU prints a GPU's graphics API, the limits that bound
// attention's bindings and dispatches, its features, and apart those that
// matter to attn's kernels (wf), each with yes or no, and its subgroup
// size.
func describeGPU(p *printer, info backend.Info, wf gpu.WebGPUFeatures) {
	p.printf("  graphics backend: %s\n", info.Adapter.Backend)
	l := info.Limits
	p.printf("  limits:\n")
	p.printf("    MaxStorageBufferBindingSize: %d (%s)\n", l.MaxStorageBufferBindingSize, bytesString(l.MaxStorageBufferBindingSize))
	p.printf("    MaxBufferSize: %d (%s)\n", l.MaxBufferSize, bytesString(l.MaxBufferSize))
	p.printf("    MaxStorageBuffersPerShaderStage: %d\n", l.MaxStorageBuffersPerShaderStage)
	p.printf("    MaxComputeWorkgroupStorageSize: %d (%s)\n", l.MaxComputeWorkgroupStorageSize, bytesString(uint64(l.MaxComputeWorkgroupStorageSize)))
	p.printf("    MaxComputeInvocationsPerWorkgroup: %d\n", l.MaxComputeInvocationsPerWorkgroup)
	p.printf("    MaxComputeWorkgroupSize: %d × %d × %d\n", l.MaxComputeWorkgroupSizeX, l.MaxComputeWorkgroupSizeY, l.MaxComputeWorkgroupSizeZ)
	p.printf("    MaxComputeWorkgroupsPerDimension: %d\n", l.MaxComputeWorkgroupsPerDimension)
	p.printf("  features: %s\n", featureList(info.Features))
	p.printf("  for attn: ShaderF16 %s, Subgroups %s, TimestampQuery %s (inside encoders %s, inside passes %s)\n",
		yesNo(wf.ShaderF16), yesNo(wf.Subgroups), yesNo(wf.TimestampQuery), yesNo(wf.TimestampsInEncoders), yesNo(wf.TimestampsInPasses))
	p.printf("  subgroup size: %s\n", subgroupSize(wf))
	p.printf("  cooperative matrices: %s\n", oneLine(wf.CoopMatrix.String()))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// subgroupSize is wf's subgroup size range, or why there is none.
func subgroupSize(wf gpu.WebGPUFeatures) string {
	switch {
	case wf.SubgroupMaxSize == 0 && wf.SubgroupSizeUnreported != "":
		return wf.SubgroupSizeUnreported
	case wf.SubgroupMaxSize == 0:
		return "not reported"
	}
	s := fmt.Sprintf("%d to %d", wf.SubgroupMinSize, wf.SubgroupMaxSize)
	if wf.SubgroupMinSize == wf.SubgroupMaxSize {
		s = fmt.Sprint(wf.SubgroupMaxSize)
	}
	if wf.SubgroupSizeMeasured {
		s += " (measured: a kernel of 256 invocations ran in subgroups of this size)"
	}
	return s
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(none)"
	}
	return s
}

func bytesString(n uint64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB"}
	f := float64(n)
	u := 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.4g %s", f, units[u])
}

// featureList names the features in a set, by bit for ones gputypes does
// not name.
func featureList(fs gputypes.Features) string {
	var names []string
	for bit := range 64 {
		f := gputypes.Feature(1) << bit
		if uint64(fs)&uint64(f) == 0 {
			continue
		}
		name := f.String()
		if name == "Unknown" {
			name = fmt.Sprintf("bit%d", bit)
		}
		names = append(names, name)
	}
	return orNone(strings.Join(names, ", "))
}

// describeAMX prints the peak of AMX's tiles in bfloat16 on threads
// goroutines (cpu.AMXRate, timed as attn bench times the FMA peak), the
// ceiling of the CPU backend's bfloat16 and 8-bit kernels on them,
// where the CPU has the tiles; nothing on a CPU without them.
func describeAMX(p *printer, threads int) {
	kernel, err := cpu.AMXKernel()
	if err != nil {
		return
	}
	if rate, err := cpu.AMXRate(threads, bench.FMAPasses, bench.FMABudget); err != nil {
		p.printf("  AMX peak: %s\n", oneLine(err.Error()))
	} else {
		p.printf("  AMX peak: %.0f GFLOP/s in bfloat16 on %d threads (%s)\n", rate, threads, kernel)
	}
}
