package kernels

// SetCascadeMinKeys sets the shortest prefix the cascade runs for and
// returns a function that restores it; Cascades counts the calls that
// ran it.
func SetCascadeMinKeys(n int) (restore func()) {
	old := cascadeMinKeys
	cascadeMinKeys = n
	return func() { cascadeMinKeys = old }
}

func Cascades() int64 { return cascades.Load() }

func CascadeNodes() int64 { return cascadeNodes.Load() }
