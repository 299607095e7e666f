//go:build race

package kernels_test

// raceEnabled says the race detector is on: it allocates as it tracks.
const raceEnabled = true
