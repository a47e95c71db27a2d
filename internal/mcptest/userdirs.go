package mcptest

import (
	"os"
	"path/filepath"
)

// IsolateUserDirs points XDG_CACHE_HOME, where the persistent tool cache
// lives by default, and XDG_STATE_HOME, where the OAuth tokens do, at a new
// temporary directory, so that tests and the processes they start never
// touch the user's. Call it in TestMain after
// anything that needs the real one (go build finds its build cache there),
// and call the returned function when the tests are done.
func IsolateUserDirs() (cleanup func()) {
	dir, err := os.MkdirTemp("", "switchboard-cache-")
	if err != nil {
		panic("mcptest: " + err.Error())
	}
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	return func() { os.RemoveAll(dir) }
}
