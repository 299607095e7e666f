//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"testing"

	"github.com/attn-go/attn/internal/gputest"
	"github.com/gogpu/gputypes"
)

// TestWebGPUFeatures: DescribeAdapters describes the adapters Adapters
// does, with WebGPU features that agree with the gputypes set where it
// names them; a backend's are its device's, and none once it is closed.
func TestWebGPUFeatures(t *testing.T) {
	requireAdapter(t)
	infos, err := Adapters()
	if err != nil {
		t.Fatal(err)
	}
	ads, err := DescribeAdapters()
	if err != nil {
		t.Fatal(err)
	}
	if len(ads) != len(infos) {
		t.Fatalf("DescribeAdapters gave %d adapters, Adapters %d", len(ads), len(infos))
	}
	agree := func(what string, fs gputypes.Features, wf WebGPUFeatures) {
		t.Helper()
		if wf.ShaderF16 != fs.Contains(gputypes.FeatureShaderF16) || wf.Subgroups != fs.Contains(gputypes.FeatureSubgroupOperations) ||
			wf.TimestampQuery != fs.Contains(gputypes.FeatureTimestampQuery) {
			t.Errorf("%s: %+v disagrees with the features %#x", what, wf, uint64(fs))
		}
		// attn writes its timestamps on the encoder: TimestampQuery
		// counts only with them.
		if wf.TimestampQuery && !wf.TimestampsInEncoders {
			t.Errorf("%s: TimestampQuery without timestamps inside encoders: %+v", what, wf)
		}
		if (wf.SubgroupMaxSize == 0) != (wf.SubgroupSizeUnreported != "") || wf.SubgroupMinSize > wf.SubgroupMaxSize {
			t.Errorf("%s: subgroup size %d to %d, unreported %q", what, wf.SubgroupMinSize, wf.SubgroupMaxSize, wf.SubgroupSizeUnreported)
		}
	}
	for i, ad := range ads {
		if ad.Info != infos[i] {
			t.Errorf("adapter %d: DescribeAdapters has %+v, Adapters %+v", i, ad.Info, infos[i])
		}
		agree(ad.Info.Adapter.Name, ad.Info.Features, ad.WebGPU)
		t.Logf("%s: %+v", ad.Info.Adapter.Name, ad.WebGPU)
	}
	b := gputest.Open(t, New)
	wf := b.WebGPU()
	agree("the backend's device", b.Info().Features, wf)
	// With subgroups and no sizes from the binding, the backend measures
	// them (subgroups.wgsl): powers of two within its workgroup, the same
	// on a second call.
	if wf.Subgroups {
		lo, hi := wf.SubgroupMinSize, wf.SubgroupMaxSize
		if lo == 0 || hi > subgroupsWG || lo&(lo-1) != 0 || hi&(hi-1) != 0 {
			t.Errorf("the backend's subgroup sizes %d to %d (measured %v): want powers of two from 1 to %d", lo, hi, wf.SubgroupSizeMeasured, subgroupsWG)
		}
		if again := b.WebGPU(); again != wf {
			t.Errorf("WebGPU() = %+v, then %+v", wf, again)
		}
		t.Logf("subgroup sizes %d to %d (measured %v)", lo, hi, wf.SubgroupSizeMeasured)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if wf := b.WebGPU(); wf != (WebGPUFeatures{}) {
		t.Errorf("a closed backend's WebGPU() = %+v, want none", wf)
	}
}
