package config_test

import (
	"fmt"

	"github.com/switchboard-mcp/switchboard/config"
)

func Example() {
	const file = `{
	  // Comments and trailing commas are fine.
	  "mcpServers": {
	    "github": {
	      "type": "http",
	      "url": "https://example.invalid/mcp",
	      "headers": { "Authorization": "Bearer ${GITHUB_TOKEN}" },
	    },
	    "files": { "command": "npx", "args": ["server-filesystem", "${ROOT:-/srv}"] },
	    "broken": { "type": "sse" },
	  },
	}`
	cfg, err := config.Parse("example.jsonc", []byte(file))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range cfg.Rejected {
		fmt.Println("rejected:", r.Err)
	}

	// Resolve at connect time, with the environment of the moment.
	env := map[string]string{"GITHUB_TOKEN": "ghp_example_token"}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	for _, s := range cfg.Servers {
		resolved, secrets, err := s.Resolve(lookup)
		if err != nil {
			fmt.Println(err)
			continue
		}
		switch s.Type {
		case config.Stdio:
			fmt.Println(s.Name, "runs", resolved.Command, resolved.Args)
		default:
			// Show URLs and anything from the environment redacted.
			fmt.Println(s.Name, "connects to", resolved.DisplayURL(), "with",
				secrets.Redact(resolved.Headers["Authorization"]))
		}
	}
	// Output:
	// rejected: example.jsonc: server "broken": url: required for sse servers
	// github connects to https://example.invalid/mcp with Bearer [redacted]
	// files runs npx [server-filesystem /srv]
}
