package main

import (
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestRefusesToRunInsideItself: a Switchboard that an entry of its own
// config started (its chain holds the entry), or with MaxChainDepth
// Switchboards above it, refuses to run, whatever the verb that starts
// servers: it exits with config.ChainExitCode, having started nothing,
// after one line on stderr that the Switchboard above recognises, naming
// the entry, its file and the fix.
func TestRefusesToRunInsideItself(t *testing.T) {
	isolate(t)
	state := t.TempDir()
	path := writeConfig(t, map[string]mcptest.Script{"ok": {StateDir: state}}, map[string]any{
		"switchboard": map[string]any{"command": "npx", "args": []string{"-y", "switchboard-mcp", "serve", "--stdio"}},
	})
	cfg, err := config.Load(&config.LoadOptions{Paths: []string{path}})
	if err != nil {
		t.Fatal(err)
	}
	self, _ := cfg.Lookup("switchboard")
	other := &config.Server{Command: "another-gateway"}
	deep := config.Chain{}
	for range config.MaxChainDepth {
		deep = deep.Next(other)
	}
	for _, tc := range []struct {
		name  string
		chain config.Chain
		want  string
	}{
		{"started by its own entry", config.Chain{}.Next(other).Next(&self),
			`switchboard: refusing to start: server "switchboard" (in ` + path + `) started this Switchboard, so the config starts Switchboard itself, without end; ` +
				`remove "switchboard" from the config Switchboard reads, or give Switchboard a config of its own with --config` + "\n"},
		{"nested too deep", deep,
			"switchboard: refusing to start: 4 Switchboards already run one inside another (SWITCHBOARD_CHAIN), the most there may be: " +
				"a config starts Switchboard, maybe through another program; remove that entry from the config Switchboard reads, " +
				"or give Switchboard a config of its own with --config\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(config.ChainEnv, tc.chain.String())
			for _, args := range [][]string{
				{"serve", "--stdio"}, {"serve"}, {"tools"}, {"call", "ok__echo"}, {"status", "--json"}, {"check"},
			} {
				out, stderr, code := cli(t, append(args, "--config", path)...)
				if code != config.ChainExitCode || out != "" || stderr != tc.want {
					t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and\n%s", args, code, out, stderr, config.ChainExitCode, tc.want)
				}
			}
			if counts, err := mcptest.ReadCounts(state); err == nil && counts.Starts != 0 {
				t.Errorf("a refusing Switchboard started %d servers", counts.Starts)
			}
		})
	}

	// A Switchboard started by another, on a config of its own, runs.
	t.Setenv(config.ChainEnv, config.Chain{}.Next(other).String())
	if _, stderr, code := cli(t, "check", "--config", writeConfig(t, map[string]mcptest.Script{"ok": {}}, nil)); code != 0 {
		t.Errorf("check on a config of its own, inside another Switchboard: exit %d, stderr %q", code, stderr)
	}
	// login starts no server: it is not refused.
	t.Setenv(config.ChainEnv, deep.String())
	if _, stderr, _ := cli(t, "login", "switchboard", "--config", path); !strings.Contains(stderr, "local command") {
		t.Errorf("login inside a chain too deep: %q, want its own answer", stderr)
	}
}
