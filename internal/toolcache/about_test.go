package toolcache

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sampleAbout returns what a server says of itself, icons included.
func sampleAbout() About {
	return About{
		ServerInfo: &mcp.Implementation{
			Name: "memory-server", Title: "Memory", Description: "Remembers facts about the user in a knowledge graph.",
			Version: "0.6.3", WebsiteURL: "https://example.invalid/memory",
			Icons: []mcp.Icon{{Source: "https://example.invalid/m.png"}},
		},
		Instructions: "Use create_entities to remember people. Observations are facts.",
	}
}

func TestAboutRoundTrip(t *testing.T) {
	c, rec := newCache(t)
	if err := c.Store("memory", fp, sampleTools(), sampleAbout(), base, nil); err != nil {
		t.Fatalf("Store: %v", err)
	}
	got := c.Read("memory", fp)
	want := sampleAbout()
	want.ServerInfo.Icons = nil // not kept
	if diff := cmp.Diff(want, got.About); diff != "" {
		t.Errorf("Read About (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sampleTools(), got.Tools); diff != "" {
		t.Errorf("Read Tools (-want +got):\n%s", diff)
	}
	if w := rec.warnings(); len(w) > 0 {
		t.Errorf("warnings: %q", w)
	}

	// The file holds the serverInfo without icons, and the instructions.
	b, err := os.ReadFile(c.path("memory"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	wantInfo := map[string]any{
		"name": "memory-server", "title": "Memory", "description": "Remembers facts about the user in a knowledge graph.",
		"version": "0.6.3", "websiteUrl": "https://example.invalid/memory",
	}
	if diff := cmp.Diff(wantInfo, raw["serverInfo"]); diff != "" {
		t.Errorf("file serverInfo (-want +got):\n%s", diff)
	}
	if got := raw["instructions"]; got != sampleAbout().Instructions {
		t.Errorf("file instructions = %q", got)
	}

	// A note keeps them with the tools.
	if err := c.ReportNoise("memory", fp); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, c.Read("memory", fp).About); diff != "" {
		t.Errorf("About after a note (-want +got):\n%s", diff)
	}

	// A list stored without them drops them.
	if err := c.Put("memory", fp, sampleTools(), base.Add(time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(About{}, c.Read("memory", fp).About); diff != "" {
		t.Errorf("About after Put with none (-want +got):\n%s", diff)
	}

	// A miss has none.
	if diff := cmp.Diff(Entry{}, c.Read("memory", "0000")); diff != "" {
		t.Errorf("Read of another config (-want +got):\n%s", diff)
	}
}

// TestAboutOldFile: a file written before the cache kept serverInfo and
// instructions is read as it was, with no About.
func TestAboutOldFile(t *testing.T) {
	c, rec := newCache(t)
	if err := os.MkdirAll(c.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	old := `{"version": 1, "fingerprint": "` + fp + `", "server": "docs", "savedAt": "2026-03-14T14:09:26Z", ` +
		`"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "stdoutNoise": true}`
	if err := os.WriteFile(c.path("docs"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	got := c.Read("docs", fp)
	if diff := cmp.Diff([]string{"a"}, names(got.Tools)); diff != "" {
		t.Errorf("tools of an old file (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(About{}, got.About); diff != "" {
		t.Errorf("About of an old file (-want +got):\n%s", diff)
	}
	if !got.Notes.StdoutNoise {
		t.Error("an old file's notes are lost")
	}
	if w := rec.warnings(); len(w) > 0 {
		t.Errorf("warnings: %q", w)
	}
}

// TestAboutCorrupt: a serverInfo or instructions of the wrong type is a
// miss, as any corrupt field is.
func TestAboutCorrupt(t *testing.T) {
	const head = `{"version": 1, "fingerprint": "` + fp + `", "server": "docs", "savedAt": "2026-03-14T14:09:26Z", ` +
		`"tools": [{"name": "a", "inputSchema": {"type": "object"}}], `
	for name, tail := range map[string]string{
		"serverInfo a string":      `"serverInfo": "memory"}`,
		"serverInfo an array":      `"serverInfo": [{"name": "memory"}]}`,
		"serverInfo name a list":   `"serverInfo": {"name": ["memory"]}}`,
		"instructions a number":    `"instructions": 42}`,
		"instructions an object":   `"instructions": {"text": "x"}}`,
		"serverInfo truncated":     `"serverInfo": {"name": "memory"`,
		"description not a string": `"serverInfo": {"name": "m", "description": true}}`,
	} {
		t.Run(name, func(t *testing.T) {
			c, rec := newCache(t)
			if err := os.MkdirAll(c.Dir(), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(c.path("docs"), []byte(head+tail), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := c.Read("docs", fp); got.Tools != nil || got.About != (About{}) {
				t.Errorf("Read = %v, %+v; want a miss", names(got.Tools), got.About)
			}
			if len(rec.warnings()) == 0 {
				t.Error("no warning of the corrupt file")
			}
		})
	}
}

// TestAboutBounded: instructions and serverInfo strings are cut between
// words to their limits, when stored and when read.
func TestAboutBounded(t *testing.T) {
	long := strings.Repeat("remember facts ", MaxInstructions/5) // 3× the limit
	c, _ := newCache(t)
	about := About{ServerInfo: &mcp.Implementation{Name: "m", Description: long}, Instructions: long}
	if err := c.Store("memory", fp, named("a"), about, base, nil); err != nil {
		t.Fatal(err)
	}
	got := c.Read("memory", fp).About
	if n := len(got.Instructions); n > MaxInstructions || n < MaxInstructions-len("remember facts ") {
		t.Errorf("instructions of %d bytes kept as %d; want at most MaxInstructions (%d), cut at a word", len(long), n, MaxInstructions)
	}
	if !strings.HasSuffix(got.Instructions, " facts") && !strings.HasSuffix(got.Instructions, " remember") {
		t.Errorf("instructions cut inside a word: ...%q", got.Instructions[len(got.Instructions)-20:])
	}
	if n := len(got.ServerInfo.Description); n > MaxInfoField || n < MaxInfoField-len("remember facts ") {
		t.Errorf("description kept as %d bytes; want at most MaxInfoField (%d)", n, MaxInfoField)
	}
	b, err := os.ReadFile(c.path("memory"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxInstructions+MaxInfoField+1024 {
		t.Errorf("file of %d bytes", len(b))
	}

	// A file that holds more (written by hand) is cut when read.
	raw := `{"version": 1, "fingerprint": "` + fp + `", "server": "memory", "savedAt": "2026-03-14T14:09:26Z", ` +
		`"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "instructions": "` + long + `"}`
	if err := os.WriteFile(c.path("memory"), []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := len(c.Read("memory", fp).About.Instructions); n > MaxInstructions {
		t.Errorf("instructions of a hand-written file read as %d bytes; want at most %d", n, MaxInstructions)
	}
}

func TestCutWords(t *testing.T) {
	tests := []struct {
		s    string
		max  int
		want string
	}{
		{"", 4, ""},
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"two words", 6, "two"},
		{"two words", 4, "two"},
		{"two  words here", 9, "two"},
		{"two words here", 9, "two words"},
		{"two words here", 10, "two words"},
		{"onelongword rest", 5, "onelo"},
		{"héllo", 2, "h"},      // é is 2 bytes: never half a rune
		{"日本語 text", 4, "日"},   // a first word longer than max is cut at a rune
		{" leading", 3, " le"}, // no word fits but an empty one
	}
	for _, tt := range tests {
		if got := cutWords(tt.s, tt.max); got != tt.want {
			t.Errorf("cutWords(%q, %d) = %q, want %q", tt.s, tt.max, got, tt.want)
		}
	}
}

// TestAboutRedaction: Store applies redact to what a server said of itself
// too.
func TestAboutRedaction(t *testing.T) {
	const secret = "sk-live-0123456789"
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED]") }
	c, _ := newCache(t)
	about := About{
		ServerInfo:   &mcp.Implementation{Name: "api", Title: secret, Description: "Calls with " + secret + ".", Version: secret, WebsiteURL: "https://x.invalid/?k=" + secret},
		Instructions: "Your key is " + secret + ".",
	}
	if err := c.Store("api", fp, named("a"), about, base, redact); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(c.path("api"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) {
		t.Errorf("the file contains the secret:\n%s", b)
	}
	if about.ServerInfo.Title != secret {
		t.Error("Store changed the caller's serverInfo")
	}
}
