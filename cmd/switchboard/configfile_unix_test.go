//go:build unix

package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestServeRefusesAConfigThatIsNotAFile: a config file swapped for a
// symbolic link to /dev/zero is refused on reload, naming the file, rather
// than read without end; the gateway serves on, and its signals work.
func TestServeRefusesAConfigThatIsNotAFile(t *testing.T) {
	isolate(t)
	path := writeConfig(t, map[string]mcptest.Script{"alpha": {}}, nil)
	g := startServe(t, "--config", path)
	g.waitLog(t, settledRE)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
	g.waitLog(t, regexp.MustCompile(`msg="config not reloaded; the running config stays" cause="file changed" error=".*`+
		regexp.QuoteMeta(path+": read: not a regular file (a device); want a regular file")))
	if text := fetch(t, g.url+"/healthz", ""); !strings.Contains(text, "ok") {
		t.Errorf("/healthz after the refusal: %q", text)
	}
}
