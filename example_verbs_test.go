package switchboard_test

import (
	"fmt"
	"log"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
)

// A log line shows the last of the stderr lines a server's error carries.
func ExampleShortStderr() {
	msg := `server "db": session: process exited; stderr: starting | reading config | no password for user "app"`
	fmt.Println(switchboard.ShortStderr(msg, 1))
	// Output: server "db": session: process exited; stderr: … | no password for user "app"
}

// A host that calls one tool narrows the config to the servers that may
// own it, and starts no other.
func ExampleForTool() {
	cfg, err := config.Parse("mcp.json", []byte(`{
		"mcpServers": {
			"github": {"command": "github-server"},
			"files": {"command": "files-server"},
			"search": {"command": "search-server", "prefix": ""}, // unprefixed: may own any name
		}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range switchboard.ForTool(cfg, "github__create_issue").Servers {
		fmt.Println(s.Name)
	}
	// Unordered output:
	// github
	// search
}
