package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

// fakeTimer is the CPU backend playing a device that times its work: its
// DeviceTime hands out times in order (the first is the warm-up's), fails
// the read numbered failAt (from 1) when set, and TimeDevice fails with
// refuse when set.
type fakeTimer struct {
	backend.Backend
	times  []time.Duration
	reads  int
	failAt int
	refuse error
	on     bool
}

func (f *fakeTimer) TimeDevice(on bool) error {
	if on && f.refuse != nil {
		return f.refuse
	}
	f.on = on
	return nil
}

func (f *fakeTimer) DeviceTime() (time.Duration, error) {
	if !f.on {
		return 0, errors.New("fake: timing is off")
	}
	f.reads++
	if f.reads == f.failAt {
		return 0, errors.New("fake: a counter wrapped")
	}
	return f.times[f.reads-1], nil
}

var _ backend.DeviceTimer = (*fakeTimer)(nil)

// A point records the median of its timed runs' device times as gpu_s,
// the warm-up's left out; a backend that cannot time its device, a run
// that gave no number, and the CPU backend record none, and the JSON then
// has no gpu_s at all.
func TestDeviceTimeMedian(t *testing.T) {
	base, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	ms := func(xs ...float64) []time.Duration {
		var d []time.Duration
		for _, x := range xs {
			d = append(d, time.Duration(x*float64(time.Millisecond)))
		}
		return d
	}
	noTimestamps := backend.Errorf(backend.ErrUnsupported, "fake: the adapter offers no TimestampQuery feature")
	for _, c := range []struct {
		name     string
		be       backend.Backend
		runs     int
		want     float64 // gpu_s
		note     string  // in Notes
		timing   string  // in deviceTiming
		timingOn bool    // left on after the point
	}{
		{"odd runs", &fakeTimer{Backend: base, times: ms(999, 5, 1, 4, 2, 3)}, 5, 0.003, "", "gpu_s from timestamps", false},
		{"even runs", &fakeTimer{Backend: base, times: ms(999, 1, 10, 2, 3)}, 4, 0.0025, "", "gpu_s from timestamps", false},
		{"one run", &fakeTimer{Backend: base, times: ms(999, 7)}, 1, 0.007, "", "gpu_s from timestamps", false},
		{"no timestamps", &fakeTimer{Backend: base, refuse: noTimestamps}, 3, 0, "", "none (no gpu_s): " + noTimestamps.Error(), false},
		{"a run without a number", &fakeTimer{Backend: base, times: ms(999, 1, 2, 3), failAt: 3}, 3, 0, "no gpu_s: run 2: fake: a counter wrapped", "gpu_s from timestamps", false},
		{"cpu", base, 3, 0, "", "", false},
	} {
		sh := Shape{B: 1, H: 2, KVHeads: 1, N: 24, D: 8}
		in := newInputs(sh.Problem(), 5, 3)
		pt := measureAttn(context.Background(), c.be, kernels.Fused, 0, in, &Config{Budget: 0, MinRuns: c.runs})
		if pt.Status != StatusOK || pt.Runs != c.runs {
			t.Fatalf("%s: %s (%s), %d runs", c.name, pt.Status, pt.Error, pt.Runs)
		}
		if diff := pt.GPUS - c.want; diff > 1e-12 || diff < -1e-12 {
			t.Errorf("%s: gpu_s %g, want %g", c.name, pt.GPUS, c.want)
		}
		if c.note != "" && !strings.Contains(pt.Notes, c.note) || c.note == "" && pt.Notes != "" {
			t.Errorf("%s: notes %q, want %q", c.name, pt.Notes, c.note)
		}
		if f, ok := c.be.(*fakeTimer); ok && f.on != c.timingOn {
			t.Errorf("%s: timing left on %v after the point", c.name, f.on)
		}
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(pt); err != nil {
			t.Fatal(err)
		}
		if has := strings.Contains(buf.String(), `"gpu_s"`); has != (c.want > 0) {
			t.Errorf("%s: JSON has gpu_s %v, want %v: %s", c.name, has, c.want > 0, buf.String())
		}
		got := deviceTiming(c.be)
		if c.timing == "" && got != "" || !strings.HasPrefix(got, c.timing) {
			t.Errorf("%s: device_time %q, want it to start %q", c.name, got, c.timing)
		}
	}
}

// The table gets a GPU time column only when some point has gpu_s, and
// a point without one shows "-" there.
func TestTableGPUTime(t *testing.T) {
	pt := Point{Impl: "attn-gpu", Strategy: "fused", Shape: Shape{B: 1, H: 1, KVHeads: 1, N: 8, D: 4}, Runs: 3, MedianS: 0.002, Status: StatusOK}
	timed := pt
	timed.GPUS = 0.0015
	for _, c := range []struct {
		name   string
		points []Point
		want   []string
		absent []string
	}{
		{"none", []Point{pt}, nil, []string{"GPU time", "gpu_s"}},
		{"some", []Point{timed, pt}, []string{"GPU time", "1.5ms"}, nil},
	} {
		var buf bytes.Buffer
		if err := WriteTable(&buf, c.points); err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("%s: table lacks %q:\n%s", c.name, w, buf.String())
			}
		}
		for _, w := range c.absent {
			if strings.Contains(buf.String(), w) {
				t.Errorf("%s: table has %q:\n%s", c.name, w, buf.String())
			}
		}
		r := &Report{Schema: Schema, Points: c.points}
		buf.Reset()
		if err := r.WriteMarkdown(&buf); err != nil {
			t.Fatal(err)
		}
		if has := strings.Contains(buf.String(), "- **gpu_s**: "); has != (len(c.want) > 0) {
			t.Errorf("%s: markdown's glossary has gpu_s %v:\n%s", c.name, has, buf.String())
		}
		if has := strings.Contains(buf.String(), "| device, wall |"); has != (len(c.want) > 0) {
			t.Errorf("%s: markdown has the device time table %v:\n%s", c.name, has, buf.String())
		}
	}
}

// kernelMedians: each kernel's median over the runs, a run without it
// counting 0; none unless every run timed its kernels apart.
func TestKernelMedians(t *testing.T) {
	ms := time.Millisecond
	got := kernelMedians([]map[string]time.Duration{
		{"fuseddecode": 3 * ms, "merge": ms},
		{"fuseddecode": 1 * ms, "merge": 2 * ms},
		{"fuseddecode": 2 * ms},
	})
	if len(got) != 2 || got["fuseddecode"] != 0.002 || got["merge"] != 0.001 {
		t.Errorf("kernelMedians = %v, want fuseddecode 0.002, merge 0.001", got)
	}
	for _, runs := range [][]map[string]time.Duration{nil, {{"merge": ms}, nil}, {{}, {}}} {
		if got := kernelMedians(runs); got != nil {
			t.Errorf("kernelMedians(%v) = %v, want nil", runs, got)
		}
	}
}
