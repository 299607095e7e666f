//go:build !linux && !purego

package sgemm

import "errors"

// requestAMX: only Linux's arch_prctl grant is known to attn.
func requestAMX() error { return errors.New("AMX's tiles are asked of Linux only") }
