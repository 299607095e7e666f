package kernels_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// forkOp is one step of a fork scenario: append n rows to sequence s,
// fork s into a new sequence (its index the next), truncate s to n, or
// release s.
type forkOp struct {
	op   string // "append", "fork", "truncate", "release"
	s, n int
}

// forkScenarios are sequences of operations on a pool of pages of 4
// keys: forks of forks and of empty sequences, copy-on-write at every
// row of a page, a truncation into the shared part, and a parent
// released before its children.
func forkScenarios() map[string][]forkOp {
	sc := map[string][]forkOp{
		"fork of empty": {{"fork", 0, 0}, {"append", 1, 3}, {"append", 0, 2}, {"append", 1, 2}},
		"fork of fork": {{"append", 0, 6}, {"fork", 0, 0}, {"fork", 1, 0},
			{"append", 0, 1}, {"append", 1, 1}, {"append", 2, 1}, {"append", 2, 5}},
		"truncate into shared": {{"append", 0, 10}, {"fork", 0, 0}, {"truncate", 1, 5}, {"append", 1, 3},
			{"truncate", 0, 8}, {"append", 0, 1}},
		"release parent first": {{"append", 0, 7}, {"fork", 0, 0}, {"fork", 0, 0}, {"release", 0, 0},
			{"append", 1, 2}, {"append", 2, 6}, {"release", 1, 0}},
		"fork then truncate to 0": {{"append", 0, 5}, {"fork", 0, 0}, {"truncate", 1, 0}, {"append", 1, 4}},
	}
	for r := range 5 { // the parent's last page holding r rows (4: full)
		sc[fmt.Sprintf("copy on write at row %d", r)] = []forkOp{{"append", 0, 4 + r}, {"fork", 0, 0},
			{"append", 1, 1}, {"append", 0, 2}, {"append", 1, 3}}
	}
	return sc
}

// Forked sequences attend exactly the keys each has been given, whatever
// they share, on every backend, layout and a full and a half dtype; and
// at every step the pool holds exactly the distinct pages of its live
// sequences, Shared counting those held by more than one.
func TestSeqFork(t *testing.T) {
	ctx := context.Background()
	for _, bk := range onnxBackends {
		be := bk.open(t)
		for name, ops := range forkScenarios() {
			for _, layout := range []kernels.Layout{kernels.BNHD, kernels.BHND} {
				for _, dt := range []kernels.DType{kernels.Float32, kernels.Float16} {
					t.Run(fmt.Sprintf("%s/%s/%v/%v", bk.name, name, layout, dt), func(t *testing.T) {
						cfg := kernels.CacheConfig{KVHeads: 2, D: 8, Dv: 5, DType: dt, Layout: layout}
						pool, err := kernels.NewPagePool(be, 4, 32, cfg)
						if err != nil {
							t.Fatal(err)
						}
						defer pool.Release()
						rng := rand.New(rand.NewPCG(61, 62))
						seqs := []*kernels.Seq{newSeq(t, pool)}
						m := &mirror{cfg: cfg}
						m.k, m.v = [][]float32{nil}, [][]float32{nil}
						live := []bool{true}
						for i, o := range ops {
							s := seqs[o.s]
							switch o.op {
							case "append":
								k, v := rows(rng, kernels.Float32, o.n, 2, 8), rows(rng, kernels.Float32, o.n, 2, 5)
								if err := s.Append(k, v); err != nil {
									t.Fatalf("op %d %v: %v", i, o, err)
								}
								m.append(o.s, k, v)
							case "fork":
								c, err := s.Fork()
								if err != nil {
									t.Fatalf("op %d %v: %v", i, o, err)
								}
								seqs, live = append(seqs, c), append(live, true)
								m.k, m.v = append(m.k, slices.Clone(m.k[o.s])), append(m.v, slices.Clone(m.v[o.s]))
							case "truncate":
								if err := s.Truncate(o.n); err != nil {
									t.Fatalf("op %d %v: %v", i, o, err)
								}
								m.k[o.s], m.v[o.s] = m.k[o.s][:o.n*2*8], m.v[o.s][:o.n*2*5]
							case "release":
								s.Release()
								live[o.s] = false
							}
							checkPoolPages(t, fmt.Sprintf("op %d %v", i, o), pool, seqs, live)
							for j, sj := range seqs {
								if live[j] && m.len(j) > 0 {
									checkSeqAttend(t, ctx, fmt.Sprintf("op %d %v, sequence %d", i, o, j), pool, sj, m, j, rng)
								}
							}
						}
					})
				}
			}
		}
	}
}

