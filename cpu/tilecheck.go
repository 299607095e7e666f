package cpu

import (
	"fmt"
	"os"
	"strings"

	"github.com/attn-go/attn/backend"
)

// A fast path earns the default: every tile kernel that 8-bit decoding
// runs on (scores and P·V, q8's and fp8's), and q8's integer P·V kernel
// on AVX2, passes a known-answer check in the process before any backend
// uses it, and a kernel whose check fails leaves its format on
// the widening vector kernels, the failure in Info's Detail.

// tileCheck is one tile kernel's known-answer check: run computes a
// product with the kernel and compares it with the known answer,
// returning an error that names the first value that differs.
type tileCheck struct {
	kernel string // what Info's Detail names: "q8 P·V (TDPBUSD)"
	run    func() error
}

// passChecks runs checks in order and returns the kernels that passed,
// or the first failure, naming its kernel (a panic in one is a failure).
func passChecks(checks []tileCheck) (passed []string, err error) {
	for _, c := range checks {
		if err := runCheck(c); err != nil {
			return nil, backend.Wrapf(err, "%s failed its known-answer check", c.kernel)
		}
		passed = append(passed, c.kernel)
	}
	return passed, nil
}

func runCheck(c tileCheck) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panicked: %v", r)
		}
	}()
	return c.run()
}

// tileFault, for tests, names a tile kernel whose known-answer check
// sees a wrong answer: checkOut adds 1 to the kernel's first output
// value before the check compares it.
var tileFault string

// checkOut is what a known-answer check of kernel compares: out, or out
// with a fault injected (tileFault).
func checkOut(kernel string, out []float32) []float32 {
	if tileFault == kernel && len(out) > 0 {
		out[0]++
	}
	return out
}

// EnvDecode8 names the variable that overrides WithDecode8 (for the CLI
// and CI).
const EnvDecode8 = "ATTN_CPU_DECODE8"

// EnvPrefetch names the variable that chooses where the x86 decoding
// kernels prefetch, for a process: "l1" (PREFETCHT0) or "l2"
// (PREFETCHT1) for both widths, or "auto": the sixteen-lane (AVX-512)
// ones into the L2 on CPUs not Intel's and the L1 on Intel's, the
// eight-lane (AVX2) ones into the L1. Elsewhere it changes nothing. It
// is for measuring one against the other on a CPU
// (docs/benchmarks.md); another value is ErrShape at New.
const EnvPrefetch = "ATTN_CPU_PREFETCH"

// prefetchEnv is $EnvPrefetch read: l2 true for "l2", false for "l1",
// set false for "" or "auto", or an error.
func prefetchEnv() (l2, set bool, err error) {
	switch v := strings.ToLower(strings.TrimSpace(os.Getenv(EnvPrefetch))); v {
	case "", "auto":
		return false, false, nil
	case "l1", "l2":
		return v == "l2", true, nil
	}
	return false, false, backend.Errorf(backend.ErrShape, "cpu: $%s %q: want auto, l1 or l2", EnvPrefetch, os.Getenv(EnvPrefetch))
}

// decode8Setting is the 8-bit decoding setting a backend runs: $EnvDecode8
// where set, else the option's.
func decode8Setting(option string) (string, error) {
	if env := os.Getenv(EnvDecode8); strings.TrimSpace(env) != "" {
		return parseDecode8("$"+EnvDecode8, env)
	}
	return parseDecode8("WithDecode8", option)
}

// parseDecode8 is s as "auto", "vector" or "integer", or an error
// naming from.
func parseDecode8(from, s string) (string, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "", "auto":
		return "auto", nil
	case "vector", "integer":
		return v, nil
	}
	return "", backend.Errorf(backend.ErrShape, "cpu: %s %q: want auto, vector or integer", from, s)
}

// decode8Detail is what Info's Detail says of 8-bit decoding under
// setting, given q8's and fp8's tile decisions (q8TilesOn, fp8TilesOn:
// on, and the kernels that passed their checks or why not) and the q8
// integer kernels' (q8IntNow for P·V, q8IntDotNow for the scores): each
// format's tile kernels, each past its check, or why the format is not
// on the tiles; then each integer kernel that runs, past its check, or
// why not (on a CPU with tiles, the integer kernels take the runs too
// short for them, and under integer every q8 run); nothing on a CPU
// with neither.
func decode8Detail(setting string, q8, fp8 tilesState, in, dot q8IntState) string {
	hasInt := in.ok || in.note != "" || dot.ok || dot.note != ""
	if !q8.on && q8.note == "" && !fp8.on && fp8.note == "" && !hasInt {
		return "" // no tiles or integer kernel on this CPU
	}
	if setting == "vector" {
		return "; 8-bit decoding on the widening vector kernels (" + EnvDecode8 + " or WithDecode8: vector)"
	}
	var on, off []string
	for _, f := range []struct {
		name string
		tilesState
	}{{"q8", q8}, {"fp8", fp8}} {
		switch {
		case f.on && f.name == "q8" && setting == "integer":
			off = append(off, "q8 off AMX's tiles ("+EnvDecode8+" or WithDecode8: integer)")
		case f.on:
			on = append(on, f.note)
		case f.note != "":
			off = append(off, f.name+" on the vector kernels: "+f.note)
		}
	}
	d := ""
	if len(on) > 0 {
		d += ", 8-bit decoding on AMX's tiles: " + strings.Join(on, ", ") + ", each past its known-answer check"
	}
	if len(off) > 0 {
		d += "; " + strings.Join(off, "; ")
	}
	for _, k := range []struct {
		part string
		q8IntState
	}{{"P·V", in}, {"scores", dot}} {
		switch {
		case k.ok:
			d += ", q8 " + k.part + " on the integer kernel: " + k.note + ", past its known-answer check (" + k.timing + ")"
		case k.note != "":
			d += "; q8 " + k.part + " on the widening vector kernel: " + k.note
		}
	}
	return d
}

// tilesState is a format's tile decision: on, and the kernels that
// passed their checks, or why not ("" where the CPU has no tiles).
type tilesState struct {
	on   bool
	note string
}

// q8IntState is a q8 integer kernel's decision in this process
// (q8IntNow, q8IntDotNow, decode_int_amd64.go): whether it runs (the CPU has it and
// it passed its check; note names the kernel, or the failure; both empty
// where the CPU has none), and its time against the widening kernel's
// (timing), which Info's Detail gives.
type q8IntState struct {
	ok           bool
	note, timing string
}

// tilesNow is q8's and fp8's decisions in this process.
func tilesNow() (q8, fp8 tilesState) {
	q8.on, q8.note = q8TilesOn()
	fp8.on, fp8.note = fp8TilesOn()
	return q8, fp8
}

// q4Detail is what Info's Detail says of q4's decoding where the q8
// integer kernels run: read in place by their q4 forms where st (the
// q4 kernels' checks) passed, else widened for the q8 kernels and why.
func q4Detail(st q8IntState) string {
	switch {
	case st.ok:
		return ", q4 read in place by the integer kernels' q4 forms: " + st.note + ", past their known-answer checks"
	case st.note != "":
		return "; q4 widened for the q8 kernels: " + st.note
	}
	return ""
}
