//go:build cgo && !nogpu

package wg

import "testing"

func TestLogLevel(t *testing.T) {
	for in, want := range map[string]LogLevel{
		"off": LogOff, "error": LogError, "warn": LogWarn,
		"info": LogInfo, "debug": LogDebug, "trace": LogTrace,
		" Trace ": LogTrace, "INFO": LogInfo, "1": LogWarn, "yes": LogWarn,
	} {
		if got := ParseLogLevel(in); got != want {
			t.Errorf("ParseLogLevel(%q) = %v, want %v", in, got, want)
		}
	}
}