// checkPoolPages holds pool's counts to its live sequences' pages: Free
// is the pages none holds, Shared those two or more hold.
func checkPoolPages(t *testing.T, what string, pool *kernels.PagePool, seqs []*kernels.Seq, live []bool) {
	t.Helper()
	holders := map[int]int{}
	for i, s := range seqs {
		if !live[i] {
			if len(s.Pages()) != 0 || s.Len() != 0 {
				t.Fatalf("%s: released sequence %d holds %v", what, i, s.Pages())
			}
			continue
		}
		for _, pg := range s.Pages() {
			holders[pg]++
		}
	}
	shared := 0
	for _, n := range holders {
		if n > 1 {
			shared++
		}
	}
	if free := pool.Free(); free != 32-len(holders) || pool.Shared() != shared {
		t.Fatalf("%s: Free %d, Shared %d; the live sequences hold %d pages, %d of them shared", what, free, pool.Shared(), len(holders), shared)
	}
}

// checkSeqAttend attends two queries of sequence s (mirror index j) and
// compares them with the float64 reference of its keys.
func checkSeqAttend(t *testing.T, ctx context.Context, what string, pool *kernels.PagePool, s *kernels.Seq, m *mirror, j int, rng *rand.Rand) {
	t.Helper()
	layout := m.cfg.Layout
	shape := []int{1, 2, 4, 8}
	oshape := []int{1, 2, 4, 5}
	if layout == kernels.BHND {
		shape, oshape = []int{1, 4, 2, 8}, []int{1, 4, 2, 5}
	}
	q := randTensor(rng, layout, shape...)
	out, _ := kernels.NewTensor(layout, oshape...)
	opts := &kernels.AttendOptions{Causal: true}
	if err := pool.Attend(ctx, []*kernels.Seq{s}, q, out, nil, opts); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	want, _ := m.want(t, []int{j}, q, opts)
	compareOut(t, what, out, want, 5, m.slack(q))
}

