package cpu

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu/internal/sgemm"
)

// goExpBF16 is expShiftBF16 in Go alone: expShiftGo's exponentials,
// rounded by Encode.
func goExpBF16(row []float32, m float32, out []uint16) float64 {
	sum := expShiftGo(row, m)
	for j, v := range row {
		out[j] = backend.BFloat16.Encode(v)
	}
	return sum
}

// The loops' known-answer checks pass on the Go loops and on the vector
// loops this CPU runs, and fail, naming the value, on a loop that
// truncates instead of rounding, gets one lane wrong or sums wrong.
func TestLoopChecks(t *testing.T) {
	if notes := loopChecks(); len(notes) > 0 {
		t.Errorf("this CPU's loops failed their checks: %q", notes)
	}
	exps := map[string]func([]float32, float32, []uint16) float64{"Go": goExpBF16, "expShiftBF16": expShiftBF16}
	for name, loop := range exps {
		if err := checkExpBF16(name, loop); err != nil {
			t.Errorf("checkExpBF16(%s): %v", name, err)
		}
	}
	truncating := func(row []float32, m float32, out []uint16) float64 {
		sum := expShiftGo(row, m)
		for j, v := range row {
			out[j] = uint16(math.Float32bits(v) >> 16) // the dropped bits ignored
		}
		return sum
	}
	oneLane := func(row []float32, m float32, out []uint16) float64 {
		sum := expShiftBF16(row, m, out)
		out[11] ^= 1
		return sum
	}
	badSum := func(row []float32, m float32, out []uint16) float64 {
		return expShiftBF16(row, m, out) * (1 + 10*expBF16Err) // past the sum's bound
	}
	for name, loop := range map[string]func([]float32, float32, []uint16) float64{"truncating": truncating, "one lane": oneLane, "sum": badSum} {
		if err := checkExpBF16(name, loop); err == nil || !strings.Contains(err.Error(), "want") || !strings.HasPrefix(err.Error(), name) {
			t.Errorf("checkExpBF16(%s) = %v, want an error naming the loop and the value", name, err)
		}
	}
	narrows := map[string]func([]uint16, []float32){
		"narrow":   func(d []uint16, s []float32) { narrow(backend.BFloat16, d, s) },
		"narrowGo": func(d []uint16, s []float32) { narrowGo(backend.BFloat16, d, s) },
	}
	for name, loop := range narrows {
		if err := checkNarrowBF16(name, loop); err != nil {
			t.Errorf("checkNarrowBF16(%s): %v", name, err)
		}
	}
	truncNarrow := func(d []uint16, s []float32) {
		for i, x := range s {
			d[i] = uint16(math.Float32bits(x) >> 16)
		}
	}
	if err := checkNarrowBF16("truncating", truncNarrow); err == nil || !strings.Contains(err.Error(), "want") {
		t.Errorf("checkNarrowBF16(truncating) = %v, want an error naming the value", err)
	}
}

