package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/operand"
	"github.com/attn-go/attn/kernels"
	"github.com/sbinet/npyio"
)

// maxHeaderLen bounds the .npy header we are willing to read. NumPy itself
// refuses headers over 10 000 bytes by default; a rank-4 shape needs under
// 200. Without a bound a v2/v3 file could make us allocate up to 4 GiB for
// a header its file does not even hold.
const maxHeaderLen = 1 << 16

// npyMagic opens every .npy file.
const npyMagic = "\x93NUMPY"

// dtype is an element type attn can read.
type dtype struct {
	descr string           // as the header spells it, "<f4"
	kind  byte             // 'f', 'i', 'u' or 'b'
	size  int              // bytes per element
	order binary.ByteOrder // nil for one-byte types
}

// name is NumPy's name for the type: float32, int64, bool.
func (t dtype) name() string {
	if t.kind == 'b' {
		return "bool"
	}
	kind := map[byte]string{'f': "float", 'i': "int", 'u': "uint", 'c': "complex"}[t.kind]
	if kind == "" {
		return t.descr
	}
	return kind + strconv.Itoa(8*t.size)
}

// parseDescr reads a NumPy type string such as "<f4", ">f8", "|b1" or
// "<i8". It reads every simple numeric type so that errors can name what
// the file holds; callers decide which they accept.
func parseDescr(s string) (dtype, error) {
	t := dtype{descr: s}
	if len(s) < 3 {
		return t, fmt.Errorf("dtype %q is not a simple numeric type", s)
	}
	switch s[0] {
	case '<':
		t.order = binary.LittleEndian
	case '>':
		t.order = binary.BigEndian
	case '=':
		t.order = binary.NativeEndian
	case '|':
	default:
		return t, fmt.Errorf("dtype %q is not a simple numeric type", s)
	}
	t.kind = s[1]
	size, err := strconv.Atoi(s[2:])
	if err != nil || !strings.ContainsRune("fiubc", rune(t.kind)) {
		return t, fmt.Errorf("dtype %q is not a simple numeric type", s)
	}
	t.size = size
	switch {
	case t.kind == 'b' && size == 1,
		(t.kind == 'i' || t.kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8),
		t.kind == 'f' && (size == 2 || size == 4 || size == 8),
		t.kind == 'c' && (size == 8 || size == 16):
	default:
		return t, fmt.Errorf("dtype %q is not a simple numeric type", s)
	}
	if size > 1 && t.order == nil {
		return t, fmt.Errorf("dtype %q has no byte order", s)
	}
	return t, nil
}

// npyFile is an opened .npy file whose header has been read and checked
// against the file's size; its data has not been read yet.
type npyFile struct {
	path    string
	f       *os.File
	dtype   dtype
	fortran bool
	shape   []int
	n       int   // number of elements
	dataOff int64 // where the data starts
}

