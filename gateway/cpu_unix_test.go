//go:build unix

package gateway

import "syscall"

// processCPU is the CPU time, user and system, the process has used so
// far, in nanoseconds.
func processCPU() int64 {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return u.Utime.Nano() + u.Stime.Nano()
}
