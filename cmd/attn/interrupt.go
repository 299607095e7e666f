package main

// A command's work cancelled by SIGINT or SIGTERM, with the exit code
// the shell expects.

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// interruptedError reports that SIGINT or SIGTERM stopped a command: run
// prints "interrupted" and exits 128 + the signal's number, as a shell
// does for a process the signal killed.
type interruptedError struct{ sig os.Signal }

func (e *interruptedError) Error() string { return "interrupted" }

// exitCode is 130 for SIGINT, 143 for SIGTERM.
func (e *interruptedError) exitCode() int {
	if s, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + int(syscall.SIGINT)
}

// interruptible runs work with a context that SIGINT or SIGTERM cancels;
// when work then fails, the error is an *interruptedError naming the
// signal, whatever work returned (its context error, or a failure the
// cancellation caused). Only the first signal is caught: a second one
// ends the process the default way.
func interruptible(work func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	caught := make(chan os.Signal, 1)
	go func() {
		select {
		case sig := <-sigs:
			signal.Stop(sigs)
			caught <- sig
			cancel()
		case <-ctx.Done():
		}
	}()
	err := work(ctx)
	if err != nil {
		select {
		case sig := <-caught:
			return &interruptedError{sig}
		default:
		}
	}
	return err
}