// openNpy opens path read-only and reads and checks its header: magic,
// version, header length against the file's size, the header dictionary,
// no negative dimension, an element count that fits in an int, and exactly
// as many data bytes as the shape and type need. Nothing larger than the
// header is allocated. The caller closes the file.
func openNpy(path string) (*npyFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	nf, err := readHeader(path, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return nf, nil
}

func readHeader(path string, f *os.File) (*npyFile, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	size := st.Size()

	var pre [12]byte
	if _, err := io.ReadFull(f, pre[:8]); err != nil || string(pre[:6]) != npyMagic {
		return nil, fmt.Errorf("%s: not a .npy file (it does not start with \\x93NUMPY)", path)
	}
	major, minor := pre[6], pre[7]
	var hlen int64
	var preLen int64
	switch major {
	case 1:
		preLen = 10
	case 2, 3:
		preLen = 12
	default:
		return nil, fmt.Errorf("%s: .npy format version %d.%d is not supported (attn reads 1.0, 2.0 and 3.0)", path, major, minor)
	}
	if _, err := io.ReadFull(f, pre[8:preLen]); err != nil {
		return nil, fmt.Errorf("%s: file ends inside the .npy preamble", path)
	}
	if major == 1 {
		hlen = int64(binary.LittleEndian.Uint16(pre[8:10]))
	} else {
		hlen = int64(binary.LittleEndian.Uint32(pre[8:12]))
	}
	if hlen > size-preLen {
		return nil, fmt.Errorf("%s: .npy header claims %d bytes but the file holds only %d after the preamble", path, hlen, size-preLen)
	}
	if hlen > maxHeaderLen {
		return nil, fmt.Errorf("%s: .npy header of %d bytes is longer than attn accepts (%d)", path, hlen, maxHeaderLen)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return nil, fmt.Errorf("%s: reading the .npy header: %v", path, err)
	}
	h, err := parseHeader(pre[:preLen], hdr)
	if err != nil {
		return nil, fmt.Errorf("%s: malformed .npy header %q: %v", path, strings.TrimSpace(string(hdr)), err)
	}

	nf := &npyFile{path: path, f: f, fortran: h.Descr.Fortran, shape: h.Descr.Shape, dataOff: preLen + hlen}
	if nf.dtype, err = parseDescr(h.Descr.Type); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	for _, d := range nf.shape {
		if d < 0 {
			return nil, fmt.Errorf("%s: header shape %s has a negative dimension", path, operand.NpyShape(nf.shape))
		}
	}
	have := size - nf.dataOff
	n, ok := backend.CheckedProduct(nf.shape...)
	need := new(big.Int).SetInt64(int64(nf.dtype.size))
	for _, d := range nf.shape {
		need.Mul(need, big.NewInt(int64(d)))
	}
	switch {
	case !ok:
		return nil, fmt.Errorf("%s: header shape %s has more elements than fit in an int: it needs %s but the file holds %s of data",
			path, operand.NpyShape(nf.shape), sizeString(need), sizeString(big.NewInt(have)))
	case need.Cmp(big.NewInt(have)) > 0:
		return nil, fmt.Errorf("%s: header shape %s of %s needs %s but the file holds %s of data (truncated file or corrupt header)",
			path, operand.NpyShape(nf.shape), nf.dtype.name(), sizeString(need), sizeString(big.NewInt(have)))
	case need.Cmp(big.NewInt(have)) < 0:
		return nil, fmt.Errorf("%s: header shape %s of %s needs %s but the file holds %s of data: trailing bytes after the array (corrupt header, or not a single .npy array)",
			path, operand.NpyShape(nf.shape), nf.dtype.name(), sizeString(need), sizeString(big.NewInt(have)))
	}
	nf.n = n
	return nf, nil
}

// parseHeader hands the preamble and the header dictionary, already read
// and bounded, to npyio. npyio indexes into the header without checking
// what it found, so a malformed dictionary could make it panic: the
// newline terminator is checked first and any panic left is reported as a
// malformed header.
func parseHeader(pre, hdr []byte) (h npyio.Header, err error) {
	if len(hdr) == 0 || hdr[len(hdr)-1] != '\n' {
		return h, errors.New("not terminated by a newline")
	}
	if !bytes.HasPrefix(bytes.TrimSpace(hdr), []byte("{")) || !bytes.HasSuffix(bytes.TrimSpace(hdr), []byte("}")) {
		return h, errors.New("not a dictionary")
	}
	buf := append(append([]byte(nil), pre...), hdr...)
	if buf[6] == 3 {
		buf[6] = 2 // 3.0 differs from 2.0 only in allowing UTF-8 in the header
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("unreadable dictionary (%v)", p)
		}
	}()
	r, err := npyio.NewReader(bytes.NewReader(buf))
	if err != nil {
		return h, err
	}
	return r.Header, nil
}

// sizeString prints a byte count: exact below 1 KiB, in binary units
// above.
func sizeString(n *big.Int) string {
	if n.IsInt64() && n.Int64() < 1024 {
		if n.Int64() == 1 {
			return "1 byte"
		}
		return fmt.Sprintf("%d bytes", n.Int64())
	}
	f, _ := new(big.Float).SetInt(n).Float64()
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"}
	u := -1
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	return fmt.Sprintf("%.1f %s", f, units[u])
}

