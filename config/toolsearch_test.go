package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseToolSearch(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ToolSearch
	}{
		{"off", ToolSearch{}},
		{"on", ToolSearch{Mode: ToolSearchOn}},
		{"auto", ToolSearch{Mode: ToolSearchAuto, Threshold: 40}},
		{"auto:0", ToolSearch{Mode: ToolSearchAuto}},
		{" auto:100 ", ToolSearch{Mode: ToolSearchAuto, Threshold: 100}},
	} {
		got, err := ParseToolSearch(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseToolSearch(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if again, err := ParseToolSearch(got.String()); err != nil || again != got {
			t.Errorf("%q does not read back: %q gives %+v, %v", tc.in, got.String(), again, err)
		}
	}
	for _, bad := range []string{"", "yes", "ON", "auto:", "auto:-1", "auto:x", "on:5", "off:1", "auto:99999999999"} {
		if _, err := ParseToolSearch(bad); !errors.Is(err, ErrToolSearchMode) || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("ParseToolSearch(%q) = %v, want ErrToolSearchMode quoting the value", bad, err)
		}
	}
}

func TestToolSearchEnabled(t *testing.T) {
	auto := ToolSearch{Mode: ToolSearchAuto, Threshold: 40}
	for _, tc := range []struct {
		ts      ToolSearch
		exposed int
		want    bool
	}{
		{ToolSearch{}, 1000, false},
		{ToolSearch{Mode: ToolSearchOn}, 0, true},
		{auto, 40, false},
		{auto, 41, true},
	} {
		if got := tc.ts.Enabled(tc.exposed); got != tc.want {
			t.Errorf("%v with %d tools: Enabled = %v, want %v", tc.ts, tc.exposed, got, tc.want)
		}
	}
}

