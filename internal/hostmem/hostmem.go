// Package hostmem reads how much host memory a new allocation can take
// now, for the CPU backend's Alloc and kernels' tensors, which refuse
// (ErrTooLarge) what the kernel's OOM killer would otherwise meet.
package hostmem

import (
	"os"
	"strconv"
	"strings"
)

// Available is the memory a new allocation can take now without
// swapping or meeting a cgroup limit: MemAvailable from /proc/meminfo,
// lowered to the cgroup v2 limit's headroom when one is set. It is read
// afresh on every call; ok is false where neither can be read (not
// Linux).
func Available() (bytes uint64, ok bool) {
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemAvailable:" {
				if kb, err := strconv.ParseUint(f[1], 10, 64); err == nil {
					bytes, ok = kb*1024, true
				}
				break
			}
		}
	}
	limit, err1 := readUint("/sys/fs/cgroup/memory.max")
	used, err2 := readUint("/sys/fs/cgroup/memory.current")
	if err1 == nil && err2 == nil && limit > used {
		if head := limit - used; !ok || head < bytes {
			bytes, ok = head, true
		}
	}
	return bytes, ok
}

// readUint reads a file holding one unsigned number ("max" is an error).
func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}
