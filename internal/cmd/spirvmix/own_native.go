//go:build !gogpu

package main

// ownBinding is the binding this program is built on, whose children it
// runs itself (childExe).
const ownBinding = "wgpu-native"
