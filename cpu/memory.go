package cpu

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// checkedAllocBytes is the size from which Alloc asks the system how much
// memory is left: a request past it would be met by the kernel's OOM
// killer, not an error, so it is refused with ErrTooLarge instead. Smaller
// requests skip the look-up.
const checkedAllocBytes = 256 << 20

// AvailableMemory is the memory a new allocation can take now without
// swapping or meeting a cgroup limit: MemAvailable from /proc/meminfo,
// lowered to the cgroup v2 limit's headroom when one is set. It is read
// afresh on every call; ok is false where neither can be read (not
// Linux). Callers that hold their data in host memory (attn run) compare
// what a problem needs with it before reading anything.
func AvailableMemory() (bytes uint64, ok bool) { return availableMemory() }

// availableMemory is AvailableMemory.
func availableMemory() (bytes uint64, ok bool) {
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) >= 2 && fields[0] == "MemAvailable:" {
				if kb, err := strconv.ParseUint(fields[1], 10, 64); err == nil {
					bytes, ok = kb*1024, true
				}
				break
			}
		}
		f.Close()
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
