//go:build cgo && !nogpu && gowebgpu && !gogpu

package wg

import (
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/rajveermalviya/go-webgpu/wgpu"
)

// TestWaitLayout checks that go-webgpu's structs still match the mirrors
// wait_gowebgpu.go reads C handles through, and that a mismatch is an
// error.
func TestWaitLayout(t *testing.T) {
	if err := checkLayout(); err != nil {
		t.Fatal(err)
	}
	type moved struct{ ref, deviceRef unsafe.Pointer }
	type grown struct {
		deviceRef, ref unsafe.Pointer
		label          string
	}
	type retyped struct{ deviceRef, ref uintptr }
	for _, typ := range []reflect.Type{reflect.TypeFor[moved](), reflect.TypeFor[grown](), reflect.TypeFor[retyped]()} {
		if err := sameLayout(typ, reflect.TypeFor[bufferMirror]()); err == nil {
			t.Errorf("%v accepted as the layout of wgpu.Buffer", typ)
		}
	}
}

// TestUpstreamMapAsyncCrash shows why wait_gowebgpu.go exists: go-webgpu's
// own Buffer.MapAsync, with a collection between the call and the Poll
// that fires its callback, kills the process ("misuse of an invalid
// Handle" or a fault). It runs the upstream path in a child process, and
// only when ATTN_UPSTREAM_CRASH=1, since it is a demonstration, not a
// check of ours.
func TestUpstreamMapAsyncCrash(t *testing.T) {
	switch os.Getenv("ATTN_UPSTREAM_CRASH") {
	case "child":
		upstreamMapLoop(t)
		return
	case "1":
	default:
		t.Skip("set ATTN_UPSTREAM_CRASH=1 to watch go-webgpu's MapAsync crash under GC")
	}
	testDevice(t) // skip here, not in the child, when there is no adapter
	cmd := exec.Command(os.Args[0], "-test.run=^TestUpstreamMapAsyncCrash$", "-test.v")
	cmd.Env = append(os.Environ(), "ATTN_UPSTREAM_CRASH=child", "GOGC=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("upstream MapAsync survived:\n%s", out)
	}
	if !strings.Contains(string(out), "misuse of an invalid Handle") && !strings.Contains(string(out), "SIGSEGV") {
		t.Fatalf("child failed (%v), but not of a dangling handle:\n%s", err, tail(string(out), 30))
	}
	t.Logf("child died as expected (%v); output ends:\n%s", err, tail(string(out), 20))
}

func upstreamMapLoop(t *testing.T) {
	d := testDevice(t)
	const size = 256
	src, err := d.CreateBuffer("", size, UsageStorage|UsageCopySrc|UsageCopyDst)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := d.CreateBuffer("", size, UsageMapRead|UsageCopyDst)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, size)
	for i := range 1000 {
		if err := d.WriteBuffer(src, 0, data); err != nil {
			t.Fatal(err)
		}
		enc, err := d.CreateEncoder()
		if err != nil {
			t.Fatal(err)
		}
		if err := enc.CopyBufferToBuffer(src, 0, dst, 0, size); err != nil {
			t.Fatal(err)
		}
		cmd, err := enc.Finish()
		if err != nil {
			t.Fatal(err)
		}
		d.Submit(cmd)
		status := wgpu.BufferMapAsyncStatus(0xff)
		if err := dst.raw.MapAsync(wgpu.MapMode_Read, 0, size, func(s wgpu.BufferMapAsyncStatus) { status = s }); err != nil {
			t.Fatal(err)
		}
		collectAndReuse()
		for status == 0xff {
			d.raw.Poll(false, nil)
		}
		dst.Unmap()
		if i%100 == 0 {
			t.Logf("round %d survived", i)
		}
	}
}

// collectAndReuse runs the collector and then allocates small
// pointer-free objects, the size class of a cgo.Handle, so that memory
// freed by the collection is written over at once.
func collectAndReuse() {
	runtime.GC()
	junk := make([]*uint64, 1024)
	for j := range junk {
		junk[j] = new(^uint64(j))
	}
	runtime.KeepAlive(junk)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