// indexString prints the position of the i-th element (C order) of a
// tensor of the given shape: (0, 3).
func indexString(i int, shape []int) string {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = i % shape[d]
			i /= shape[d]
		}
	}
	if len(idx) == 0 {
		return "()"
	}
	return operand.NpyShape(idx)
}

// elements streams the data of nf in C order: visit is called with the
// C-order index of each element and its bytes. A Fortran-order file is
// transposed on the fly. A done ctx stops it between chunks of 64 KiB
// with ctx's error.
func (nf *npyFile) elements(ctx context.Context, visit func(i int, b []byte)) error {
	if _, err := nf.f.Seek(nf.dataOff, io.SeekStart); err != nil {
		return fmt.Errorf("%s: %v", nf.path, err)
	}
	rank := len(nf.shape)
	// For Fortran order, idx counts through the shape first axis fastest
	// and i follows it in C order.
	idx := make([]int, rank)
	cstride := make([]int, rank)
	s := 1
	for d := rank - 1; d >= 0; d-- {
		cstride[d] = s
		s *= nf.shape[d]
	}
	size := nf.dtype.size
	chunk := make([]byte, max(1, (1<<16)/size)*size)
	i := 0
	for k := 0; k < nf.n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		m := min(nf.n-k, len(chunk)/size)
		buf := chunk[:m*size]
		if _, err := io.ReadFull(nf.f, buf); err != nil {
			return fmt.Errorf("%s: reading elements %d to %d of %d: %v (file truncated while reading?)", nf.path, k, k+m, nf.n, err)
		}
		for e := 0; e < m; e, k = e+1, k+1 {
			b := buf[e*size : (e+1)*size]
			if !nf.fortran || rank < 2 {
				visit(k, b)
				continue
			}
			visit(i, b)
			for d := 0; d < rank; d++ {
				idx[d]++
				i += cstride[d]
				if idx[d] < nf.shape[d] {
					break
				}
				i -= idx[d] * cstride[d]
				idx[d] = 0
			}
		}
	}
	return nil
}

// floatArray is a .npy file read as float32.
type floatArray struct {
	path  string
	shape []int
	dtype dtype
	data  []float32
	half  []uint16 // a float16 file's bits, beside data (widened exactly)
	// The first finite float64 elements too large for float32, which
	// became +Inf or −Inf; −1 when none.
	posOverflow, negOverflow int
	posValue, negValue       float64
}

// checkFloat refuses a type readFloats cannot read.
func (nf *npyFile) checkFloat() error {
	if t := nf.dtype; t.kind != 'f' || t.size != 2 && t.size != 4 && t.size != 8 {
		return fmt.Errorf("%s: dtype %s (%s); attn reads float16, float32 or float64", nf.path, t.name(), t.descr)
	}
	return nil
}

// checkKeep refuses a type readKeep cannot read.
func (nf *npyFile) checkKeep() error {
	t := nf.dtype
	if t.kind == 'b' || t.kind == 'i' || t.kind == 'u' || (t.kind == 'f' && (t.size == 2 || t.size == 4 || t.size == 8)) {
		return nil
	}
	return fmt.Errorf("%s: dtype %s (%s); a mask is bool, an integer type, float16, float32 or float64 (nonzero keeps a key)", nf.path, t.name(), t.descr)
}

