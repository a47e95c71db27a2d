package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/internal/shell"

	"github.com/google/go-cmp/cmp"
)

func TestLoadTrust(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "work")
	project := write(t, filepath.Join(work, ProjectFile), `{"mcpServers": {"p": {"command": "sh", "args": ["-c", "touch MARKER"]}}}`)
	write(t, filepath.Join(root, "home/.config/switchboard/mcp.json"), `{"mcpServers": {"u": {"command": "u"}}}`)
	store := &TrustStore{File: filepath.Join(root, "state", "trust.json")}
	load := func() *Config {
		t.Helper()
		cfg, err := Load(&LoadOptions{Dir: work, LookupEnv: env(map[string]string{"HOME": filepath.Join(root, "home")}), Trust: store})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	untrusted := func(cfg *Config, changed bool) {
		t.Helper()
		want := summary{Servers: []string{"u=u@mcp.json"}, Files: []string{"mcp.json"}}
		if diff := cmp.Diff(want, summarize(cfg)); diff != "" {
			t.Errorf("Load (-want +got):\n%s", diff)
		}
		var ue *UntrustedError
		if len(cfg.Warnings) != 1 || !errors.As(cfg.Warnings[0], &ue) {
			t.Fatalf("Warnings = %v, want one *UntrustedError", cfg.Warnings)
		}
		if ue.File != project || ue.Changed != changed {
			t.Errorf("UntrustedError = %+v, want File %s, Changed %v", ue, project, changed)
		}
		if msg := ue.Error(); !strings.Contains(msg, "run: switchboard trust "+shell.Quote(project)) {
			t.Errorf("warning %q does not say how to trust the file", msg)
		}
	}

	untrusted(load(), false)
	if _, err := store.Trust(project); err != nil {
		t.Fatal(err)
	}
	want := summary{Servers: []string{"u=u@mcp.json", "p=sh@.mcp.json"}, Files: []string{"mcp.json", ".mcp.json"}}
	if diff := cmp.Diff(want, summarize(load())); diff != "" {
		t.Errorf("Load once trusted (-want +got):\n%s", diff)
	}
	write(t, project, `{"mcpServers": {"p": {"command": "sh", "args": ["-c", "touch OTHER"]}}}`)
	untrusted(load(), true)

	// Named with --config, it needs no trust.
	cfg, err := Load(&LoadOptions{Paths: []string{project}, LookupEnv: env(nil), Trust: &TrustStore{File: filepath.Join(root, "none.json")}})
	if err != nil || len(cfg.Warnings) > 0 || len(cfg.Servers) != 1 {
		t.Errorf("Load with Paths = %+v, %v; want its server and no warning", summarize(cfg), err)
	}
}

// An untrusted project file is a file found: the default does not start
// in its place, as if the directory held none.
func TestLoadUntrustedNoDefault(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, ProjectFile), `{"mcpServers": {"p": {"command": "p"}}}`)
	for _, store := range []*TrustStore{{File: filepath.Join(dir, "trust.json")}, {}} {
		cfg, err := Load(&LoadOptions{Dir: dir, LookupEnv: env(nil), Trust: store})
		if err != nil || len(cfg.Servers)+len(cfg.Rejected)+len(cfg.Files) > 0 || len(cfg.Warnings) != 1 {
			t.Errorf("Load with store %q = %+v, %v, warnings %v; want nothing but a warning", store.File, summarize(cfg), err, cfg.Warnings)
		}
	}
}

func TestLoadCorruptTrustStore(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, ProjectFile), `{"mcpServers": {"p": {"command": "p"}}}`)
	store := &TrustStore{File: write(t, filepath.Join(dir, "trust.json"), "{")}
	cfg, _ := Load(&LoadOptions{Dir: dir, LookupEnv: env(nil), Trust: store})
	if len(cfg.Servers) > 0 || len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].Error(), "trust store "+store.File+": not valid JSON") {
		t.Errorf("Load = %+v, warnings %v; want no server, and a warning that names the store", summarize(cfg), cfg.Warnings)
	}
	if _, err := store.Trust(filepath.Join(dir, ProjectFile)); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("Trust with a corrupt store: %v; want an error that says what to do", err)
	}
}