// New says which bfloat16 path runs and that it passed its check, and
// a WithBF16 setting the CPU can follow is followed (unless
// $ATTN_CPU_BF16 overrides it); one it cannot is ErrUnavailable, and an
// unknown one ErrShape.
func TestWithBF16(t *testing.T) {
	b, err := New(WithBF16("widen"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.bf16.Arithmetic() && !strings.Contains(b.Info().Detail, "passed its known-answer check") {
		t.Errorf("Detail %q does not say the bfloat16 path passed its check", b.Info().Detail)
	}
	if env := os.Getenv(sgemm.EnvBF16); env == "" && b.bf16.Arithmetic() {
		t.Errorf("WithBF16(widen) runs %v", b.bf16)
	}
	if _, err := New(WithBF16("fast")); !errors.Is(err, backend.ErrShape) || !strings.Contains(err.Error(), "fast") {
		t.Errorf("WithBF16(fast): %v, want ErrShape naming it", err)
	}
	if want, _, _ := sgemm.ChooseBF16("dot"); !want.Arithmetic() && os.Getenv(sgemm.EnvBF16) == "" {
		if _, err := New(WithBF16("dot")); !errors.Is(err, backend.ErrUnavailable) {
			t.Errorf("WithBF16(dot) on a CPU without VDPBF16PS: %v, want ErrUnavailable", err)
		}
	}
}

// bf16Bits runs a bfloat16 Fused problem (Q, K, V and O BFloat16: the
// arithmetic path where the backend multiplies bfloat16) on be and
// returns O's stored bits and the LSE's.
func bf16Bits(t *testing.T, be *Backend) ([]uint16, []uint32) {
	t.Helper()
	p := backend.Problem{B: 1, H: 4, KVHeads: 2, Nq: 200, Nk: 600, D: 64, Dv: 64, Causal: true, Scale: 0.125}
	rng := rand.New(rand.NewPCG(21, 22))
	bufs := make([]backend.Buffer, 4)
	for i, n := range []int{p.B * p.H * p.Nq * p.D, p.B * p.KVHeads * p.Nk * p.D, p.B * p.KVHeads * p.Nk * p.Dv, p.B * p.H * p.Nq * p.Dv} {
		buf, err := be.Alloc(backend.BFloat16, n)
		if err != nil {
			t.Fatal(err)
		}
		if i < 3 {
			bits := make([]uint16, n)
			for j := range bits {
				bits[j] = backend.BFloat16.Encode(float32(rng.NormFloat64()))
			}
			if err := be.WriteBits(buf, 0, bits); err != nil {
				t.Fatal(err)
			}
		}
		bufs[i] = buf
	}
	lse, err := be.Alloc(backend.Float32, p.B*p.H*p.Nq)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Fused(context.Background(), backend.FusedParams{Problem: p}, bufs[0], bufs[1], bufs[2], bufs[3], lse); err != nil {
		t.Fatal(err)
	}
	o := make([]uint16, p.B*p.H*p.Nq*p.Dv)
	if err := be.ReadBits(o, bufs[3], 0); err != nil {
		t.Fatal(err)
	}
	l := make([]float32, p.B*p.H*p.Nq)
	if err := be.Read(l, lse, 0); err != nil {
		t.Fatal(err)
	}
	lb := make([]uint32, len(l))
	for i, x := range l {
		lb[i] = math.Float32bits(x)
	}
	return o, lb
}

// The same bfloat16 problem gives the same bits from backends opened
// one after the other and from a fresh process: nothing the backend
// picks at New depends on a timing. The child prints its bits' hash;
// the parent compares.
func TestBF16SameBits(t *testing.T) {
	hash := func(o []uint16, l []uint32) string {
		h := fnv.New64a()
		binary.Write(h, binary.LittleEndian, o)
		binary.Write(h, binary.LittleEndian, l)
		return fmt.Sprintf("%016x", h.Sum64())
	}
	if os.Getenv("ATTN_TEST_BF16_CHILD") == "1" {
		o, l := bf16Bits(t, newBackend(t, WithThreads(2)))
		fmt.Printf("bits %s\n", hash(o, l))
		return
	}
	o1, l1 := bf16Bits(t, newBackend(t, WithThreads(2)))
	o2, l2 := bf16Bits(t, newBackend(t, WithThreads(1)))
	if !slices.Equal(o1, o2) || !slices.Equal(l1, l2) {
		t.Fatal("two backends gave different bits for one bfloat16 problem")
	}
	cmd := testChild("-test.run=^TestBF16SameBits$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "ATTN_TEST_BF16_CHILD=1")
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.ENOEXEC) {
		t.Skipf("cannot run the test binary as a child: %v", err)
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if want := "bits " + hash(o1, l1); !strings.Contains(string(out), want) {
		t.Fatalf("a fresh process gave other bits: %s, want %s", out, want)
	}
}

// EnvTestExec names the variable that holds the emulator command line a
// test binary runs under (as go test -exec took it: "qemu-x86_64-static
// -cpu Haswell"), for the tests that run the binary again as a child: a
// child of a process under qemu-user runs on the host's CPU otherwise,
// where it picks other kernels (CI's Haswell run on an AVX-512 host).
const EnvTestExec = "ATTN_TEST_EXEC"

// testChild is the command that runs this test binary again with args,
// under $ATTN_TEST_EXEC where set.
func testChild(args ...string) *exec.Cmd {
	if e := strings.Fields(os.Getenv(EnvTestExec)); len(e) > 0 {
		return exec.Command(e[0], append(append(e[1:], os.Args[0]), args...)...)
	}
	return exec.Command(os.Args[0], args...)
}
