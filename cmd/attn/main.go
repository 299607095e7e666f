package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/attn-go/attn/backend"
	_ "github.com/attn-go/attn/cpu"
	_ "github.com/attn-go/attn/gpu"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// usage is attn's usage, a line for each command of the table
// (commands), so that a command added there is listed here too.
func usage() string {
	var b strings.Builder
	b.WriteString("attn computes scaled dot-product attention.\n\nUsage:\n\n\tattn <command> [flags]\n\nCommands:\n\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "\t%-9s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun \"attn <command> -h\" for a command's flags.\n")
	return b.String()
}

// command is one subcommand: its flags are parsed by a FlagSet of its own
// and its errors are reported as "attn <name>: <message>". summary is
// its line in attn's usage.
type command struct {
	name     string
	summary  string
	synopsis string
	run      func(c *cmdEnv, args []string) error
}

var commands = []command{
	{"run", "attention on .npy files: O = softmax(scale·Q·Kᵀ + bias)·V", runSynopsis, runRun},
	{"grad", "the gradients dQ, dK and dV of a loss through attention, given dO", gradSynopsis, runGrad},
	{"explain", "the illustrated-transformer self-attention example, step by step", explainSynopsis, runExplain},
	{"heatmap", "draw the attention weights of one head as a heatmap image", heatmapSynopsis, runHeatmap},
	{"devices", "list the backends and the devices behind them", devicesSynopsis, runDevices},
	{"bench", "sweep sequence lengths and strategies, print GFLOP/s", benchSynopsis, runBench},
	{"tune", "tune the GPU kernels' sizes on this adapter, for later programs", tuneSynopsis, runTune},
}

// cmdEnv is what a subcommand writes to.
type cmdEnv struct {
	name           string
	stdin          io.Reader
	stdout, stderr io.Writer
}

// usageError is a mistake in the command line rather than in the data:
// exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// errHelp reports that -h was given and the usage has been printed.
var errHelp = errors.New("help requested")

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if name == "help" && len(args) > 1 {
			return run([]string{args[1], "-h"}, stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usage())
		return 0
	}
	for _, c := range commands {
		if c.name != name {
			continue
		}
		env := &cmdEnv{name: name, stdin: stdin, stdout: stdout, stderr: stderr}
		err := c.run(env, args[1:])
		var ue *usageError
		var ie *interruptedError
		switch {
		case err == nil:
			return 0
		case errors.Is(err, errHelp):
			return 0
		case errors.As(err, &ie):
			fmt.Fprintf(stderr, "attn %s: %s\n", name, ie)
			return ie.exitCode()
		case errors.As(err, &ue):
			// The problem, then where the usage is: the synopsis runs
			// to a kilobyte, and printed here it buried the one line
			// that says what was wrong.
			fmt.Fprintf(stderr, "attn %s: %s\nRun \"attn %s -h\" for its usage.\n", name, ue.msg, name)
			return 2
		default:
			fmt.Fprintf(stderr, "attn %s: %s\n", name, oneLine(err.Error()))
			return 1
		}
	}
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	fmt.Fprintf(stderr, "attn: unknown command %q (the commands: %s)\nRun \"attn -h\" for their usage.\n", name, strings.Join(names, ", "))
	return 2
}

// oneLine keeps an error on one line of stderr.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}

// parseFlags parses args with fs. -h prints the usage to stdout and
// returns errHelp; a bad flag returns a usageError. Positional arguments
// are refused: every subcommand takes flags only.
func (c *cmdEnv) parseFlags(fs *flag.FlagSet, synopsis, help string, args []string) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(c.stdout, "usage: %s\n\n%s\nFlags:\n", synopsis, help)
		fs.SetOutput(c.stdout)
		fs.PrintDefaults()
		return errHelp
	}
	if err != nil {
		return &usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (every input is given by a flag)", fs.Arg(0))
	}
	return nil
}

// checkBackendName refuses a backend nobody registered before any file is
// read.
func checkBackendName(name string) error {
	n := strings.TrimSpace(strings.ToLower(name))
	if n == "" || n == "auto" {
		return nil
	}
	known := backend.Registered()
	for _, k := range known {
		if k == n {
			return nil
		}
	}
	return usagef("unknown backend %q (have %s, auto)", name, strings.Join(known, ", "))
}

// openBackend opens the named backend and says on stderr why it fell back
// from any it skipped.
func (c *cmdEnv) openBackend(name string) (backend.Backend, error) {
	be, tried, err := backend.Select(name)
	if err != nil {
		return nil, err
	}
	for _, a := range tried {
		fmt.Fprintf(c.stderr, "attn %s: using %s (%s unavailable: %s)\n", c.name, be.Name(), a.Name, reason(a.Name, a.Err))
	}
	return be, nil
}

// reason is why a backend did not open, without the prefixes that say
// which backend and that it is unavailable, on either side of the other:
// the caller says both.
func reason(name string, err error) string {
	s := strings.TrimPrefix(oneLine(err.Error()), name+": ")
	s = strings.TrimPrefix(s, backend.ErrUnavailable.Error()+": ")
	return strings.TrimPrefix(s, name+": ")
}