func TestTrustRefuses(t *testing.T) {
	dir := t.TempDir()
	store := &TrustStore{File: filepath.Join(dir, "state", "trust.json")}
	tests := []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "missing.json"), "missing.json: read: no such file or directory"},
		{"not JSON", write(t, filepath.Join(dir, "bad.json"), "{nope"), "bad.json:1:2: "},
		{"not a config", write(t, filepath.Join(dir, "array.json"), "[]"), "array.json: want a JSON object at the top level"},
		{"directory", dir, dir + ": read: not a regular file (a directory)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := store.Trust(tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Trust(%s) = %v, want an error containing %q", tt.path, err, tt.want)
			}
		})
	}
	if _, err := os.Stat(store.File); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused Trust wrote the store: %v", err)
	}
	if _, err := (&TrustStore{}).Trust(write(t, filepath.Join(dir, "ok.json"), "{}")); err == nil || !strings.Contains(err.Error(), "no state directory") {
		t.Errorf("Trust without a store file = %v, want an error", err)
	}
}

func TestTrustStoreFile(t *testing.T) {
	dir := t.TempDir()
	store := &TrustStore{File: filepath.Join(dir, "state", "switchboard", "trust.json")}
	a := write(t, filepath.Join(dir, "a", ProjectFile), `{"mcpServers": {"a": {"command": "a"}}}`)
	b := write(t, filepath.Join(dir, "b", ProjectFile), `{"mcpServers": {"b": {"command": "b"}}}`)
	for _, p := range []string{a, b} {
		cfg, err := store.Trust(p)
		if err != nil || len(cfg.Servers) != 1 {
			t.Fatalf("Trust(%s) = %+v, %v", p, cfg, err)
		}
	}
	f, err := store.read()
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Files) != 2 || f.Files[a].SHA256 == "" || f.Files[b].SHA256 == f.Files[a].SHA256 {
		t.Errorf("store = %+v, want both files with their hashes", f.Files)
	}
	if runtime.GOOS == "windows" {
		return
	}
	info, err := os.Stat(store.File)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("store mode = %#o, want 0600", mode)
	}
	if entries, _ := os.ReadDir(filepath.Dir(store.File)); len(entries) != 1 {
		t.Errorf("store directory holds %d files, want the store alone (no temporary file left)", len(entries))
	}
}

func TestDefaultTrustStore(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_STATE_HOME": "/xdg", "HOME": "/home/u"}, "/xdg/switchboard/trust.json"},
		{map[string]string{"XDG_STATE_HOME": "relative", "HOME": "/home/u"}, "/home/u/.local/state/switchboard/trust.json"},
		{map[string]string{"USERPROFILE": "/profile"}, "/profile/.local/state/switchboard/trust.json"},
		{map[string]string{}, ""},
	}
	for _, tt := range tests {
		if got := DefaultTrustStore(env(tt.env)).File; got != filepath.FromSlash(tt.want) {
			t.Errorf("DefaultTrustStore(%v) = %q, want %q", tt.env, got, tt.want)
		}
	}
}

// TestFilesWatchesTheTrustStore: a watcher of discovery's files sees the
// trust store change, so that trusting the project file reloads it; with
// explicit paths, no file needs trust.
func TestFilesWatchesTheTrustStore(t *testing.T) {
	lookup := env(map[string]string{"HOME": "/home/u"})
	store := &TrustStore{File: "/state/trust.json"}
	want := []string{filepath.FromSlash("/home/u/.config/switchboard/mcp.json"), filepath.Join("work", ProjectFile), "/state/trust.json"}
	if diff := cmp.Diff(want, Files(&LoadOptions{Dir: "work", LookupEnv: lookup, Trust: store})); diff != "" {
		t.Errorf("Files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a.json"}, Files(&LoadOptions{Paths: []string{"a.json"}, Trust: store})); diff != "" {
		t.Errorf("Files with Paths (-want +got):\n%s", diff)
	}
}
