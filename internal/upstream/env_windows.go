package upstream

import "strings"

// inheritedEnv lists what a stdio child inherits on Windows without
// inheritEnv: without SYSTEMROOT, many programs cannot even start; npx
// needs APPDATA and COMSPEC; PATHEXT lets a child find npx.cmd.
var inheritedEnv = []string{
	"APPDATA", "COMSPEC", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT",
	"PROCESSOR_ARCHITECTURE", "PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP",
	"USERNAME", "USERPROFILE", "WINDIR",
}

// envKey identifies a variable by its name regardless of case, as Windows
// does.
func envKey(name string) string { return strings.ToUpper(name) }
