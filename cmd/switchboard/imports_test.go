package main

import (
	"go/build"
	"strings"
	"testing"
)

// TestImportsThePublicAPI: the command line is a host like any other: it
// reaches the manager, the gateway, the logins and the metrics through
// their public API. Of the internal packages it imports only those that
// serve it alone.
func TestImportsThePublicAPI(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	// internal/pins: pins diff compares the definitions that
	// switchboard.ToolPin carries, field by field, with pins.Compare, which
	// the library does not re-export.
	own := map[string]bool{"internal/gctune": true, "internal/demo": true, "internal/pins": true}
	for _, path := range pkg.Imports {
		if _, internal, ok := strings.Cut(path, "/switchboard/internal/"); ok && !own["internal/"+internal] {
			t.Errorf("cmd/switchboard imports %s", path)
		}
	}
}
