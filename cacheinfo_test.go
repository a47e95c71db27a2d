package switchboard

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// memoryScript is a server whose tools say nothing of what it is for: only
// its serverInfo and instructions do.
var memoryScript = mcptest.Script{
	Name:         "memory-server",
	Title:        "Memory",
	Description:  "Keeps a persistent memory of people and facts across conversations.",
	Instructions: "Remember what the user tells you with create_entities. Observations hold the details.",
	Tools: []mcptest.ToolSpec{
		{Name: "create_entities", Description: "Create entities in the graph."},
		{Name: "add_observations", Description: "Add observations to entities."},
	},
}

// scored returns the names and scores SearchTools finds for query.
func scored(t *testing.T, m *Manager, query string) map[string]float64 {
	t.Helper()
	matches, err := m.SearchTools(t.Context(), query, nil)
	if err != nil {
		t.Fatalf("SearchTools(%q) = %v", query, err)
	}
	out := make(map[string]float64, len(matches))
	for _, match := range matches {
		out[match.Name] = match.Score
	}
	return out
}

// TestCachedServerSearchedAsConnected: a server shown from the tool cache,
// while it connects (slow) or after it failed (down), has the serverInfo
// and instructions it had when an earlier manager saw it connected, so a
// search by a word found only in its serverInfo description finds its
// tools before it connects, and every search ranks as when it was
// connected. Once it connects with other words, those replace them, in its
// status and in the index.
func TestCachedServerSearchedAsConnected(t *testing.T) {
	queries := []string{"facts about people", "remember that Alice prefers email", "read a file"}
	for _, down := range []bool{false, true} {
		name := map[bool]string{false: "slow", true: "down"}[down]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFleet(t)
				f.add("memory", memoryScript)
				f.add("files", mcptest.Script{Tools: searchable["files"]})
				dir := t.TempDir()
				cfgs := []config.Server{server("memory"), server("files")}

				// A first manager sees the server connected, and caches it.
				first := f.managerWith(&Options{CacheDir: dir}, cfgs...)
				if err := first.Connect(t.Context()); err != nil {
					t.Fatal(err)
				}
				live := make(map[string]map[string]float64)
				for _, q := range queries {
					live[q] = scored(t, first, q)
				}
				wantStatus := first.Status()[0]
				first.Close()
				if got := live["facts about people"]; len(got) == 0 {
					t.Fatalf("connected: nothing found by the serverInfo description: %v", got)
				}

				// The next manager: the server is slow (or down) and shown
				// from the cache.
				f.delay("memory", time.Hour)
				if down {
					f.fail("memory", errors.New("connection refused"))
				}
				m := f.managerWith(&Options{CacheDir: dir, StartupGate: DefaultStartupGate}, cfgs...)
				if err := m.Connect(t.Context()); err != nil {
					t.Fatal(err)
				}
				if down {
					if err := m.WaitSettled(t.Context(), "memory"); err != nil {
						t.Fatal(err)
					}
				}
				st := m.Status()[0]
				if !st.Deferred || st.State == StateConnected {
					t.Fatalf("status %v, deferred %v; want the server shown from the cache", st.State, st.Deferred)
				}
				if diff := cmp.Diff(wantStatus.ServerInfo, st.ServerInfo); diff != "" {
					t.Errorf("cached ServerInfo (-connected +cached):\n%s", diff)
				}
				if st.Instructions != wantStatus.Instructions {
					t.Errorf("cached Instructions = %q, want %q", st.Instructions, wantStatus.Instructions)
				}
				if got := searched(t, m, "facts about people", nil); len(got) == 0 || !strings.HasPrefix(got[0], "memory__") {
					t.Errorf("SearchTools(facts about people) from the cache = %v, want memory__… first", got)
				}
				for _, q := range queries {
					if diff := cmp.Diff(live[q], scored(t, m, q)); diff != "" {
						t.Errorf("SearchTools(%q) from the cache (-connected +cached):\n%s", q, diff)
					}
				}
			})
		})
	}

	t.Run("connects with other words", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newFleet(t)
			f.add("memory", memoryScript)
			f.add("files", mcptest.Script{Tools: searchable["files"]})
			dir := t.TempDir()
			cfgs := []config.Server{server("memory"), server("files")}
			first := f.managerWith(&Options{CacheDir: dir}, cfgs...)
			if err := first.Connect(t.Context()); err != nil {
				t.Fatal(err)
			}
			first.Close()

			// The same tools and instructions, served by a server whose
			// serverInfo now says it keeps invoices.
			changed := memoryScript
			changed.Description = "Tracks invoices and payments."
			f.add("memory", changed)
			f.delay("memory", time.Second)
			m := f.managerWith(&Options{CacheDir: dir, StartupGate: DefaultStartupGate}, cfgs...)
			if err := m.Connect(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := searched(t, m, "facts about people", nil); len(got) == 0 || !strings.HasPrefix(got[0], "memory__") {
				t.Errorf("from the cache: SearchTools(facts about people) = %v, want memory__… first", got)
			}
			if err := m.WaitSettled(t.Context(), "memory"); err != nil {
				t.Fatal(err)
			}
			st := m.Status()[0]
			if st.State != StateConnected || st.ServerInfo == nil || st.ServerInfo.Description != changed.Description {
				t.Errorf("connected: %v, serverInfo %+v, instructions %q; want the server's own", st.State, st.ServerInfo, st.Instructions)
			}
			if got := searched(t, m, "invoices payments", nil); len(got) == 0 || !strings.HasPrefix(got[0], "memory__") {
				t.Errorf("connected: SearchTools(invoices payments) = %v, want memory__… first", got)
			}
			if got := searched(t, m, "persistent conversations", nil); slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "memory__") }) {
				t.Errorf("connected: SearchTools(persistent conversations) = %v, want none of the cached words left", got)
			}
		})
	})
}