// readFloats reads the data of a float32 or float64 file into float32; a
// done ctx stops it between chunks.
func (nf *npyFile) readFloats(ctx context.Context) (*floatArray, error) {
	if err := nf.checkFloat(); err != nil {
		return nil, err
	}
	t := nf.dtype
	a := &floatArray{path: nf.path, shape: nf.shape, dtype: t, data: make([]float32, nf.n), posOverflow: -1, negOverflow: -1}
	var err error
	switch t.size {
	case 2:
		a.half = make([]uint16, nf.n)
		err = nf.elements(ctx, func(i int, b []byte) {
			h := t.order.Uint16(b)
			a.half[i], a.data[i] = h, kernels.Float16.Decode(h)
		})
	case 4:
		err = nf.elements(ctx, func(i int, b []byte) {
			a.data[i] = math.Float32frombits(t.order.Uint32(b))
		})
	default:
		err = nf.elements(ctx, func(i int, b []byte) {
			v := math.Float64frombits(t.order.Uint64(b))
			f := float32(v)
			if math.IsInf(float64(f), 0) && !math.IsInf(v, 0) {
				if v > 0 && a.posOverflow < 0 {
					a.posOverflow, a.posValue = i, v
				} else if v < 0 && a.negOverflow < 0 {
					a.negOverflow, a.negValue = i, v
				}
			}
			a.data[i] = f
		})
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// tensor is a as a kernels.Tensor of the given layout: stored as dt when
// dt is not nil, and otherwise as the file's own type (float16 kept as its
// bits, float32 and float64 as float32). A value dt cannot hold is an
// error wrapping backend.ErrNonFinite that names the file and the index.
func (a *floatArray) tensor(layout kernels.Layout, dt *kernels.DType) (*kernels.Tensor, error) {
	t := &kernels.Tensor{Shape: a.shape, Layout: layout, Data: a.data}
	if a.half != nil {
		t = &kernels.Tensor{Shape: a.shape, Layout: layout, DType: kernels.Float16, Bits: a.half}
	}
	if dt == nil || *dt == t.DType {
		return t, nil
	}
	for i, x := range a.data {
		if err := dt.CheckFits("", i, []float32{x}); err != nil {
			return nil, fmt.Errorf("%s: element %s = %g does not fit %v (largest finite %g): %w", a.path, indexString(i, a.shape), x, *dt, dt.MaxFinite(), backend.ErrNonFinite)
		}
	}
	return t.Convert(*dt)
}

// checkFinite rejects NaN and ±Inf; negInf allows −Inf (a bias hides
// keys with it). The policy and the scan are kernels.Attention's
// (operand.FirstRefused): checking each file before it joins an operand
// lets the error name the file and the index in it. A float64 value that
// only became infinite when narrowed to float32 is named as such, with
// the value the file holds, which kernels never sees.
func (a *floatArray) checkFinite(negInf bool) error {
	const hint = "pass -allow-nonfinite to skip this check"
	overflow := func(i int, v float64) error {
		return backend.Errorf(backend.ErrNonFinite, "%s: element %s = %g is too large for float32 (max %g): attn computes in float32, where it becomes %v, and non-finite inputs are rejected (%s)",
			a.path, indexString(i, a.shape), v, math.MaxFloat32, float32(v), hint)
	}
	if a.posOverflow >= 0 {
		return overflow(a.posOverflow, a.posValue)
	}
	if !negInf && a.negOverflow >= 0 {
		return overflow(a.negOverflow, a.negValue)
	}
	if i, v := operand.FirstRefused(a.data, negInf); i >= 0 {
		return backend.Errorf(backend.ErrNonFinite, "%s: element %s is %v; attn rejects NaN and infinite inputs (%s)", a.path, indexString(i, a.shape), v, hint)
	}
	return nil
}

// readKeep reads a keep-mask: bool, or any integer or float type where
// nonzero means keep. NaN is neither and is rejected. A done ctx stops it
// between chunks.
func (nf *npyFile) readKeep(ctx context.Context) ([]bool, error) {
	if err := nf.checkKeep(); err != nil {
		return nil, err
	}
	t := nf.dtype
	keep := make([]bool, nf.n)
	nan := -1
	var visit func(i int, b []byte)
	switch {
	case t.kind == 'b' || t.size == 1:
		visit = func(i int, b []byte) { keep[i] = b[0] != 0 }
	case t.kind == 'i' || t.kind == 'u':
		visit = func(i int, b []byte) {
			switch t.size {
			case 2:
				keep[i] = t.order.Uint16(b) != 0
			case 4:
				keep[i] = t.order.Uint32(b) != 0
			default:
				keep[i] = t.order.Uint64(b) != 0
			}
		}
	case t.kind == 'f' && (t.size == 2 || t.size == 4 || t.size == 8):
		visit = func(i int, b []byte) {
			var v float64
			switch t.size {
			case 2:
				v = float64(backend.Float16.Decode(t.order.Uint16(b)))
			case 4:
				v = float64(math.Float32frombits(t.order.Uint32(b)))
			default:
				v = math.Float64frombits(t.order.Uint64(b))
			}
			if math.IsNaN(v) && nan < 0 {
				nan = i
			}
			keep[i] = v != 0
		}
	default:
		return nil, nf.checkKeep()
	}
	if err := nf.elements(ctx, visit); err != nil {
		return nil, err
	}
	if nan >= 0 {
		return nil, fmt.Errorf("%s: element %s is NaN; a mask holds 0 (hide) or nonzero (keep)", nf.path, indexString(nan, nf.shape))
	}
	return keep, nil
}

// pending is one output file, reserved before any work: its temporary
// file is created at once in the target's directory, so that a missing
// directory, a target that is a directory, or a directory attn may not
// write in is an error before any input is read, and so that the final
// rename is atomic. Its messages name the target as the user wrote it,
// never the temporary file.
type pending struct {
	name string   // how messages name it: "-o out.npy", or the path alone
	path string   // the target
	f    *os.File // the temporary file, until write closes it
	tmp  string   // its name; "" once renamed or removed
}

// reserve checks that path can be replaced and creates its temporary
// file; flag, when not empty, names the flag that gave path, for the
// messages. The caller commits or discards it.
func reserve(flag, path string) (*pending, error) {
	name := path
	if flag != "" {
		name = flag + " " + path
	}
	if st, err := os.Stat(path); err == nil {
		switch {
		case st.IsDir():
			return nil, fmt.Errorf("%s is a directory; name a file", name)
		case !st.Mode().IsRegular():
			return nil, fmt.Errorf("%s is %s, not a regular file: attn replaces an output by renaming a new file over it", name, fileKind(st.Mode()))
		}
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: directory %s does not exist", name, dir)
	case err != nil:
		return nil, fmt.Errorf("%s: %v", name, err)
	case !st.IsDir():
		return nil, fmt.Errorf("%s: %s is not a directory", name, dir)
	}
	f, err := os.CreateTemp(dir, ".attn-*"+filepath.Ext(path))
	if err != nil {
		return nil, fmt.Errorf("%s: cannot create a file in %s: %v", name, dir, bareError(err))
	}
	return &pending{name: name, path: path, f: f, tmp: f.Name()}, nil
}

// fileKind names what a file that is not a regular file is.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}

// write fills the temporary file with write (through a buffer), makes it
// mode 0644, syncs and closes it. On an error the file is removed.
func (p *pending) write(write func(io.Writer) error) error {
	w := bufio.NewWriterSize(p.f, 1<<16)
	err := write(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = p.f.Chmod(0o644)
	}
	if err == nil {
		err = p.f.Sync()
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	p.f = nil
	if err != nil {
		p.discard()
		return fmt.Errorf("%s: writing it: %v", p.name, bareError(err))
	}
	return nil
}

// commit renames the written temporary file over the target.
func (p *pending) commit() error {
	if err := os.Rename(p.tmp, p.path); err != nil {
		p.discard()
		return fmt.Errorf("%s: replacing it: %v", p.name, bareError(err))
	}
	p.tmp = ""
	syncDir(filepath.Dir(p.path))
	return nil
}

// discard closes and removes the temporary file unless it was committed;
// a nil p, or one already discarded, is a no-op.
func (p *pending) discard() {
	if p == nil {
		return
	}
	if p.f != nil {
		p.f.Close()
		p.f = nil
	}
	if p.tmp != "" {
		os.Remove(p.tmp)
		p.tmp = ""
	}
}

// bareError drops the file names an *fs.PathError or *os.LinkError
// carries: about a temporary file, they would name it rather than the
// user's file.
func bareError(err error) error {
	switch e := err.(type) {
	case *fs.PathError:
		return e.Err
	case *os.LinkError:
		return e.Err
	}
	return err
}

// writeBytes is a pending.write of data.
func writeBytes(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

// replaceFile replaces path with data through a temporary file, synced
// before the rename as the .npy outputs are.
func replaceFile(path string, data []byte) error {
	p, err := reserve("", path)
	if err != nil {
		return err
	}
	if err := p.write(writeBytes(data)); err != nil {
		return err
	}
	return p.commit()
}

// syncDir makes a rename durable where the system allows syncing a
// directory; failing to is not an error (some do not).
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}
