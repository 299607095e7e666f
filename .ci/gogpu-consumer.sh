#!/usr/bin/env bash
# A program on gogpu/wgpu, the pure-Go WebGPU (issue 91), shares its own
# device with attn: in a fresh module that requires gogpu/wgpu at the
# version attn requires, with attn replaced by this tree, a main built
# with CGO_ENABLED=0 and -tags gogpu requests a device of WebGPU's
# default limits from its own instance, opens attn's gpu backend on it
# (gpu.NewWithDevice) and prints the README's first example's answer,
# then the same attention over buffers of its own (gpu's Import), which
# the script checks, with the binding the backend names. Needs a
# Vulkan adapter (lavapipe: .ci/deps) and the module proxy.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(cd "$root" && go list -m -f '{{.Version}}' github.com/gogpu/wgpu)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
cat >go.mod <<MOD
module example.com/gogpuconsumer

go 1.26.0

require github.com/gogpu/wgpu $version

replace github.com/attn-go/attn => $root
MOD
cat >main.go <<'GO'
package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"log"
	"math"
	"os"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/kernels"
	"github.com/gogpu/gputypes"
	"github.com/gogpu/wgpu"
	_ "github.com/gogpu/wgpu/hal/vulkan"
)

func main() {
	// The program's own GPU: its instance, adapter and a device of
	// WebGPU's default limits.
	inst, err := wgpu.CreateInstance(&wgpu.InstanceDescriptor{Backends: gputypes.BackendsVulkan})
	if err != nil {
		log.Fatal(err)
	}
	defer inst.Release()
	adapter, err := inst.RequestAdapter(&wgpu.RequestAdapterOptions{PowerPreference: gputypes.PowerPreferenceHighPerformance})
	if err != nil {
		log.Fatal(err)
	}
	defer adapter.Release()
	dev, err := adapter.RequestDevice(&wgpu.DeviceDescriptor{Label: "the program's", RequiredLimits: gputypes.DefaultLimits()})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Release()

	be, err := gpu.NewWithDevice(adapter, dev)
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	fmt.Fprintf(os.Stderr, "%s on %s: %s\n", be.Name(), be.Info().Adapter.Name, be.Info().Detail)
	x := &kernels.Tensor{Shape: []int{3, 2}, Data: []float32{1, 0, 0, 1, 1, 1}} // [N, D]
	res, err := kernels.Attention(context.Background(), be, x, x, x, &kernels.Options{Causal: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.4f\n", res.Out.Data)

	// The same attention over a buffer of the program's, written through
	// its own queue and imported without a copy; attn writes the output
	// into a second buffer of the program's.
	usage := gputypes.BufferUsageStorage | gputypes.BufferUsageCopySrc | gputypes.BufferUsageCopyDst
	in, err := dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "x", Size: 256, Usage: usage})
	if err != nil {
		log.Fatal(err)
	}
	defer in.Release()
	out, err := dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "o", Size: 256, Usage: usage})
	if err != nil {
		log.Fatal(err)
	}
	defer out.Release()
	raw := make([]byte, 4*len(x.Data))
	for i, f := range x.Data {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
	}
	if err := dev.Queue().WriteBuffer(in, 0, raw); err != nil {
		log.Fatal(err)
	}
	xb, err := be.Import(in, 0, backend.Float32, len(x.Data))
	if err != nil {
		log.Fatal(err)
	}
	ob, err := be.Import(out, 0, backend.Float32, len(x.Data))
	if err != nil {
		log.Fatal(err)
	}
	p := backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 3, Nk: 3, D: 2, Dv: 2, Causal: true}
	if err := be.Fused(context.Background(), backend.FusedParams{Problem: p}, xb, xb, xb, ob, nil); err != nil {
		log.Fatal(err)
	}
	got := make([]float32, len(x.Data))
	if err := be.Read(got, ob, 0); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.4f\n", got)
}
GO
go mod tidy
CGO_ENABLED=0 go build -tags gogpu -o consumer .
linked=$(go version -m consumer | awk '$1 == "dep" && $2 == "github.com/gogpu/wgpu" {print $3}')
if [ "$linked" != "$version" ]; then
	echo "gogpu-consumer: the binary links github.com/gogpu/wgpu ${linked:-(none)}, want $version" >&2
	exit 1
fi
got=$(./consumer 2>consumer.err) || { cat consumer.err >&2; exit 1; }
cat consumer.err >&2
# The README's example, then the same over the program's own buffers.
want='[1.0000 0.0000 0.3302 0.6698 0.7517 0.7517]'
if [ "$got" != "$want"$'\n'"$want" ]; then
	echo "gogpu-consumer: the README's example printed $got, want $want twice" >&2
	exit 1
fi
if ! grep -q "gogpu/wgpu $version" consumer.err; then
	echo "gogpu-consumer: the backend does not name gogpu/wgpu $version" >&2
	exit 1
fi
echo "gogpu-consumer: a program on gogpu/wgpu $version shared its device and buffers with attn's gpu backend: $want"