// TestToolSearchInTheFile: the top-level "toolSearch" is read; a bad value
// is a warning naming the file and the key, and leaves search off; a file
// of higher precedence overrides one below it; "alwaysLoad" marks a server.
func TestToolSearchInTheFile(t *testing.T) {
	cfg, err := Parse("mcp.json", []byte(`{"toolSearch": "auto:10", "mcpServers": {"a": {"command": "x", "alwaysLoad": true}, "b": {"command": "y"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := (ToolSearch{Mode: ToolSearchAuto, Threshold: 10}); cfg.ToolSearch != want {
		t.Errorf("toolSearch = %+v, want %+v", cfg.ToolSearch, want)
	}
	if !cfg.Servers[0].AlwaysLoad || cfg.Servers[1].AlwaysLoad {
		t.Errorf("alwaysLoad of a, b = %v, %v; want true, false", cfg.Servers[0].AlwaysLoad, cfg.Servers[1].AlwaysLoad)
	}

	for _, bad := range []string{`"sometimes"`, `true`, `40`} {
		cfg, err = Parse("mcp.json", []byte(`{"toolSearch": `+bad+`, "mcpServers": {}}`))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ToolSearch != (ToolSearch{}) || len(cfg.Warnings) != 1 ||
			!strings.Contains(cfg.Warnings[0].Error(), "mcp.json: toolSearch: ") || !errors.Is(cfg.Warnings[0], ErrToolSearchMode) {
			t.Errorf("toolSearch %s: %+v, warnings %v; want off and one warning naming the file and key", bad, cfg.ToolSearch, cfg.Warnings)
		}
	}

	cfg, err = Parse("mcp.json", []byte(`{"mcpServers": {"a": {"command": "x", "alwaysLoad": "yes"}}}`))
	if err != nil || len(cfg.Rejected) != 1 || !strings.Contains(cfg.Rejected[0].Err.Error(), "alwaysLoad: want true or false") {
		t.Errorf("alwaysLoad \"yes\": rejected %v, %v", cfg.Rejected, err)
	}

	dir := t.TempDir()
	user, project := filepath.Join(dir, "user.json"), filepath.Join(dir, "project.json")
	os.WriteFile(user, []byte(`{"toolSearch": "on", "mcpServers": {}}`), 0o600)
	os.WriteFile(project, []byte(`{"toolSearch": "off", "mcpServers": {}}`), 0o600)
	cfg, err = Load(&LoadOptions{Paths: []string{user, project}})
	if err != nil || cfg.ToolSearch != (ToolSearch{}) {
		t.Errorf("the later file's off did not override the earlier on: %+v, %v", cfg.ToolSearch, err)
	}
	cfg, err = Load(&LoadOptions{Paths: []string{project, user}})
	if err != nil || cfg.ToolSearch.Mode != ToolSearchOn {
		t.Errorf("the later file's on did not override the earlier off: %+v, %v", cfg.ToolSearch, err)
	}
}

// TestServerDescription: a server's "description" is read; one that is no
// string, or over MaxServerDescription characters, rejects the entry with
// an error naming the file, the server and the field.
func TestServerDescription(t *testing.T) {
	cfg, err := Parse("mcp.json", []byte(`{"mcpServers": {"memory": {"command": "x", "description": "Facts to remember, ünd more"}, "b": {"command": "y"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 2 || cfg.Servers[0].Description != "Facts to remember, ünd more" || cfg.Servers[1].Description != "" {
		t.Errorf("servers %+v, want memory's description and none for b", cfg.Servers)
	}
	ok := strings.Repeat("é", MaxServerDescription)
	if cfg, err := Parse("mcp.json", []byte(`{"mcpServers": {"a": {"command": "x", "description": "`+ok+`"}}}`)); err != nil || len(cfg.Servers) != 1 {
		t.Errorf("a description of %d characters: %+v, %v; want it taken", MaxServerDescription, cfg.Rejected, err)
	}
	for bad, want := range map[string]string{
		`7`:             `mcp.json: server "a": description: want a string`,
		`"` + ok + `e"`: `mcp.json: server "a": description: 201 characters long, over the limit of 200`,
	} {
		cfg, err := Parse("mcp.json", []byte(`{"mcpServers": {"a": {"command": "x", "description": `+bad+`}}}`))
		if err != nil || len(cfg.Rejected) != 1 || !strings.Contains(cfg.Rejected[0].Err.Error(), want) {
			t.Errorf("description %.20s: rejected %v, %v; want %q", bad, cfg.Rejected, err, want)
		}
	}
	long := Server{Name: "a", Command: "x", Description: ok + "e"}
	if err := long.Validate(); err == nil || !strings.Contains(err.Error(), "description: 201 characters long") {
		t.Errorf("Validate of a long description = %v", err)
	}
}

// TestToolSearchObject: "toolSearch" may be an object with the mode and an
// embedding endpoint; each bad part is a warning naming the file and the
// field; a bad mode leaves search as it was (off), a bad endpoint leaves
// search in its mode, without embeddings.
func TestToolSearchObject(t *testing.T) {
	cfg, err := Parse("mcp.json", []byte(`{"toolSearch": {"mode": "auto:5", "embeddings": {"url": "http://localhost:11434/v1", "model": "nomic-embed-text", "apiKeyEnv": "OPENAI_API_KEY"}}, "mcpServers": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := ToolSearch{Mode: ToolSearchAuto, Threshold: 5, Embeddings: Embeddings{URL: "http://localhost:11434/v1", Model: "nomic-embed-text", APIKeyEnv: "OPENAI_API_KEY"}}
	if cfg.ToolSearch != want || len(cfg.Warnings) != 0 {
		t.Errorf("toolSearch = %+v, warnings %v; want %+v", cfg.ToolSearch, cfg.Warnings, want)
	}
	cfg, err = Parse("mcp.json", []byte(`{"toolSearch": {"mode": "on"}, "mcpServers": {}}`))
	if err != nil || cfg.ToolSearch != (ToolSearch{Mode: ToolSearchOn}) {
		t.Errorf("toolSearch {mode: on} = %+v, %v", cfg.ToolSearch, err)
	}

	for bad, want := range map[string]string{
		`{"mode": "sometimes"}`: `mcp.json: toolSearch.mode: tool search "sometimes": want`,
		`{"mode": 1}`:           `mcp.json: toolSearch.mode: want`,
		`{"embeddings": {"url": "http://h", "model": "m"}}`:                                             `mcp.json: toolSearch.mode: want "off", "on", "auto" or "auto:N" (N a whole number): missing`,
		`{"mode": "on", "colour": "blue"}`:                                                              `mcp.json: toolSearch.colour: invalid tool search setting: unknown field`,
		`{"mode": "on", "embeddings": "http://h"}`:                                                      `mcp.json: toolSearch.embeddings: invalid tool search setting: want an object`,
		`{"mode": "on", "embeddings": {"url": "localhost:11434", "model": "m"}}`:                        `mcp.json: toolSearch.embeddings.url: invalid tool search setting: want an absolute http or https URL`,
		`{"mode": "on", "embeddings": {"url": "ftp://h/v1", "model": "m"}}`:                             `toolSearch.embeddings.url: invalid tool search setting: want an absolute http or https URL`,
		`{"mode": "on", "embeddings": {"url": "/v1", "model": "m"}}`:                                    `toolSearch.embeddings.url: invalid tool search setting: want an absolute`,
		`{"mode": "on", "embeddings": {"model": "m"}}`:                                                  `toolSearch.embeddings.url: invalid tool search setting: missing`,
		`{"mode": "on", "embeddings": {"url": "https://u:secret@h/v1", "model": "m"}}`:                  `toolSearch.embeddings.url: invalid tool search setting: the URL has a user or password`,
		`{"mode": "on", "embeddings": {"url": "http://h/v1", "model": " "}}`:                            `toolSearch.embeddings.model: invalid tool search setting: missing or empty`,
		`{"mode": "on", "embeddings": {"url": "http://h/v1"}}`:                                          `toolSearch.embeddings.model: invalid tool search setting: missing or empty`,
		`{"mode": "on", "embeddings": {"url": "http://h/v1", "model": "m", "apiKeyEnv": "sk-123 456"}}`: `toolSearch.embeddings.apiKeyEnv: invalid tool search setting: want the name of an environment variable`,
		`{"mode": "on", "embeddings": {"url": "http://h/v1", "model": "m", "key": "x"}}`:                `toolSearch.embeddings.key: invalid tool search setting: unknown field`,
		`{"mode": "on", "embeddings": {"url": "http://h/v1", "model": 7}}`:                              `toolSearch.embeddings.model: invalid tool search setting: want a string`,
	} {
		cfg, err := Parse("mcp.json", []byte(`{"toolSearch": `+bad+`, "mcpServers": {}}`))
		if err != nil {
			t.Fatal(err)
		}
		wantSetting, wantEnd := ToolSearch{}, "; ignored"
		if strings.Contains(want, "toolSearch.embeddings") {
			wantSetting, wantEnd = ToolSearch{Mode: ToolSearchOn}, "; tool search runs without embeddings"
		}
		if cfg.ToolSearch != wantSetting || len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].Error(), want) ||
			!strings.HasSuffix(cfg.Warnings[0].Error(), wantEnd) || strings.Contains(cfg.Warnings[0].Error(), "secret") {
			t.Errorf("toolSearch %s: %+v, warnings %v; want %+v and one warning with %q, ending %q", bad, cfg.ToolSearch, cfg.Warnings, wantSetting, want, wantEnd)
		}
	}
}
