//go:build !windows

package upstream

// inheritedEnv lists what a stdio child inherits on Unix without
// inheritEnv.
var inheritedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR"}

// envKey identifies a variable by its name: Unix names are case-sensitive.
func envKey(name string) string { return name }
