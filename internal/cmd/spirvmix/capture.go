package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	_ "github.com/attn-go/attn/gpu" // the gpu backend the child opens
	"github.com/attn-go/attn/kernels"
)

// envChild, set to a workload's name, makes the program the child that
// runs that workload (main and the tests' TestMain both look for it).
const envChild = "ATTN_SPIRVMIX_CHILD"

// aptHint names the Debian packages that hold the tools.
const aptHint = "apt-get install -y gfxreconstruct spirv-tools"

// layer is gfxreconstruct's capture layer, which Debian's package
// registers with the Vulkan loader as an explicit layer.
const layer = "VK_LAYER_LUNARG_gfxreconstruct"

// checkTools says which of the tools the capture needs is missing.
func checkTools() error {
	var missing []string
	for _, t := range []string{"gfxrecon-extract", "spirv-dis"} {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s not found (Debian or Ubuntu: %s)", strings.Join(missing, " and "), aptHint)
	}
	return nil
}

// childInfo is what the child reports of its device on stdout.
type childInfo struct {
	Device string `json:"device"`
}

// child runs workload name on the gpu backend and returns the exit code:
// the parent reads the capture the layer writes meanwhile.
func child(name string, stdout, stderr io.Writer) int {
	w, ok := findWorkload(name)
	if !ok {
		fmt.Fprintf(stderr, "spirvmix child: no workload %q\n", name)
		return 2
	}
	be, err := kernels.Open("gpu")
	if err != nil {
		fmt.Fprintln(stderr, "spirvmix child:", err)
		return 1
	}
	info := be.Info()
	dev := info.Adapter.Name
	if info.Adapter.DriverInfo != "" {
		dev += ", " + info.Adapter.DriverInfo
	}
	if i := strings.Index(info.Detail, "plan "); i >= 0 {
		dev += "; " + info.Detail[i:]
	}
	json.NewEncoder(stdout).Encode(childInfo{Device: dev})
	err = w.run(context.Background(), be)
	// Closing releases the pipelines: their labels reach the log then.
	if cerr := be.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(stderr, "spirvmix child:", err)
		return 1
	}
	return 0
}

// captureEnv is the child's environment beyond the parent's: the
// capture layer writing to file, flushed as it goes (the layer may not
// see the process end), recording only memory the program flushes (the
// shaders are what is wanted, not the buffers), and the trace log and
// single-threaded compiles that name the modules (labels.go).
func captureEnv(file string) []string {
	layers := layer
	if v := os.Getenv("VK_INSTANCE_LAYERS"); v != "" {
		layers = v + ":" + layer
	}
	return []string{
		"VK_INSTANCE_LAYERS=" + layers,
		"GFXRECON_CAPTURE_FILE=" + file,
		"GFXRECON_CAPTURE_FILE_TIMESTAMP=false",
		"GFXRECON_CAPTURE_FILE_FLUSH=true",
		"GFXRECON_MEMORY_TRACKING_MODE=assisted",
		"GFXRECON_LOG_LEVEL=warning",
		"ATTN_GPU_LOG=trace",
		"GOMAXPROCS=1",
	}
}

// childExe is the program a workload's child runs: this one for its own
// binding (ownBinding), else this command built for the other into a
// directory of the user's cache (go build keeps it up to date): gogpu's
// with -tags gogpu and without cgo, wgpu-native's with cgo.
func childExe(binding string) (string, error) {
	if binding == ownBinding {
		return os.Executable()
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	exe := filepath.Join(dir, "attn-spirvmix", "spirvmix-"+binding)
	args, cgo := []string{"build", "-o", exe}, "CGO_ENABLED=1"
	if binding == "gogpu" {
		args, cgo = append(args, "-tags", "gogpu"), "CGO_ENABLED=0"
	}
	cmd := exec.Command("go", append(args, "github.com/attn-go/attn/internal/cmd/spirvmix")...)
	cmd.Env = append(os.Environ(), cgo)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the %s child: %v: %s", binding, err, out)
	}
	return exe, nil
}

