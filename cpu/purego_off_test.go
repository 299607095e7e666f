//go:build !purego

package cpu

// puregoBuild says the build runs Go's loops alone (-tags purego).
const puregoBuild = false
