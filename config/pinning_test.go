package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestPinning: the top-level "pinning" is a mode or {"mode", "file"}, the
// file relative to the config file's directory; a bad one fails the file,
// naming the field; a later file's replaces an earlier one's.
func TestPinning(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mcp.json")
	for _, tc := range []struct {
		in   string
		want Pinning
	}{
		{`"enforce"`, Pinning{Mode: PinningEnforce}},
		{`"off"`, Pinning{Mode: PinningOff}},
		{`{"mode": "warn"}`, Pinning{Mode: PinningWarn}},
		{`{"mode": "enforce", "file": "pins.json"}`, Pinning{Mode: PinningEnforce, File: filepath.Join(dir, "pins.json")}},
		{`{"mode": "enforce", "file": "/etc/switchboard/pins.json"}`, Pinning{Mode: PinningEnforce, File: "/etc/switchboard/pins.json"}},
	} {
		cfg, err := Parse(file, []byte(`{"mcpServers": {}, "pinning": `+tc.in+`}`))
		if err != nil || len(cfg.Warnings) != 0 {
			t.Errorf("%s: %v, warnings %v; want none", tc.in, err, cfg.Warnings)
			continue
		}
		if cfg.Pinning != tc.want {
			t.Errorf("%s: Pinning = %+v, want %+v", tc.in, cfg.Pinning, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{`"enfroce"`, `mcp.json: pinning: invalid pinning setting: "enfroce"; want "off", "warn" or "enforce"`},
		{`true`, `mcp.json: pinning: invalid pinning setting: want "off", "warn" or "enforce", or an object`},
		{`{"file": "p.json"}`, `mcp.json: pinning.mode: invalid pinning setting: missing`},
		{`{"mode": "warn", "file": ""}`, `mcp.json: pinning.file: invalid pinning setting: want the pins file's path`},
		{`{"mode": "warn", "dir": "x"}`, `mcp.json: pinning.dir: invalid pinning setting: unknown field`},
	} {
		_, err := Parse(file, []byte(`{"mcpServers": {}, "pinning": `+tc.in+`}`))
		if !errors.Is(err, ErrPinning) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrPinning with %q", tc.in, err, tc.want)
		}
	}
	t.Chdir(dir)
	if cfg, err := Parse("mcp.json", []byte(`{"mcpServers": {}, "pinning": {"mode": "warn", "file": "pins.json"}}`)); err != nil || cfg.Pinning.File != filepath.Join(dir, "pins.json") {
		t.Errorf("a config named by a relative path: %+v, %v; want the file made absolute", cfg.Pinning, err)
	}
	if cfg, err := Parse(file, []byte(`{"mcpServers": {}}`)); err != nil || cfg.Pinning != (Pinning{}) {
		t.Errorf("no pinning: %+v, %v; want the zero Pinning (the host's default)", cfg.Pinning, err)
	}
}

// TestServerPinning: a server's "pinning" is its own mode; a bad one
// rejects the server, naming the field.
func TestServerPinning(t *testing.T) {
	cfg, err := Parse("mcp.json", []byte(`{"mcpServers": {"a": {"command": "x", "pinning": "off"}, "b": {"command": "y"}, "c": {"command": "z", "pinning": "strict"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings %v, want none", cfg.Warnings)
	}
	if len(cfg.Servers) != 2 || cfg.Servers[0].Pinning != PinningOff || cfg.Servers[1].Pinning != "" {
		t.Errorf("servers %+v, want a off and b unset", cfg.Servers)
	}
	if len(cfg.Rejected) != 1 || !strings.Contains(cfg.Rejected[0].Err.Error(), `pinning: "strict": want "off", "warn" or "enforce"`) {
		t.Errorf("rejected %v, want c, naming pinning", cfg.Rejected)
	}
}

// TestPinsFile: the config's file wins, then the host's, then one per
// config under the state directory.
func TestPinsFile(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "XDG_STATE_HOME" {
			return "/state", true
		}
		return "", false
	}
	named := &Config{Pinning: Pinning{File: "/etc/pins.json"}, Files: []string{"/a/mcp.json"}}
	if got, err := named.PinsFile("/host.json", env); err != nil || got != "/etc/pins.json" {
		t.Errorf("named: %q, %v", got, err)
	}
	a := &Config{Files: []string{"/a/mcp.json"}}
	if got, err := a.PinsFile("/host.json", env); err != nil || got != "/host.json" {
		t.Errorf("fallback: %q, %v", got, err)
	}
	got, err := a.PinsFile("", env)
	if err != nil || !strings.HasPrefix(got, "/state/switchboard/pins/mcp-") || !strings.HasSuffix(got, ".json") {
		t.Errorf("default: %q, %v", got, err)
	}
	b, _ := (&Config{Files: []string{"/b/mcp.json"}}).PinsFile("", env)
	if b == got {
		t.Errorf("two configs share the pins file %q", b)
	}
	if _, err := a.PinsFile("", func(string) (string, bool) { return "", false }); err == nil {
		t.Error("no home: no error")
	}
	if got, _ := (&Config{Files: []string{EmbeddedSource}}).PinsFile("", env); !strings.HasPrefix(got, "/state/switchboard/pins/embedded-") {
		t.Errorf("embedded: %q", got)
	}
}
