package kernels

import "github.com/attn-go/attn/backend"

// Stores are a cache's (or pool's) K and V buffers, for tests that
// compare what two caches store.
func Stores(c interface{ kvOf() *kv }) (k, v backend.Buffer) {
	x := c.kvOf()
	return x.k, x.v
}

func (c *kv) kvOf() *kv { return c }
