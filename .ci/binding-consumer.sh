#!/usr/bin/env bash
# A program on the WebGPU binding's current release builds and runs attn's
# gpu backend (issue 77: a program requiring
# github.com/oliverbestmann/webgpu v1.36.0 did not compile attn's shim over
# v1.0.0). In a fresh module that requires the binding itself, with attn
# replaced by this tree, a main opens the "gpu" backend and prints the
# README's first example's answer; the script checks the answer, that
# the binary linked the binding's version the module asked for, and that
# the backend names it. ATTN_BINDING_VERSION picks another release.
# Needs a Vulkan adapter (lavapipe: .ci/deps) and the module proxy.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
binding=${ATTN_BINDING_VERSION:-v1.36.0}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
cat >go.mod <<MOD
module example.com/consumer

go 1.26.0

require github.com/oliverbestmann/webgpu $binding

replace github.com/attn-go/attn => $root
MOD
cat >main.go <<'GO'
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	_ "github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/kernels"
	"github.com/oliverbestmann/webgpu/wgpu"
)

func main() {
	be, err := kernels.Open("gpu")
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	v := uint32(wgpu.GetVersion())
	fmt.Fprintf(os.Stderr, "%s on %s: %s (the program's wgpu-native: %d.%d.%d.%d)\n",
		be.Name(), be.Info().Adapter.Name, be.Info().Detail, v>>24, v>>16&0xff, v>>8&0xff, v&0xff)
	x := &kernels.Tensor{Shape: []int{3, 2}, Data: []float32{1, 0, 0, 1, 1, 1}} // [N, D]
	res, err := kernels.Attention(context.Background(), be, x, x, x,
		&kernels.Options{Causal: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.4f\n", res.Out.Data)
}
GO
go mod tidy
go build -o consumer .
linked=$(go version -m consumer | awk '$1 == "dep" && $2 == "github.com/oliverbestmann/webgpu" {print $3}')
if [ "$linked" != "$binding" ]; then
	echo "binding-consumer: the binary links github.com/oliverbestmann/webgpu ${linked:-(none)}, want $binding" >&2
	exit 1
fi
got=$(ATTN_REQUIRE_GPU=1 ./consumer 2>consumer.err) || { cat consumer.err >&2; exit 1; }
cat consumer.err >&2
want='[1.0000 0.0000 0.3302 0.6698 0.7517 0.7517]'
if [ "$got" != "$want" ]; then
	echo "binding-consumer: the README's example printed $got, want $want" >&2
	exit 1
fi
if ! grep -q "oliverbestmann/webgpu $binding" consumer.err; then
	echo "binding-consumer: the backend does not name the binding $binding" >&2
	exit 1
fi
echo "binding-consumer: a program on oliverbestmann/webgpu $binding ran attn's gpu backend: $got"