// TestCacheKeepsOnlyTheServersOwnWords: the cache file of a server holds
// its tools, its serverInfo and its instructions, redacted, and nothing
// else: no resolved env var, no config, no icon.
func TestCacheKeepsOnlyTheServersOwnWords(t *testing.T) {
	const secret = "sk-about-0123456789abcdef"
	t.Setenv("SWITCHBOARD_TEST_ABOUT_SECRET", secret)
	f := newFleet(t)
	script := memoryScript
	script.Description = "Keeps facts; key " + secret + "."
	script.Instructions = "Call with key " + secret + "."
	f.add("s", script)
	dir := t.TempDir()
	cfg := server("s")
	cfg.Args = []string{"--key", "${SWITCHBOARD_TEST_ABOUT_SECRET}"}
	cfg.Env = map[string]string{"OTHER": "${SWITCHBOARD_TEST_ABOUT_SECRET}"}
	cfg.Description = "a config description"
	m := New(&config.Config{Servers: []config.Server{cfg}}, &Options{Dial: f.dial, CacheDir: dir})
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	m.Close() // the cache is written by then
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("cache files %v, %v; want one", files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secret, "SWITCHBOARD_TEST_ABOUT_SECRET", "--key", "in-memory", "a config description"} {
		if strings.Contains(string(b), s) {
			t.Errorf("the cache file holds %q:\n%s", s, b)
		}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	want := []string{"fingerprint", "instructions", "savedAt", "server", "serverInfo", "tools", "version"}
	if diff := cmp.Diff(want, slices.Sorted(maps.Keys(raw))); diff != "" {
		t.Errorf("the cache file's fields (-want +got):\n%s", diff)
	}
	var info map[string]any
	if err := json.Unmarshal(raw["serverInfo"], &info); err != nil {
		t.Fatal(err)
	}
	wantInfo := map[string]any{"name": "memory-server", "title": "Memory", "description": "Keeps facts; key [redacted].", "version": info["version"]}
	if diff := cmp.Diff(wantInfo, info); diff != "" {
		t.Errorf("the cached serverInfo (-want +got):\n%s", diff)
	}
	var instructions string
	if err := json.Unmarshal(raw["instructions"], &instructions); err != nil || instructions != "Call with key [redacted]." {
		t.Errorf("the cached instructions = %q, %v", instructions, err)
	}
}
