//go:build race

package cpu

// raceEnabled says the race detector is on: it allocates as it tracks.
const raceEnabled = true
