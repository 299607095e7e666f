package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A decoding step reads all of K and V to compute a few query rows: it is
// bound by memory, not arithmetic, and its GB/s means something only next
// to what the machine can read. ReadBandwidth measures that in the same
// run, so that a point's fraction of it (Point.ReadBWFrac) compares runs
// on machines of different memory.

// ReadBWPasses is how many passes MeasureReadBandwidth times; it reports
// the fastest.
const ReadBWPasses = 5

// ReadBandwidth is the rate, in GB/s (10⁹ bytes a second), at which
// threads goroutines read a buffer of size bytes: each sums a contiguous
// share of it as 64-bit integers with eight accumulators (no arithmetic
// bound comes near memory's), all released together; a pass is timed
// from their release to the last one's end, and the fastest of passes
// is reported. The buffer's pages are written first, so that every read
// comes from memory of its own rather than the kernel's shared zero
// page. Make size several times the last-level cache, or the figure is
// the cache's.
func ReadBandwidth(size int64, threads, passes int) (float64, error) {
	if size < 8*int64(max(threads, 1)) || threads < 1 || passes < 1 {
		return 0, fmt.Errorf("bench: read bandwidth of %d bytes, %d threads, %d passes: want at least 8 bytes a thread, a thread and a pass", size, threads, passes)
	}
	buf := make([]uint64, size/8)
	share := (len(buf) + threads - 1) / threads
	parts := make([][]uint64, 0, threads)
	for lo := 0; lo < len(buf); lo += share {
		parts = append(parts, buf[lo:min(lo+share, len(buf))])
	}
	run := func(each func(i int, part []uint64)) time.Duration {
		var ready, done sync.WaitGroup
		start := make(chan struct{})
		ready.Add(len(parts))
		done.Add(len(parts))
		for i, part := range parts {
			go func() {
				defer done.Done()
				ready.Done()
				<-start
				each(i, part)
			}()
		}
		ready.Wait()
		t0 := time.Now()
		close(start)
		done.Wait()
		return time.Since(t0)
	}
	run(func(i int, part []uint64) {
		for j := range part {
			part[j] = uint64(i+j) | 1
		}
	})
	sums := make([]uint64, len(parts))
	best := time.Duration(math.MaxInt64)
	for range passes {
		best = min(best, run(func(i int, part []uint64) { sums[i] += sumWords(part) }))
	}
	// The sums are used, so no pass can be optimised away.
	var total uint64
	for _, s := range sums {
		total += s
	}
	runtime.KeepAlive(total)
	if best <= 0 {
		return 0, fmt.Errorf("bench: a read of %d bytes took no measurable time", size)
	}
	return float64(len(buf)*8) / best.Seconds() / 1e9, nil
}

// sumWords is the sum of x modulo 2⁶⁴, in eight independent chains.
func sumWords(x []uint64) uint64 {
	var s0, s1, s2, s3, s4, s5, s6, s7 uint64
	for len(x) >= 8 {
		y := x[:8:8]
		s0 += y[0]
		s1 += y[1]
		s2 += y[2]
		s3 += y[3]
		s4 += y[4]
		s5 += y[5]
		s6 += y[6]
		s7 += y[7]
		x = x[8:]
	}
	for _, v := range x {
		s0 += v
	}
	return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
}

// MeasureReadBandwidth is ReadBandwidth as attn bench runs it: every
// thread of GOMAXPROCS, ReadBWPasses passes, over ReadBWBytes, or a
// quarter of the memory available now where that is less. It gives the
// buffer back to the system and starts a new peak of this process's
// resident memory, as Run does before each point it measures in this
// process: the buffer is no point's memory, and the peak a child
// process inherits from its parent on Linux is not inflated by it.
func MeasureReadBandwidth() (float64, error) {
	defer freshPeak()
	size := ReadBWBytes(lastLevelCache())
	if have := memAvailable(); have > 0 {
		size = min(size, have/4)
	}
	if size < 64<<20 {
		return 0, fmt.Errorf("bench: %s of memory available, too little to measure the read bandwidth past the caches", sizeString(memAvailable()))
	}
	return ReadBandwidth(size, runtime.GOMAXPROCS(0), ReadBWPasses)
}

// ReadBWBytes is the buffer MeasureReadBandwidth reads on a machine whose
// last-level cache holds l3 bytes: eight times it, at least 512 MiB and
// at most 4 GiB.
func ReadBWBytes(l3 int64) int64 {
	return min(max(8*l3, 512<<20), 4<<30)
}

// lastLevelCache is the size of the largest cache level of CPU 0 in
// bytes, from sysfs, or 32 MiB when the system does not say (a VM may
// hide it).
func lastLevelCache() int64 {
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	best, level := int64(0), 0
	for _, d := range dirs {
		lv, err1 := os.ReadFile(filepath.Join(d, "level"))
		sz, err2 := os.ReadFile(filepath.Join(d, "size"))
		if err1 != nil || err2 != nil {
			continue
		}
		l, _ := strconv.Atoi(strings.TrimSpace(string(lv)))
		if n := parseCacheSize(string(sz)); n > 0 && l >= level {
			best, level = n, l
		}
	}
	if best == 0 {
		return 32 << 20
	}
	return best
}

// parseCacheSize reads a sysfs cache size: "32768K", "32M", "1024".
func parseCacheSize(s string) int64 {
	s = strings.TrimSpace(s)
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n * mult
}