// A pool with no free page for a copy-on-write refuses the append with
// ErrCacheFull and changes nothing: the sequence's pages and length, the
// pool's counts and what both sequences attend.
func TestSeqForkFull(t *testing.T) {
	ctx := context.Background()
	be := openCPU(t)
	cfg := kernels.CacheConfig{KVHeads: 1, D: 4, DType: kernels.Float32, Layout: kernels.BNHD}
	pool, err := kernels.NewPagePool(be, 4, 3, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Release()
	rng := rand.New(rand.NewPCG(63, 64))
	m := &mirror{cfg: cfg}
	s := newSeq(t, pool)
	k, v := rows(rng, kernels.Float32, 10, 1, 4), rows(rng, kernels.Float32, 10, 1, 4) // 3 pages, the last half full
	if err := s.Append(k, v); err != nil {
		t.Fatal(err)
	}
	m.append(0, k, v)
	c, err := s.Fork()
	if err != nil {
		t.Fatal(err)
	}
	m.k, m.v = append(m.k, slices.Clone(m.k[0])), append(m.v, slices.Clone(m.v[0]))
	pages, free, shared := c.Pages(), pool.Free(), pool.Shared()
	err = c.Append(rows(rng, kernels.Float32, 1, 1, 4), rows(rng, kernels.Float32, 1, 1, 4))
	if !errors.Is(err, backend.ErrCacheFull) {
		t.Fatalf("append to a fork with no page for its copy: %v, want ErrCacheFull", err)
	}
	t.Log(err)
	if !slices.Equal(c.Pages(), pages) || c.Len() != 10 || pool.Free() != free || pool.Shared() != shared || shared != 3 {
		t.Fatalf("after the refusal: pages %v (were %v), len %d, Free %d (was %d), Shared %d (was %d)", c.Pages(), pages, c.Len(), pool.Free(), free, pool.Shared(), shared)
	}
	for j, sq := range []*kernels.Seq{s, c} {
		checkSeqAttendDense(t, ctx, fmt.Sprintf("sequence %d", j), pool, sq, m, j, rng)
	}
	// Released, the parent leaves its pages to the fork, which may then
	// write its last page in place.
	s.Release()
	if pool.Shared() != 0 || pool.Free() != 0 {
		t.Fatalf("after the parent's release: Shared %d, Free %d", pool.Shared(), pool.Free())
	}
	k, v = rows(rng, kernels.Float32, 2, 1, 4), rows(rng, kernels.Float32, 2, 1, 4)
	if err := c.Append(k, v); err != nil {
		t.Fatal(err)
	}
	m.append(1, k, v)
	checkSeqAttendDense(t, ctx, "the fork after the parent's release", pool, c, m, 1, rng)
}

func checkSeqAttendDense(t *testing.T, ctx context.Context, what string, pool *kernels.PagePool, s *kernels.Seq, m *mirror, j int, rng *rand.Rand) {
	t.Helper()
	d, dv := m.cfg.D, m.cfg.D
	q := randTensor(rng, kernels.BNHD, 1, 1, 2, d)
	out, _ := kernels.NewTensor(kernels.BNHD, 1, 1, 2, dv)
	opts := &kernels.AttendOptions{Causal: true}
	if err := pool.Attend(ctx, []*kernels.Seq{s}, q, out, nil, opts); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	want, _ := m.want(t, []int{j}, q, opts)
	compareOut(t, what, out, want, dv, 0)
}

// A released sequence cannot be forked.
func TestSeqForkReleased(t *testing.T) {
	be := openCPU(t)
	pool, err := kernels.NewPagePool(be, 4, 4, kernels.CacheConfig{KVHeads: 1, D: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Release()
	s := newSeq(t, pool)
	s.Release()
	if _, err := s.Fork(); !errors.Is(err, backend.ErrReleased) {
		t.Fatalf("Fork of a released sequence: %v, want ErrReleased", err)
	}
}

// Goroutines fork one prompt, append to their forks (each copying the
// shared last page), attend and release them, while others attend the
// prompt: every answer matches its reference, and once all are released
// the pool is whole again. Run with -race (CI does).
func TestSeqForkConcurrent(t *testing.T) {
	ctx := context.Background()
	be := openCPU(t)
	cfg := kernels.CacheConfig{KVHeads: 2, D: 8, DType: kernels.Float16, Layout: kernels.BNHD}
	pool, err := kernels.NewPagePool(be, 4, 64, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Release()
	rng := rand.New(rand.NewPCG(65, 66))
	prompt := newSeq(t, pool)
	pm := &mirror{cfg: cfg}
	k, v := rows(rng, kernels.Float32, 10, 2, 8), rows(rng, kernels.Float32, 10, 2, 8)
	if err := prompt.Append(k, v); err != nil {
		t.Fatal(err)
	}
	pm.append(0, k, v)
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(67, uint64(g)))
			for range 5 {
				if g%3 == 2 { // a reader of the prompt alone
					checkSeqAttendDense(t, ctx, fmt.Sprintf("goroutine %d, the prompt", g), pool, prompt, pm, 0, rng)
					continue
				}
				c, err := prompt.Fork()
				if err != nil {
					t.Error(err)
					return
				}
				m := &mirror{cfg: cfg, k: [][]float32{slices.Clone(pm.k[0])}, v: [][]float32{slices.Clone(pm.v[0])}}
				for step := range 3 {
					k, v := rows(rng, kernels.Float32, 1+step, 2, 8), rows(rng, kernels.Float32, 1+step, 2, 8)
					if err := c.Append(k, v); err != nil {
						t.Error(err)
						return
					}
					m.append(0, k, v)
					checkSeqAttendDense(t, ctx, fmt.Sprintf("goroutine %d step %d", g, step), pool, c, m, 0, rng)
				}
				c.Release()
			}
		})
	}
	wg.Wait()
	if pool.Shared() != 0 || pool.Free() != 64-3 {
		t.Fatalf("after every fork's release: Shared %d, Free %d, want 0 and 61", pool.Shared(), pool.Free())
	}
}

