//go:build (cgo || gogpu) && !nogpu

package wg

import "strings"

// Usage is a buffer's usage flags, with WebGPU's bit values (both
// bindings use them).
type Usage uint64

const (
	UsageMapRead      Usage = 0x0001
	UsageMapWrite     Usage = 0x0002
	UsageCopySrc      Usage = 0x0004
	UsageCopyDst      Usage = 0x0008
	UsageUniform      Usage = 0x0040
	UsageStorage      Usage = 0x0080
	UsageQueryResolve Usage = 0x0200
)

// MapMode is how a buffer is mapped, with WebGPU's bit values.
type MapMode uint32

const (
	MapNone  MapMode = 0
	MapRead  MapMode = 1
	MapWrite MapMode = 2
)

// BindingType is how a kernel binds a buffer.
type BindingType int

const (
	BindUniform BindingType = iota
	BindReadOnly
	BindStorage
)

// Entry is one buffer window of a bind group: bytes [Offset, Offset+Size)
// of Buffer at binding slot i of the group (the entry's index).
type Entry struct {
	Buffer       *Buffer
	Offset, Size uint64
}

// StageError is a pipeline's creation failing at Stage: "compiling WGSL",
// "bind group layout", "pipeline layout" or "compute pipeline".
type StageError struct {
	Stage string
	Err   error
}

func (e *StageError) Error() string { return e.Stage + ": " + e.Err.Error() }
func (e *StageError) Unwrap() error { return e.Err }

// LogLevel is a wgpu-native log level.
type LogLevel int

const (
	LogOff LogLevel = iota
	LogError
	LogWarn
	LogInfo
	LogDebug
	LogTrace
)

// ParseLogLevel reads a log level name; a value it does not know (say
// "1") asks for wgpu-native's default, warn.
func ParseLogLevel(s string) LogLevel {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "off", "none":
		return LogOff
	case "error":
		return LogError
	case "info":
		return LogInfo
	case "debug":
		return LogDebug
	case "trace":
		return LogTrace
	}
	return LogWarn
}

// errorText puts wgpu's multi-line error report on one line:
//
//	Validation Error: In wgpuBufferMapAsync: Buffer is already mapped
//
// typ names the error's kind when msg says nothing.
func errorText(typ, msg string) string {
	var parts []string
	for line := range strings.Lines(msg) {
		if line = strings.TrimSpace(line); line != "" && line != "Caused by:" {
			parts = append(parts, line)
		}
	}
	if len(parts) == 0 {
		return typ + " error"
	}
	return strings.Join(parts, ": ")
}

// VendorName names the vendor of a PCI vendor id or of a Khronos
// VkVendorId (the ids above 0xFFFF, given to vendors without a PCI id).
func VendorName(id uint32) string {
	switch id {
	case 0x1002:
		return "AMD"
	case 0x1010:
		return "Imagination"
	case 0x106B:
		return "Apple"
	case 0x10DE:
		return "NVIDIA"
	case 0x13B5:
		return "ARM"
	case 0x14E4:
		return "Broadcom"
	case 0x5143:
		return "Qualcomm"
	case 0x8086:
		return "Intel"
	case 0x10001:
		return "Vivante"
	case 0x10002:
		return "VeriSilicon"
	case 0x10003:
		return "Kazan"
	case 0x10004:
		return "Codeplay"
	case 0x10005:
		return "Mesa"
	case 0x10006:
		return "PoCL"
	case 0x10007:
		return "Mobileye"
	}
	return ""
}

// CoopMatrix is what became of wgpu-native's experimental
// cooperative-matrix feature (tensor cores) on an adapter: whether the
// adapter offers it and, where a device was asked for it, whether the
// device has it or wgpu-native's words for refusing it.
type CoopMatrix struct {
	Offered, Requested, Granted bool
	Refused                     string
}
