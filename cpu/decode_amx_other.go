//go:build !amd64 || purego

package cpu

import "errors"

// dotTiles runs nothing where there are no tiles (decode_amx_amd64.go).
func dotTiles(*tiles8, int, []float32, int, rawRows, int, int, []float32, int, float32) int {
	return 0
}

// tilesCPU: no tiles here.
func tilesCPU() bool { return false }

// q8TilesOn: no tiles here.
func q8TilesOn() (bool, string) { return false, "" }

// checkQ8Tiles: nothing to check without tiles.
func checkQ8Tiles() error { return errors.New("no AMX tiles here") }

// axpyTiles runs nothing where there are no tiles.
func axpyTiles(*tiles8, []float32, int, rawRows, int, int, []float32, int) int { return 0 }

// fp8TilesOn: no tiles here.
func fp8TilesOn() (bool, string) { return false, "" }

// dotTilesFP8 runs nothing where there are no tiles.
func dotTilesFP8(*tiles8, int, []float32, int, rawRows, int, int, []float32, int, float32) int {
	return 0
}

// checkFP8Tiles: nothing to check without tiles.
func checkFP8Tiles() error { return errors.New("no AMX tiles here") }

// q8IntNow: no integer kernel here (decode_int_amd64.go).
func q8IntNow() q8IntState { return q8IntState{} }

// intOn: no integer kernel here.
func (*tiles8) intOn() bool { return false }

// q8IntDotNow: no integer scores kernel here.
func q8IntDotNow() q8IntState { return q8IntState{} }

// q8Tiles and fp8Tiles: no tiles here.
func (t *tiles8) q8Tiles() bool  { return false }
func (t *tiles8) fp8Tiles() bool { return false }

// dotQ4: no q4 scores kernel here (decode_int_amd64.go); q4 is widened
// for the q8 kernels.
func dotQ4(*tiles8, int, []float32, int, rawRows, int, int, []float32, int, float32) int { return 0 }

// axpyQ4: no q4 P·V kernel here.
func axpyQ4(*tiles8, []float32, int, rawRows, int, int, []float32, int) int { return 0 }

// q4IntNow: no q4 kernels here.
func q4IntNow() q8IntState { return q8IntState{} }
