//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
)

func TestTicksBetween(t *testing.T) {
	for _, c := range []struct {
		name   string
		t0, t1 uint64
		want   uint64
	}{
		{"equal", 5, 5, 0},
		{"forward", 1000, 1750, 750},
		{"64-bit wrap", math.MaxUint64 - 9, 20, 30},
		{"36-bit wrap", 1<<36 - 100, 50, 150},
		{"48-bit wrap", 1<<48 - 1, 0, 1},
		{"48-bit wrap from below the top bit", 1<<47 + 5, 3, 1<<48 - (1<<47 + 5) + 3},
	} {
		if got := ticksBetween(c.t0, c.t1); got != c.want {
			t.Errorf("%s: ticksBetween(%d, %d) = %d, want %d", c.name, c.t0, c.t1, got, c.want)
		}
	}
}

func TestBracket(t *testing.T) {
	for _, c := range []struct {
		name          string
		ticks         uint64
		lo, hi        time.Duration
		wantNs, wantT float64
		wantErr       string
	}{
		{"1 ns ticks", 50_000_000, 49_990_000, 50_010_000, 1, 2e-4, ""},
		{"40 ns ticks", 1_250_000, 49_900_000, 50_100_000, 40, 2e-3, ""},
		{"exact", 1000, 1000, 1000, 1, 0, ""},
		{"no ticks", 0, time.Millisecond, 2 * time.Millisecond, 0, 0, "does not advance"},
		{"empty bracket", 10, 20, 10, 0, 0, "empty"},
	} {
		p, err := bracket(c.ticks, c.lo, c.hi)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: err %v, want one containing %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if math.Abs(p.ns-c.wantNs) > 1e-9*c.wantNs || math.Abs(p.tol-c.wantT) > 1e-9 {
			t.Errorf("%s: period %.9g ns ±%.3g, want %.9g ±%.3g", c.name, p.ns, p.tol, c.wantNs, c.wantT)
		}
	}
}

func TestSpanOf(t *testing.T) {
	for _, c := range []struct {
		name    string
		ticks   uint64
		p       period
		elapsed time.Duration
		want    time.Duration
		wantErr string
	}{
		{"1 ns", 1234, period{1, 0.001}, time.Second, 1234, ""},
		{"40 ns, rounded", 3, period{40.4, 0.001}, time.Second, 121, ""},
		{"within the period's uncertainty", 1010, period{1, 0.01}, 1000, 1010, ""},
		{"longer than the host waited", 2000, period{1, 0.01}, 1000, 0, "more than"},
		{"no ticks", 0, period{1, 0}, time.Second, 0, "does not advance"},
	} {
		got, err := spanOf(c.ticks, c.p, c.elapsed)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: %v, %v; want an error containing %q", c.name, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}

func TestTimingSupport(t *testing.T) {
	for _, c := range []struct {
		adapter, device, shared bool
		want                    string // in the error; "" for none
	}{
		{true, true, false, ""},
		{true, true, true, ""},
		{false, false, false, "the adapter offers no TimestampQuery"},
		{true, false, true, "requested without the TimestampQuery feature"},
		{false, false, true, "the caller's device has no TimestampQuery"},
	} {
		err := timingSupport(c.adapter, c.device, c.shared)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v, want nil", c, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, backend.ErrUnsupported)):
			t.Errorf("%+v: %v, want ErrUnsupported saying %q", c, err, c.want)
		}
	}
}