// captureMix runs w in a child (the program exe) under the capture
// layer and counts the mix of every shader module it created. Its files
// go to a temporary directory, or to keep/w.Name when keep is set.
func captureMix(ctx context.Context, exe string, w workload, keep string) (*result, error) {
	dir := ""
	if keep != "" {
		dir = filepath.Join(keep, w.Name)
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	} else {
		d, err := os.MkdirTemp("", "spirvmix-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	capFile := filepath.Join(dir, "capture.gfxr")
	logPath := filepath.Join(dir, "child.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), captureEnv(capFile)...)
	cmd.Env = append(cmd.Env, envChild+"="+w.Name)
	cmd.Env = append(cmd.Env, w.Env...) // last, so that they win
	cmd.Stdout, cmd.Stderr = &out, logFile
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("the workload's run failed (%v): %s", err, logTail(logPath))
	}
	res := &result{Workload: w.Name, Desc: w.Desc, Env: w.Env}
	var info childInfo
	if json.Unmarshal(out.Bytes(), &info) == nil {
		res.Device = info.Device
	}

	spv := filepath.Join(dir, "spv")
	if msg, err := exec.CommandContext(ctx, "gfxrecon-extract", "--dir", spv, capFile).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("gfxrecon-extract: %v: %s", err, msg)
	}
	mods, err := modules(spv)
	if err != nil {
		return nil, err
	}
	if len(mods) == 0 {
		return nil, errors.New("the capture holds no shader module (is the capture layer installed? " + aptHint + ")")
	}
	lf, err := os.Open(logPath)
	if err != nil {
		return nil, err
	}
	labels, perModule, err := pipelineLabels(lf)
	lf.Close()
	if err != nil {
		return nil, err
	}
	// gogpu/wgpu compiles a kernel of its own when it opens the device
	// (its indirect dispatches' check), before any of attn's: the
	// modules past those are attn's.
	if lead := len(mods) - len(labels); perModule && lead > 0 {
		res.Note = fmt.Sprintf("the first %d of %d shader modules are the binding's own, left out", lead, len(mods))
		mods = mods[lead:]
	}
	if len(labels) != len(mods) {
		res.Note = fmt.Sprintf("%d shader modules but %d pipelines in the log: modules left unnamed", len(mods), len(labels))
		labels = make([]string, len(mods))
	}
	for i, m := range mods {
		text, err := exec.CommandContext(ctx, "spirv-dis", filepath.Join(spv, m)).Output()
		if err != nil {
			return nil, fmt.Errorf("spirv-dis %s: %v", m, err)
		}
		if err := os.WriteFile(filepath.Join(spv, m+".spvasm"), text, 0o644); err != nil {
			return nil, err
		}
		k, err := analyze(string(text), m, labels[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %v", m, err)
		}
		if err := checkPair(k); err != nil {
			return nil, err
		}
		res.Kernels = append(res.Kernels, k)
	}
	return res, nil
}

var moduleRE = regexp.MustCompile(`^sh([0-9]+)$`)

// modules lists gfxrecon-extract's files in dir (sh<handle id>), in the
// order of their handles, which is the order the modules were created.
func modules(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type mod struct {
		name string
		id   int
	}
	var ms []mod
	for _, e := range ents {
		if m := moduleRE.FindStringSubmatch(e.Name()); m != nil {
			id, _ := strconv.Atoi(m[1])
			ms = append(ms, mod{e.Name(), id})
		}
	}
	slices.SortFunc(ms, func(a, b mod) int { return a.id - b.id })
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.name
	}
	return names, nil
}

var wgRE = regexp.MustCompile(`(?:^| )WG=([0-9]+)(?: |$)`)

// checkPair refuses a pairing of module and label that the label's
// workgroup size (WG=, where it has one) contradicts.
func checkPair(k kernel) error {
	m := wgRE.FindStringSubmatch(k.Label)
	if m == nil {
		return nil
	}
	want, _ := strconv.Atoi(m[1])
	for _, e := range k.Mix.Entries {
		if got := e.LocalSize[0] * max(e.LocalSize[1], 1) * max(e.LocalSize[2], 1); got != want {
			return fmt.Errorf("module %s has workgroups of %d invocations but was paired with %q: the modules' order is not the pipelines'", k.Module, got, k.Label)
		}
	}
	return nil
}

// logTail is the last lines of the child's log that are not wgpu's
// trace, for an error message.
func logTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var tail []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	for sc.Scan() {
		if l := sc.Text(); !strings.HasPrefix(l, "[wgpu] [Trace]") && !strings.HasPrefix(l, "[wgpu] [Debug]") {
			tail = append(tail, l)
			if len(tail) > 10 {
				tail = tail[1:]
			}
		}
	}
	return strings.Join(tail, "\n")
}
