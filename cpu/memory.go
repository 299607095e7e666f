package cpu

import "github.com/attn-go/attn/internal/hostmem"

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
func AvailableMemory() (bytes uint64, ok bool) { return hostmem.Available() }

// availableMemory is AvailableMemory.
func availableMemory() (bytes uint64, ok bool) { return hostmem.Available() }
