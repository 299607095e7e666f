//go:build (cgo || gogpu) && !nogpu

package gpu

import "github.com/attn-go/attn/gpu/internal/wg"

// Bind groups are kept for reuse (groups). Creating one is most of what
// recording a dispatch costs the host in wgpu-core (two a decoding
// layer), and a model's step binds the same windows every
// token: its layers' buffers, the scratch the pool hands back in the
// same order (pool.go), the arena the last submission left (record),
// each window running to its buffer's end where a binding holds it
// (bindOperands), so that a cache that grows a key a token keeps its
// bindings. A group is found by its layout and its bindings; it binds
// only buffers attn created, which attn destroys only after dropping
// the groups that bind them (forget). A dispatch that binds a buffer of
// the caller's (Import) gets a group of its own, made as it records and
// released once submitted: the caller may destroy its buffer while attn
// still holds the import, and a group kept past that would abort the
// submission that used it instead of failing the op that bound it.

// maxGroupBinds is the most bindings of a kernel whose groups are kept
// (every kernel has at most 9); maxGroups bounds the groups kept, past
// which they are all dropped and made again as they are used.
const (
	maxGroupBinds = 10
	maxGroups     = 4096
)

// groupKey is a bind group's layout and bindings.
type groupKey struct {
	p     *wg.Pipeline // its bind group layout
	n     int
	binds [maxGroupBinds]binding
}

// bindGroups is the kept bind groups, and the keys of those that bind
// each buffer. A key stays in the lists of its other buffers after one
// of them drops it (looking it up finds nothing) until the lists, refs
// keys in all, outgrow the groups kept and are built again from them.
type bindGroups struct {
	m    map[groupKey]*wg.BindGroup
	of   map[*wg.Buffer][]groupKey
	refs int
	made int // the groups bindGroup has made, kept or not (tests)
}

// bindGroup returns d's bind group and whether it is kept (the caller
// must not release a kept one): found again, or made. The caller holds
// b.mu.
func (b *Backend) bindGroup(d *dispatch) (*wg.BindGroup, bool, error) {
	keep := len(d.binds) <= maxGroupBinds
	for _, bd := range d.binds {
		if _, ok := b.foreign[bd.buf]; ok {
			keep = false
		}
	}
	var k groupKey
	if keep {
		k = groupKey{p: d.p.p, n: len(d.binds)}
		copy(k.binds[:], d.binds)
		if g, ok := b.groups.m[k]; ok {
			return g, true, nil
		}
	}
	entries := make([]wg.Entry, len(d.binds))
	for i, bd := range d.binds {
		entries[i] = wg.Entry{Buffer: bd.buf, Offset: uint64(bd.off), Size: uint64(bd.size)}
	}
	g, err := b.dev.CreateBindGroup(d.p.p, entries)
	b.groups.made++
	if err != nil || !keep {
		return g, false, err
	}
	if len(b.groups.m) >= maxGroups {
		b.dropGroups()
	}
	if b.groups.m == nil {
		b.groups.m, b.groups.of = map[groupKey]*wg.BindGroup{}, map[*wg.Buffer][]groupKey{}
	}
	b.groups.m[k] = g
	b.index(k)
	if b.groups.refs > refsBound(len(b.groups.m)) {
		// Buffers that live long (the arena, the dummies) gather the
		// keys of groups that shorter-lived buffers took with them.
		clear(b.groups.of)
		b.groups.refs = 0
		for k := range b.groups.m {
			b.index(k)
		}
	}
	return g, true, nil
}

// refsBound is the most keys the buffers' lists hold, kept groups
// listed: past it they are built again.
func refsBound(kept int) int { return 4 * maxGroupBinds * (kept + 64) }

// index lists key k under each buffer it binds. The caller holds b.mu.
func (b *Backend) index(k groupKey) {
	for i, bd := range k.binds[:k.n] {
		if i == 0 || bd.buf != k.binds[i-1].buf {
			b.groups.of[bd.buf] = append(b.groups.of[bd.buf], k)
			b.groups.refs++
		}
	}
}

// forget drops the kept groups that bind wb, before attn destroys it:
// each is released once the work recorded with it is submitted. The
// caller holds b.mu.
func (b *Backend) forget(wb *wg.Buffer) {
	for _, k := range b.groups.of[wb] {
		if g, ok := b.groups.m[k]; ok {
			delete(b.groups.m, k)
			b.afterSubmit(g.Release)
		}
	}
	b.groups.refs -= len(b.groups.of[wb])
	delete(b.groups.of, wb)
}

// dropGroups drops every kept group, each released once the work
// recorded with it is submitted. The caller holds b.mu.
func (b *Backend) dropGroups() {
	for _, g := range b.groups.m {
		b.afterSubmit(g.Release)
	}
	b.groups.m, b.groups.of, b.groups.refs = nil, nil, 0
}
