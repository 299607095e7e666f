package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/attn-go/attn/backend"
	"github.com/gogpu/gputypes"
)

const devicesSynopsis = "attn devices"

const devicesHelp = `Opens every backend linked into attn and describes its device: kind,
adapter, driver, threads, and for a GPU the limits that bound attention
and its features. A backend that cannot open here is listed with the
reason. The last line says which backend "auto" picks ($ATTN_BACKEND
overrides it). Exits 0 when at least one backend opens.
`

func runDevices(c *cmdEnv, args []string) error {
	fs := flag.NewFlagSet("attn devices", flag.ContinueOnError)
	if err := c.parseFlags(fs, devicesSynopsis, devicesHelp, args); err != nil {
		return err
	}
	p := &printer{w: c.stdout}
	working := 0
	for _, name := range backend.Registered() {
		be, err := backend.Open(name)
		if err != nil {
			p.printf("%s: unavailable: %s\n", name, reason(name, err))
			continue
		}
		working++
		describe(p, be)
		if err := be.Close(); err != nil {
			p.printf("  close: %s\n", oneLine(err.Error()))
		}
	}

	auto := "auto"
	if env := strings.TrimSpace(os.Getenv(backend.EnvBackend)); env != "" {
		auto = fmt.Sprintf("auto (%s=%s)", backend.EnvBackend, env)
	}
	be, _, err := backend.Select("auto")
	if err != nil {
		p.printf("%s: none: %s\n", auto, oneLine(err.Error()))
	} else {
		p.printf("%s: %s\n", auto, be.Name())
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

// describe prints what a backend reports about its device.
func describe(p *printer, be backend.Backend) {
	info := be.Info()
	a := info.Adapter
	p.printf("%s:\n", be.Name())
	p.printf("  kind: %s\n", info.Kind)
	p.printf("  adapter: %s\n", orNone(a.Name))
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
	if info.Kind == backend.KindCPU || info.Threads > 0 {
		p.printf("  threads: %d\n", info.Threads)
	}
	if info.Kind == backend.KindGPU {
		p.printf("  graphics backend: %s\n", a.Backend)
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
	}
	caps := be.Caps()
	var cs []string
	for _, c := range []struct {
		on   bool
		name string
	}{{caps.Staged, "staged"}, {caps.Fused, "fused"}, {caps.Bias, "bias"}, {caps.KeepMask, "mask"},
		{caps.Causal, "causal"}, {caps.GQA, "gqa"}, {caps.BNHD, "bnhd"}, {caps.LSE, "lse"}} {
		if c.on {
			cs = append(cs, c.name)
		}
	}
	p.printf("  supports: %s\n", orNone(strings.Join(cs, ", ")))
	if caps.MaxBufferLen > 0 {
		p.printf("  largest buffer: %d float32 (%s)\n", caps.MaxBufferLen, bytesString(4*uint64(caps.MaxBufferLen)))
	}
	if info.Detail != "" {
		p.printf("  detail: %s\n", oneLine(info.Detail))
	}
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
