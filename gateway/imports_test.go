package gateway

import (
	"go/build"
	"strings"
	"testing"
)

// TestImportsThePublicAPI: the gateway reaches tool search and logins
// through the manager's public API, as any host would, so that a host that
// embeds it gets them right by configuring the manager alone.
func TestImportsThePublicAPI(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range pkg.Imports {
		for _, internal := range []string{"/internal/toolsearch", "/internal/oauth"} {
			if strings.HasSuffix(path, internal) {
				t.Errorf("gateway imports %s", path)
			}
		}
	}
}
