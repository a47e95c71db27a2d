package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

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

// A host that discovers its config uses a project's .mcp.json only once the
// user has trusted it as it is now. Load says which file it ignored, and
// the host can ask the user, then trust it.
func ExampleTrustStore() {
	dir, _ := os.MkdirTemp("", "project-")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, config.ProjectFile), []byte(`{"mcpServers": {"build": {"command": "make", "args": ["mcp"]}}}`), 0o644)
	// A host would use config.DefaultTrustStore(nil), the user's own.
	store := &config.TrustStore{File: filepath.Join(dir, "trust.json")}
	opts := &config.LoadOptions{Dir: dir, Trust: store, LookupEnv: func(string) (string, bool) { return "", false }}

	cfg, _ := config.Load(opts)
	for _, w := range cfg.Warnings {
		var untrusted *config.UntrustedError
		if errors.As(w, &untrusted) {
			fmt.Println("ignored until trusted:", filepath.Base(untrusted.File))
			// Ask the user, showing what the file runs; then:
			if _, err := store.Trust(untrusted.File); err != nil {
				fmt.Println(err)
				return
			}
		}
	}
	cfg, _ = config.Load(opts)
	for _, s := range cfg.Servers {
		fmt.Println(s.Name, "runs", s.Command, s.Args)
	}
	// Output:
	// ignored until trusted: .mcp.json
	// build runs make [mcp]
}
