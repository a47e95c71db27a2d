//go:build !linux

package redistest

import "os/exec"

// dieWithTheTests does nothing here: only Linux has a parent-death signal.
func dieWithTheTests(*exec.Cmd) {}
