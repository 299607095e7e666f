package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/attn-go/attn/backend"
)

// freshPeak gives the memory of what ran before back to the system and
// starts a new peak of this process's resident memory, so that the peak
// read next is what runs next: a point, not the buffers of a
// measurement or of the point before it.
func freshPeak() {
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS()
}

// startPeaks starts a point's peaks on be: freshPeak for the process,
// and on a backend that counts its device memory (peakMemory) its
// earlier points' scratch trimmed (gpu.Backend.Trim) and its peak reset.
// The function it returns records both peaks in pt.
func startPeaks(be backend.Backend) (record func(pt *Point)) {
	freshPeak()
	pm, countsDevice := be.(peakMemory)
	if countsDevice {
		if t, ok := be.(interface{ Trim() }); ok {
			t.Trim() // an earlier point's scratch, kept for reuse (gpu.Backend.Trim)
		}
		pm.ResetPeak()
	}
	return func(pt *Point) {
		pt.PeakRSS = peakRSS()
		if countsDevice {
			_, pt.DeviceBytes = pm.Memory()
		}
	}
}

// resetPeakRSS starts a new peak of this process's resident memory, where
// Linux allows (writing 5 to /proc/self/clear_refs resets VmHWM). Where it
// does not, peakRSS reports the peak since the process started.
func resetPeakRSS() {
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS is this process's peak resident memory in bytes since the last
// resetPeakRSS (VmHWM), or 0 where /proc is not there.
func peakRSS() int64 {
	return procField("/proc/self/status", "VmHWM:")
}

// memAvailable is the memory the kernel can give without swapping, in
// bytes, or 0 when unknown.
func memAvailable() int64 {
	return procField("/proc/meminfo", "MemAvailable:")
}

// procField reads a "Name:   123 kB" line of a /proc file, in bytes.
func procField(path, name string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		f := strings.Fields(line[len(name):])
		if len(f) == 0 {
			return 0
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0
		}
		if len(f) > 1 && f[1] == "kB" {
			v <<= 10
		}
		return v
	}
	return 0
}

// errNoMemory is a point that needs more memory than the machine has
// free: running it would only get a process killed.
type errNoMemory struct{ need, have int64 }

func (e *errNoMemory) Error() string {
	return fmt.Sprintf("needs about %s of memory, %s available", sizeString(e.need), sizeString(e.have))
}

// fits returns an *errNoMemory when need bytes are more than 90 % of the
// memory available now; nil when they fit or the machine does not say.
func fits(need int64) error {
	have := memAvailable()
	if have > 0 && need > have/10*9 {
		return &errNoMemory{need, have}
	}
	return nil
}

// sizeString prints a byte count in binary units: 12.0 MiB.
func sizeString(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f, u := float64(n), 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", f, units[u])
}
