#!/usr/bin/env bash
# A program that requires attn reads the tuning file that attn tune wrote
# (issue 100: the file was keyed by attn's module version, "(devel)" for
# the clone's attn tune and "v0.0.0 => …" for a program requiring attn,
# so such a program never read it and said nothing). attn tune, run from
# this tree with a budget of a few seconds at one small decoding shape
# under the hardware plan, writes its file to a cache directory of its
# own (XDG_CACHE_HOME, which os.UserCacheDir reads on Linux; the file is
# named for its key there). Then a fresh module that requires attn,
# replaced by this tree, opens the "gpu" backend with that cache
# directory and prints Info().Detail: the script checks that the binary
# records attn as a replaced dependency ("v0.0.0 => <this tree>"), not as
# the file's writer did, and that the backend says it was tuned by that
# file (a budget this short may leave every class unswept, so the file
# may tune none: that it was read is the point). Needs a Vulkan adapter
# (lavapipe: .ci/deps); attn's go.sum gives the module's sums, so the
# module proxy is needed only for what the module cache lacks.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# XDG_CACHE_HOME moves the go command's build cache too, unless GOCACHE
# names it.
export GOCACHE=${GOCACHE:-$(go env GOCACHE)}
export ATTN_GPU_PLAN=hardware ATTN_GPU_TUNE= ATTN_GPU_TUNE_FILE= ATTN_REQUIRE_GPU=1
cache=$dir/cache
mkdir -p "$cache"

(cd "$root" && XDG_CACHE_HOME=$cache go run ./cmd/attn tune -budget 3s -heads 4 -kvheads 1 -d 32 -n 512 -dtype f16) | tee "$dir/tune.out"
file=$(sed -n 's/^wrote \(.*\) (.* classes tuned) in .*/\1/p' "$dir/tune.out")
case $file in
"$cache"/attn/gpu-tune/*.json) ;;
*)
	echo "tune-consumer: attn tune did not say it wrote a file under $cache/attn/gpu-tune (${file:-none})" >&2
	exit 1
	;;
esac

writer=$(sed -n 's/^\t"writer": "\(.*\)",$/\1/p' "$file")
echo "the file's writer: ${writer:-none}"

mkdir "$dir/consumer"
cd "$dir/consumer"
cat >go.mod <<MOD
module example.com/tuneconsumer

go 1.26.0

require github.com/attn-go/attn v0.0.0

replace github.com/attn-go/attn => $root
MOD
cp "$root/go.sum" .
cat >main.go <<'GO'
package main

import (
	"fmt"
	"log"

	_ "github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/kernels"
)

func main() {
	be, err := kernels.Open("gpu")
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	fmt.Println(be.Info().Detail)
}
GO
go mod tidy
go build -o consumer .
# go version -m writes a replaced module as its dep line and a "=>" line.
attn=$(go version -m consumer | awk '$1 == "dep" && $2 == "github.com/attn-go/attn" {v = $3; getline; if ($1 == "=>") v = v " => " $2; print v}')
if [[ $attn != "v0.0.0 => $root" ]]; then
	echo "tune-consumer: the program records attn as ${attn:-nothing}, want v0.0.0 => $root (a dependency replaced by this tree)" >&2
	exit 1
fi
detail=$(XDG_CACHE_HOME=$cache ./consumer)
echo "the program (attn $attn): $detail"
if [[ $writer == "attn $attn" ]]; then
	echo "tune-consumer: the file's writer is the program's attn, $attn: nothing shows that another version reads it" >&2
	exit 1
fi
if [[ $detail != *"tuned by $file:"* ]]; then
	echo "tune-consumer: a program requiring attn did not read the tuning file $file that attn tune wrote" >&2
	exit 1
fi
echo "tune-consumer: a program requiring attn ($attn) read the tuning file attn tune wrote, $file"
