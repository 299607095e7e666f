//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/wg"
	"github.com/gogpu/gputypes"
)

// TestCheckLimits: WebGPU's default limits meet every need, and a device
// one below any need is refused naming that limit with both values. It
// needs no adapter.
func TestCheckLimits(t *testing.T) {
	if err := checkLimits(wg.DefaultLimits()); err != nil {
		t.Fatalf("checkLimits(wg.DefaultLimits()) = %v", err)
	}
	needs := DeviceNeeds()
	if len(needs) == 0 {
		t.Fatal("DeviceNeeds() is empty")
	}
	for _, n := range needs {
		if n.Min == 0 {
			continue
		}
		l := wg.DefaultLimits()
		setLimit(t, &l, n.Limit, n.Min-1)
		err := checkLimits(l)
		want := fmt.Sprintf("%s %d < %d", n.Limit, n.Min-1, n.Min)
		if !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s one below its need: %v; want ErrUnavailable saying %q", n.Limit, err, want)
		}
	}
}

// setLimit sets the field of l that WebGPU names name (maxBindGroups is
// MaxBindGroups) to v.
func setLimit(t *testing.T, l *gputypes.Limits, name string, v uint64) {
	t.Helper()
	f := reflect.ValueOf(l).Elem().FieldByName(strings.ToUpper(name[:1]) + name[1:])
	if !f.IsValid() {
		t.Fatalf("gputypes.Limits has no field for %s", name)
	}
	f.SetUint(v)
	if got := limitValue(*l, name); got != v {
		t.Fatalf("limitValue(%s) = %d after setting it to %d", name, got, v)
	}
}
