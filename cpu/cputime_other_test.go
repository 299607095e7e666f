//go:build !unix

package cpu_test

import "time"

// processCPU is 0 here: no getrusage.
func processCPU() time.Duration { return 0 }