// Copy-on-write copies a page's stored bits as they are, on every
// backend, storage dtype and layout: the child's copy of its parent's
// shared last page holds the same stored values, bit for bit (read back
// through the pool's buffers), the parent's own page does not move when
// the child writes, and a q8 or fp8 block that AppendBuffers stored as
// NaN (a value the cache cannot hold) is copied as NaN rather than
// decoded and refused, so the child's append succeeds.
func TestSeqForkStoredBits(t *testing.T) {
	ctx := context.Background()
	for _, bk := range onnxBackends {
		be := bk.open(t)
		for _, dt := range []kernels.DType{kernels.Float32, kernels.Float16, kernels.BFloat16, backend.Q8, backend.FP8, backend.Q4} {
			dims := []int{32}
			if dt.Block() > 1 {
				dims = append(dims, 80) // rows padded to whole blocks
			}
			for _, layout := range []kernels.Layout{kernels.BNHD, kernels.BHND} {
				for _, d := range dims {
					t.Run(fmt.Sprintf("%s/%v/%v/D=%d", bk.name, dt, layout, d), func(t *testing.T) {
						const page, heads = 4, 2
						cfg := kernels.CacheConfig{KVHeads: heads, D: d, DType: dt, Layout: layout}
						pool, err := kernels.NewPagePool(be, page, 4, cfg)
						if err != nil {
							t.Fatal(err)
						}
						defer pool.Release()
						rng := rand.New(rand.NewPCG(63, 64))
						k, v := rows(rng, kernels.Float32, 3, heads, d), rows(rng, kernels.Float32, 3, heads, d)
						if dt.Quantized() {
							k.Data[d+5] = float32(math.NaN()) // row 0, head 1: a block stored as NaN
						}
						parent := newSeq(t, pool)
						if err := parent.AppendBuffers(ctx, nil, 3, onDevice(t, be, k), onDevice(t, be, v)); err != nil {
							t.Fatal(err)
						}
						kb, vb := kernels.Stores(pool)
						read := func(buf backend.Buffer, pg int) []uint32 {
							x := make([]float32, page*heads*dt.Pitch(d)) // a q8 row at its pitch
							if err := be.Read(x, buf, pg*len(x)); err != nil {
								t.Fatal(err)
							}
							bits := make([]uint32, len(x))
							for i, f := range x {
								bits[i] = math.Float32bits(f)
							}
							return bits
						}
						shared := parent.Pages()[0]
						before := [2][]uint32{read(kb, shared), read(vb, shared)}
						child, err := parent.Fork()
						if err != nil {
							t.Fatal(err)
						}
						if err := child.Append(rows(rng, kernels.Float32, 1, heads, d), rows(rng, kernels.Float32, 1, heads, d)); err != nil {
							t.Fatalf("the child's append, copying the shared page: %v", err)
						}
						own := child.Pages()[0]
						if own == shared || parent.Pages()[0] != shared {
							t.Fatalf("pages: parent %v, child %v: want the child on a copy", parent.Pages(), child.Pages())
						}
						for i, buf := range []backend.Buffer{kb, vb} {
							after, copied := read(buf, shared), read(buf, own)
							for x := range before[i] {
								at := x / dt.Pitch(d) // BNHD: row·heads + head; BHND: head·page + row
								row := at / heads
								if layout == kernels.BHND {
									row = at % page
								}
								if after[x] != before[i][x] {
									t.Fatalf("%s: the parent's element %d moved: %#x, was %#x", [2]string{"K", "V"}[i], x, after[x], before[i][x])
								}
								if row < 3 && copied[x] != before[i][x] {
									t.Fatalf("%s: the copy's element %d (row %d) is %#x, the parent's %#x", [2]string{"K", "V"}[i], x, row, copied[x], before[i][x])
								}
							}
						}
						child.Release()
						parent.Release()
					})
				}
			}
		}
	}
}
