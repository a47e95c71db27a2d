package toolcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const fp = "3f2a9c0d5e7b1a48"

// base is an arbitrary fetch time, with nanoseconds and a non-UTC zone so
// that the round trip of savedAt is exercised.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.FixedZone("CET", 3600))

// recorder is a slog.Handler that keeps the messages of the records it gets.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Level.String()+" "+rec.Message)
	return nil
}

func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// warnings returns the messages logged at warn level or above.
func (r *recorder) warnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.msgs {
		if strings.HasPrefix(m, "WARN ") || strings.HasPrefix(m, "ERROR ") {
			out = append(out, m)
		}
	}
	return out
}

// clock is a fake clock for Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// newCache returns a cache in a fresh directory under t.TempDir() whose clock
// reads base, and the recorder of its log.
func newCache(t *testing.T) (*Cache, *recorder) {
	t.Helper()
	rec := &recorder{}
	clk := &clock{now: base}
	c := Open(filepath.Join(t.TempDir(), "tools"), &Options{Now: clk.Now, Logger: slog.New(rec)})
	return c, rec
}

func ptr[T any](v T) *T { return &v }

// sampleTools returns tools in the form a client decodes them, so that they
// survive a round trip unchanged.
func sampleTools() []*mcp.Tool {
	return []*mcp.Tool{
		{
			Meta:        mcp.Meta{"vendor.example/x": map[string]any{"rank": float64(2), "tags": []any{"a", "b"}}},
			Name:        "search",
			Title:       "Search",
			Description: "Searches the docs.",
			Annotations: &mcp.ToolAnnotations{
				DestructiveHint: ptr(false),
				IdempotentHint:  true,
				OpenWorldHint:   ptr(true),
				ReadOnlyHint:    true,
				Title:           "Search docs",
			},
			InputSchema: map[string]any{
				"type":     "object",
				"required": []any{"query"},
				"properties": map[string]any{
					"query": map[string]any{"type": "string", "minLength": float64(1)},
					"limit": map[string]any{"type": "integer", "default": float64(10), "maximum": float64(100)},
				},
				"additionalProperties": false,
			},
			OutputSchema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"hits": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}},
			},
			Icons: []mcp.Icon{{Source: "https://example.invalid/s.png", MIMEType: "image/png", Sizes: []string{"48x48"}}},
		},
		{
			Name:        "delete",
			InputSchema: map[string]any{"type": "object"},
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)},
		},
	}
}

// named returns one tool called name, used to tell lists apart.
func named(name string) []*mcp.Tool {
	return []*mcp.Tool{{Name: name, InputSchema: map[string]any{"type": "object"}}}
}

// names returns the names of tools.
func names(tools []*mcp.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

// dirEntries returns the names of the entries of dir, or nil if it does not
// exist.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	c, rec := newCache(t)
	if err := c.Put("docs", fp, sampleTools(), base, nil); err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, savedAt, ok := c.Get("docs", fp)
	if !ok {
		t.Fatal("Get: miss, want hit")
	}
	if diff := cmp.Diff(sampleTools(), got); diff != "" {
		t.Errorf("Get tools mismatch (-want +got):\n%s", diff)
	}
	if !savedAt.Equal(base) {
		t.Errorf("Get savedAt = %v, want %v", savedAt, base)
	}
	if w := rec.warnings(); len(w) > 0 {
		t.Errorf("warnings: %q", w)
	}

	// The file has the documented format.
	b, err := os.ReadFile(c.path("docs"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	tools := raw["tools"]
	delete(raw, "tools")
	wantRaw := map[string]any{
		"version":     float64(1),
		"fingerprint": fp,
		"server":      "docs",
		"savedAt":     "2026-03-14T14:09:26.535897932Z",
	}
	if diff := cmp.Diff(wantRaw, raw); diff != "" {
		t.Errorf("file fields mismatch (-want +got):\n%s", diff)
	}
	if l, ok := tools.([]any); !ok || len(l) != 2 {
		t.Errorf("file tools = %v, want an array of 2", tools)
	}
}

func TestGetReturnsCopies(t *testing.T) {
	c, _ := newCache(t)
	if err := c.Put("docs", fp, sampleTools(), base, nil); err != nil {
		t.Fatal(err)
	}
	got, _, _ := c.Get("docs", fp)
	got[0].Name = "changed"
	got[0].InputSchema.(map[string]any)["type"] = "changed"
	got[0].Annotations.Title = "changed"
	got[0].Meta["vendor.example/x"] = nil
	got = append(got[:1], got[2:]...)
	_ = got

	again, _, _ := c.Get("docs", fp)
	if diff := cmp.Diff(sampleTools(), again); diff != "" {
		t.Errorf("second Get mismatch (-want +got):\n%s", diff)
	}
}

func TestGetMiss(t *testing.T) {
	tests := []struct {
		name        string
		server      string
		fingerprint string
	}{
		{"other fingerprint", "docs", "0000000000000000"},
		{"empty fingerprint", "docs", ""},
		{"other server", "mail", fp},
		{"server differing in case", "Docs", fp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, rec := newCache(t)
			if err := c.Put("docs", fp, sampleTools(), base, nil); err != nil {
				t.Fatal(err)
			}
			tools, savedAt, ok := c.Get(tt.server, tt.fingerprint)
			if ok || tools != nil || !savedAt.IsZero() {
				t.Errorf("Get(%q, %q) = %v, %v, %v; want a miss", tt.server, tt.fingerprint, tools, savedAt, ok)
			}
			if w := rec.warnings(); len(w) > 0 {
				t.Errorf("warnings: %q", w)
			}
		})
	}
}

func TestTTL(t *testing.T) {
	tests := []struct {
		name   string
		ttl    time.Duration
		now    time.Time
		wantOK bool
	}{
		{"just saved", 0, base, true},
		{"saved in the future", 0, base.Add(-time.Hour), true},
		{"just before 30 days", 0, base.Add(DefaultTTL - time.Second), true},
		{"just after 30 days", 0, base.Add(DefaultTTL + time.Second), false},
		{"a year later", 0, base.AddDate(1, 0, 0), false},
		{"custom TTL, just before", time.Hour, base.Add(time.Hour - time.Nanosecond), true},
		{"custom TTL, just after", time.Hour, base.Add(time.Hour + time.Nanosecond), false},
		{"negative TTL means default", -time.Hour, base.Add(2 * time.Hour), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &clock{now: base}
			c := Open(t.TempDir(), &Options{TTL: tt.ttl, Now: clk.Now})
			if err := c.Put("docs", fp, named("a"), base, nil); err != nil {
				t.Fatal(err)
			}
			clk.Set(tt.now)
			if _, _, ok := c.Get("docs", fp); ok != tt.wantOK {
				t.Errorf("Get at %v after save: ok = %v, want %v", tt.now.Sub(base), ok, tt.wantOK)
			}
		})
	}
}

func TestCorruptFiles(t *testing.T) {
	const saved = `"savedAt": "2026-03-14T14:09:26Z"`
	const tool = `{"name": "a", "inputSchema": {"type": "object"}}`
	tests := []struct {
		name     string
		contents string
		wantWarn bool
	}{
		{"empty file", ``, true},
		{"truncated JSON", `{"version": 1, "fingerprint": "` + fp + `", "server": "docs", ` + saved + `, "tools": [` + tool, true},
		{"not an object", `[` + tool + `]`, true},
		{"version 2", `{"version": 2, "fingerprint": "` + fp + `", "server": "docs", ` + saved + `, "tools": [` + tool + `]}`, true},
		{"version a string", `{"version": "1", "fingerprint": "` + fp + `", "server": "docs", ` + saved + `, "tools": [` + tool + `]}`, true},
		{"version missing", `{"fingerprint": "` + fp + `", "server": "docs", ` + saved + `, "tools": [` + tool + `]}`, true},
		{"fingerprint missing", `{"version": 1, "server": "docs", ` + saved + `, "tools": [` + tool + `]}`, true},
		{"fingerprint null", `{"version": 1, "fingerprint": null, "server": "docs", ` + saved + `, "tools": [` + tool + `]}`, true},
		{"server missing", `{"version": 1, "fingerprint": "` + fp + `", ` + saved + `, "tools": [` + tool + `]}`, true},
		{"savedAt missing", `{"version": 1, "fingerprint": "` + fp + `", "server": "docs", "tools": [` + tool + `]}`, true},
		{"savedAt not RFC 3339", `{"version": 1, "fingerprint": "` + fp + `", "server": "docs", "savedAt": "yesterday", "tools": [` + tool + `]}`, true},
		{"tools missing", `{"version": 1, "fingerprint": "` + fp + `", "server": "docs", ` + saved + `}`, true},
		{"tools null", `{"version": 1, "fingerprint": "` + fp + `", "server": "docs", ` + saved + `, "tools": null}`, true},
		{"tools an object", `{"version": 1, "fingerprint": "` + fp + `", "server": "docs", ` + saved + `, "tools": {"a": ` + tool + `}}`, true},
		{"tool not an object", `{"version": 1, "fingerprint": "` + fp + `", "server": "docs", ` + saved + `, "tools": ["a"]}`, true},
		{"tool null", `{"version": 1, "fingerprint": "` + fp + `", "server": "docs", ` + saved + `, "tools": [null]}`, true},
		{"tool without name", `{"version": 1, "fingerprint": "` + fp + `", "server": "docs", ` + saved + `, "tools": [{"description": "x"}]}`, true},
		{"another server", `{"version": 1, "fingerprint": "` + fp + `", "server": "mail", ` + saved + `, "tools": [` + tool + `]}`, true},
		{"empty tools array", `{"version": 1, "fingerprint": "` + fp + `", "server": "docs", ` + saved + `, "tools": []}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, rec := newCache(t)
			if err := os.MkdirAll(c.Dir(), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(c.path("docs"), []byte(tt.contents), 0o600); err != nil {
				t.Fatal(err)
			}
			if tools, _, ok := c.Get("docs", fp); ok {
				t.Errorf("Get = %v, true; want a miss", names(tools))
			}
			if got := len(rec.warnings()) > 0; got != tt.wantWarn {
				t.Errorf("warned = %v, want %v (log %q)", got, tt.wantWarn, rec.msgs)
			}

			// A corrupt file never blocks a new entry, even an older one. A
			// well-formed file does, so Put after it.
			putAt := base.Add(-DefaultTTL / 2)
			if !tt.wantWarn {
				putAt = base.Add(time.Second)
			}
			if err := c.Put("docs", fp, named("fresh"), putAt, nil); err != nil {
				t.Fatalf("Put over corrupt file: %v", err)
			}
			tools, _, ok := c.Get("docs", fp)
			if diff := cmp.Diff([]string{"fresh"}, names(tools)); !ok || diff != "" {
				t.Errorf("Get after Put: ok = %v, names mismatch (-want +got):\n%s", ok, diff)
			}
		})
	}

	// The well-formed variant of the hand-written files is a hit, so the
	// cases above fail for the reason they name.
	t.Run("control", func(t *testing.T) {
		c, rec := newCache(t)
		if err := os.MkdirAll(c.Dir(), 0o700); err != nil {
			t.Fatal(err)
		}
		contents := `{"version": 1, "fingerprint": "` + fp + `", "server": "docs", ` + saved + `, "tools": [` + tool + `], "extra": true}`
		if err := os.WriteFile(c.path("docs"), []byte(contents), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := c.Get("docs", fp); !ok {
			t.Errorf("Get: miss, want hit (log %q)", rec.msgs)
		}
	})
}

func TestPutEmptyRemoves(t *testing.T) {
	tests := []struct {
		name  string
		tools []*mcp.Tool
	}{
		{"nil", nil},
		{"empty", []*mcp.Tool{}},
		{"only nil tools", []*mcp.Tool{nil, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name+" removes an entry", func(t *testing.T) {
			c, _ := newCache(t)
			if err := c.Put("docs", fp, sampleTools(), base, nil); err != nil {
				t.Fatal(err)
			}
			if err := c.Put("docs", fp, tt.tools, base.Add(time.Minute), nil); err != nil {
				t.Fatalf("Put empty: %v", err)
			}
			if _, _, ok := c.Get("docs", fp); ok {
				t.Error("Get after empty Put: hit, want miss")
			}
			if got := dirEntries(t, c.Dir()); len(got) != 0 {
				t.Errorf("directory holds %q, want nothing", got)
			}
		})
		t.Run(tt.name+" creates nothing", func(t *testing.T) {
			c, _ := newCache(t)
			if err := c.Put("docs", fp, tt.tools, base, nil); err != nil {
				t.Fatalf("Put empty: %v", err)
			}
			if _, err := os.Stat(c.Dir()); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Stat(dir) = %v, want not exist", err)
			}
		})
	}
}

func TestStaleWrites(t *testing.T) {
	type step struct {
		cache int // which of two caches on one directory, as two processes
		tools string
		at    time.Duration // after base
	}
	tests := []struct {
		name      string
		steps     []step
		wantTools []string // nil means a miss
		wantAt    time.Duration
	}{
		{
			name:      "newer replaces older",
			steps:     []step{{0, "old", 0}, {0, "new", time.Second}},
			wantTools: []string{"new"}, wantAt: time.Second,
		},
		{
			name:      "older is skipped",
			steps:     []step{{0, "new", time.Second}, {0, "old", 0}},
			wantTools: []string{"new"}, wantAt: time.Second,
		},
		{
			name:      "older by a nanosecond is skipped",
			steps:     []step{{0, "new", time.Nanosecond}, {0, "old", 0}},
			wantTools: []string{"new"}, wantAt: time.Nanosecond,
		},
		{
			name:      "same time replaces",
			steps:     []step{{0, "first", 0}, {0, "second", 0}},
			wantTools: []string{"second"}, wantAt: 0,
		},
		{
			name:      "older from another process is skipped",
			steps:     []step{{0, "new", time.Second}, {1, "old", 0}},
			wantTools: []string{"new"}, wantAt: time.Second,
		},
		{
			name:      "stale invalidation is skipped",
			steps:     []step{{0, "new", time.Second}, {0, "", 0}},
			wantTools: []string{"new"}, wantAt: time.Second,
		},
		{
			name:      "stale invalidation from another process is skipped",
			steps:     []step{{0, "new", time.Second}, {1, "", 0}},
			wantTools: []string{"new"}, wantAt: time.Second,
		},
		{
			name:  "stale write after invalidation is skipped",
			steps: []step{{0, "old", 0}, {0, "", 2 * time.Second}, {0, "stale", time.Second}},
		},
		{
			name:      "newer write after invalidation is stored",
			steps:     []step{{0, "old", 0}, {0, "", time.Second}, {0, "new", 2 * time.Second}},
			wantTools: []string{"new"}, wantAt: 2 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := &Options{Now: (&clock{now: base}).Now}
			caches := []*Cache{Open(dir, opts), Open(dir, opts)}
			for _, s := range tt.steps {
				var tools []*mcp.Tool
				if s.tools != "" {
					tools = named(s.tools)
				}
				if err := caches[s.cache].Put("docs", fp, tools, base.Add(s.at), nil); err != nil {
					t.Fatalf("Put(%q, +%v): %v", s.tools, s.at, err)
				}
			}
			tools, savedAt, ok := caches[0].Get("docs", fp)
			if diff := cmp.Diff(tt.wantTools, names(tools)); diff != "" {
				t.Errorf("Get tools mismatch (-want +got):\n%s", diff)
			}
			if ok && !savedAt.Equal(base.Add(tt.wantAt)) {
				t.Errorf("Get savedAt = +%v, want +%v", savedAt.Sub(base), tt.wantAt)
			}
		})
	}
}

func TestPutRaceNewerWins(t *testing.T) {
	c, rec := newCache(t)
	for i := range 50 {
		older := base.Add(time.Duration(2*i) * time.Second)
		newer := older.Add(time.Second)
		var errOld, errNew error
		var wg sync.WaitGroup
		wg.Go(func() { errOld = c.Put("docs", fp, named(fmt.Sprint("old", i)), older, nil) })
		wg.Go(func() { errNew = c.Put("docs", fp, named(fmt.Sprint("new", i)), newer, nil) })
		wg.Wait()
		if errOld != nil || errNew != nil {
			t.Fatalf("round %d: Put errors: %v, %v", i, errOld, errNew)
		}
		tools, savedAt, ok := c.Get("docs", fp)
		if diff := cmp.Diff([]string{fmt.Sprint("new", i)}, names(tools)); !ok || diff != "" {
			t.Fatalf("round %d: ok = %v, tools mismatch (-want +got):\n%s", i, ok, diff)
		}
		if !savedAt.Equal(newer) {
			t.Fatalf("round %d: savedAt = %v, want %v", i, savedAt, newer)
		}
	}
	if w := rec.warnings(); len(w) > 0 {
		t.Errorf("warnings: %q", w)
	}
}

func TestConcurrentGetPut(t *testing.T) {
	c, rec := newCache(t)
	servers := []string{"docs", "mail", "calendar"}
	for _, s := range servers {
		if err := c.Put(s, fp, named(s+"-0"), base, nil); err != nil {
			t.Fatal(err)
		}
	}
	var seq atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for range 20 {
				n := seq.Add(1)
				s := servers[int(n)%len(servers)]
				if err := c.Put(s, fp, named(fmt.Sprint(s, "-", n)), base.Add(time.Duration(n)*time.Second), nil); err != nil {
					t.Errorf("writer %d: Put: %v", w, err)
					return
				}
			}
		})
		wg.Go(func() {
			for i := range 50 {
				s := servers[(w+i)%len(servers)]
				tools, _, ok := c.Get(s, fp)
				if !ok || len(tools) != 1 || !strings.HasPrefix(tools[0].Name, s+"-") {
					t.Errorf("reader %d: Get(%q) = %v, %v; want one tool of %[2]q", w, s, names(tools), ok)
					return
				}
			}
		})
	}
	wg.Wait()
	if w := rec.warnings(); len(w) > 0 {
		t.Errorf("warnings: %q", w)
	}
	if got := dirEntries(t, c.Dir()); len(got) != len(servers) {
		t.Errorf("directory holds %q, want %d files", got, len(servers))
	}
}

func TestAtomicWrite(t *testing.T) {
	t.Run("no temporary files left", func(t *testing.T) {
		c, _ := newCache(t)
		for i := range 5 {
			if err := c.Put("docs", fp, named(fmt.Sprint("v", i)), base.Add(time.Duration(i)*time.Second), nil); err != nil {
				t.Fatal(err)
			}
		}
		want := []string{filepath.Base(c.path("docs"))}
		if diff := cmp.Diff(want, dirEntries(t, c.Dir())); diff != "" {
			t.Errorf("directory mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("failed rename keeps the old entry", func(t *testing.T) {
		c, _ := newCache(t)
		if err := c.Put("docs", fp, named("old"), base, nil); err != nil {
			t.Fatal(err)
		}
		errInjected := errors.New("injected")
		var tmpSeen string
		c.beforeRename = func(tmp string) error {
			tmpSeen = tmp
			return errInjected
		}
		err := c.Put("docs", fp, named("new"), base.Add(time.Second), nil)
		if !errors.Is(err, errInjected) {
			t.Errorf("Put error = %v, want %v", err, errInjected)
		}
		if err != nil && !strings.HasPrefix(err.Error(), `toolcache: put "docs": `) {
			t.Errorf("Put error = %q, want the op context", err)
		}
		if filepath.Dir(tmpSeen) != c.Dir() {
			t.Errorf("temporary file %q is not in %q", tmpSeen, c.Dir())
		}
		assertOnly(t, c, "old")

		// A failed write does not count as newer.
		c.beforeRename = nil
		if err := c.Put("docs", fp, named("retry"), base.Add(time.Second/2), nil); err != nil {
			t.Fatal(err)
		}
		assertOnly(t, c, "retry")
	})

	t.Run("read-only directory", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("directory permissions do not apply on Windows")
		}
		c, _ := newCache(t)
		if err := c.Put("docs", fp, named("old"), base, nil); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(c.Dir(), 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(c.Dir(), 0o700) })
		if f, err := os.CreateTemp(c.Dir(), "probe"); err == nil {
			f.Close()
			os.Remove(f.Name())
			t.Skip("the directory is still writable (running as root?)")
		}
		if err := c.Put("docs", fp, named("new"), base.Add(time.Second), nil); err == nil {
			t.Error("Put into a read-only directory: nil error, want one")
		}
		assertOnly(t, c, "old")
	})

	t.Run("unmarshalable tool", func(t *testing.T) {
		c, _ := newCache(t)
		tools := []*mcp.Tool{{Name: "bad", InputSchema: map[string]any{"x": make(chan int)}}}
		if err := c.Put("docs", fp, tools, base, nil); err == nil {
			t.Error("Put: nil error, want one")
		}
		if got := dirEntries(t, c.Dir()); len(got) != 0 {
			t.Errorf("directory holds %q, want nothing", got)
		}
	})
}

// assertOnly checks that the cache holds exactly the entry of server "docs"
// with the one tool name, and no other file.
func assertOnly(t *testing.T, c *Cache, name string) {
	t.Helper()
	tools, _, ok := c.Get("docs", fp)
	if diff := cmp.Diff([]string{name}, names(tools)); !ok || diff != "" {
		t.Errorf("Get: ok = %v, tools mismatch (-want +got):\n%s", ok, diff)
	}
	want := []string{filepath.Base(c.path("docs"))}
	if diff := cmp.Diff(want, dirEntries(t, c.Dir())); diff != "" {
		t.Errorf("directory mismatch (-want +got):\n%s", diff)
	}
}

func TestRedaction(t *testing.T) {
	// The secret has characters that JSON escapes, so string replacement
	// over raw JSON bytes would miss it.
	const secret = `zq<&>"xv-42`
	escaped, err := json.Marshal(secret)
	if err != nil {
		t.Fatal(err)
	}
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED]") }

	tools := []*mcp.Tool{{
		Meta:        mcp.Meta{"auth": "Bearer " + secret, "key-" + secret: true},
		Name:        "fetch",
		Title:       "Fetch as " + secret,
		Description: "Uses the token " + secret + " for calls.",
		Annotations: &mcp.ToolAnnotations{Title: secret},
		InputSchema: json.RawMessage(`{"type": "object", "maximum": 9007199254740993, "properties": {"token": {"type": "string", "default": ` +
			string(escaped) + `, "enum": ["a", ` + string(escaped) + `]}}}`),
		Icons: []mcp.Icon{{Source: "https://example.invalid/i.png?t=" + secret}},
	}}
	c, _ := newCache(t)
	if err := c.Put("api", fp, tools, base, redact); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(c.path("api"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secret, string(escaped[1 : len(escaped)-1]), "zq", "xv-42"} {
		if strings.Contains(string(b), s) {
			t.Errorf("the file contains %q:\n%s", s, b)
		}
	}
	if !strings.Contains(string(b), "9007199254740993") {
		t.Errorf("the file lost the precision of a number:\n%s", b)
	}

	got, _, ok := c.Get("api", fp)
	if !ok {
		t.Fatal("Get: miss, want hit")
	}
	want := []*mcp.Tool{{
		Meta:        mcp.Meta{"auth": "Bearer [REDACTED]", "key-[REDACTED]": true},
		Name:        "fetch",
		Title:       "Fetch as [REDACTED]",
		Description: "Uses the token [REDACTED] for calls.",
		Annotations: &mcp.ToolAnnotations{Title: "[REDACTED]"},
		InputSchema: map[string]any{
			"type":    "object",
			"maximum": float64(9007199254740993),
			"properties": map[string]any{
				"token": map[string]any{"type": "string", "default": "[REDACTED]", "enum": []any{"a", "[REDACTED]"}},
			},
		},
		Icons: []mcp.Icon{{Source: "https://example.invalid/i.png?t=[REDACTED]"}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get mismatch (-want +got):\n%s", diff)
	}

	// Redaction works on copies: the caller's tools are unchanged.
	if !strings.Contains(tools[0].Description, secret) {
		t.Errorf("Put changed the caller's tool: %q", tools[0].Description)
	}
}

var fileName = regexp.MustCompile(`^[0-9a-f]{64}\.json$`)

func TestFileNames(t *testing.T) {
	servers := []string{"a/b", "..", ".", "ñ", "", "../../escape", `a\b`, "a\x00b", "CON", strings.Repeat("x", 1000)}
	root := t.TempDir()
	c := Open(filepath.Join(root, "tools"), &Options{Now: (&clock{now: base}).Now})
	for i, s := range servers {
		if err := c.Put(s, fp, named(fmt.Sprint("tool", i)), base, nil); err != nil {
			t.Fatalf("Put(%q): %v", s, err)
		}
	}
	for i, s := range servers {
		tools, _, ok := c.Get(s, fp)
		if diff := cmp.Diff([]string{fmt.Sprint("tool", i)}, names(tools)); !ok || diff != "" {
			t.Errorf("Get(%q): ok = %v, tools mismatch (-want +got):\n%s", s, ok, diff)
		}
	}
	if diff := cmp.Diff([]string{"tools"}, dirEntries(t, root)); diff != "" {
		t.Errorf("parent directory mismatch (-want +got):\n%s", diff)
	}
	got := dirEntries(t, c.Dir())
	if len(got) != len(servers) {
		t.Errorf("directory holds %d files, want %d: %q", len(got), len(servers), got)
	}
	for _, name := range got {
		if !fileName.MatchString(name) {
			t.Errorf("file name %q is not a hex SHA-256 plus .json", name)
		}
	}
}

func TestPermissions(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix permissions")
	}
	root := t.TempDir()
	c := Open(filepath.Join(root, "cache", "switchboard", "tools"), nil)
	if err := c.Put("docs", fp, named("a"), base, nil); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path string
		want os.FileMode
	}{
		{filepath.Join(root, "cache"), 0o700},
		{filepath.Join(root, "cache", "switchboard"), 0o700},
		{c.Dir(), 0o700},
		{c.path("docs"), 0o600},
	} {
		fi, err := os.Stat(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != tt.want {
			t.Errorf("mode of %s = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestRemove(t *testing.T) {
	c, _ := newCache(t)
	if err := c.Remove("docs"); err != nil {
		t.Errorf("Remove of a missing entry: %v", err)
	}
	if err := c.Put("docs", fp, named("a"), base, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Put("mail", fp, named("b"), base, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove("docs"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, _, ok := c.Get("docs", fp); ok {
		t.Error("Get(docs) after Remove: hit, want miss")
	}
	if _, _, ok := c.Get("mail", fp); !ok {
		t.Error("Get(mail) after Remove(docs): miss, want hit")
	}
	if err := c.Put("docs", fp, named("c"), base.Add(time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := c.Get("docs", fp); !ok {
		t.Error("Get(docs) after a newer Put: miss, want hit")
	}
}

func TestZeroFetchedAtMeansNow(t *testing.T) {
	c, _ := newCache(t)
	if err := c.Put("docs", fp, named("a"), time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	_, savedAt, ok := c.Get("docs", fp)
	if !ok || !savedAt.Equal(base) {
		t.Errorf("Get = %v, %v; want %v, true", savedAt, ok, base)
	}
}

func TestNoop(t *testing.T) {
	check := func(t *testing.T, c *Cache) {
		t.Helper()
		if got := c.Dir(); got != "" {
			t.Errorf("Dir() = %q, want \"\"", got)
		}
		if err := c.Put("docs", fp, named("a"), base, nil); err != nil {
			t.Errorf("Put: %v", err)
		}
		if err := c.Put("docs", fp, nil, base, nil); err != nil {
			t.Errorf("Put empty: %v", err)
		}
		if tools, savedAt, ok := c.Get("docs", fp); ok || tools != nil || !savedAt.IsZero() {
			t.Errorf("Get = %v, %v, %v; want a miss", tools, savedAt, ok)
		}
		if err := c.Remove("docs"); err != nil {
			t.Errorf("Remove: %v", err)
		}
	}
	t.Run("nil cache", func(t *testing.T) {
		check(t, nil)
	})
	t.Run("no user cache dir", func(t *testing.T) {
		noHome(t)
		if got := DefaultDir(); got != "" {
			t.Fatalf("DefaultDir() = %q, want \"\"", got)
		}
		check(t, Open("", nil))
	})
}

func TestDefaultDir(t *testing.T) {
	home := t.TempDir()
	noHome(t)
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	t.Setenv("LocalAppData", filepath.Join(home, "AppData"))
	base, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(base, home) {
		t.Fatalf("os.UserCacheDir() = %q, outside the test's home %q", base, home)
	}
	want := filepath.Join(base, "switchboard", "tools")
	if got := DefaultDir(); got != want {
		t.Errorf("DefaultDir() = %q, want %q", got, want)
	}
	if got := Open("", nil).Dir(); got != want {
		t.Errorf("Open(\"\").Dir() = %q, want %q", got, want)
	}
}

// noHome clears the variables os.UserCacheDir reads, for the test's
// duration.
func noHome(t *testing.T) {
	t.Helper()
	for _, v := range []string{"HOME", "XDG_CACHE_HOME", "LocalAppData", "home"} {
		t.Setenv(v, "")
	}
}

// TestNotes: the notes of a server (a report of stdout noise, a failure)
// are kept in its entry for that fingerprint, whether the entry was
// written before them or after, with its tools; a list of tools keeps the
// noise and drops the failure; a new config starts afresh; a failure older
// than the time to live is forgotten.
func TestNotes(t *testing.T) {
	const other = "0000000000000000000000000000000000000000000000000000000000000000"
	c, _ := newCache(t)
	notes := func(fingerprint string) Notes { return c.Notes("docs", fingerprint) }
	if diff := cmp.Diff(Notes{}, notes(fp)); diff != "" {
		t.Fatalf("Notes with no entry (-want +got):\n%s", diff)
	}

	// Before the first list: an entry without tools, which Get misses.
	if err := c.ReportNoise("docs", fp); err != nil {
		t.Fatal(err)
	}
	if err := c.ReportFailure("docs", fp, "connect: command not found", base); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Notes{StdoutNoise: true, Failure: "connect: command not found", FailedAt: base.UTC()}, notes(fp)); diff != "" {
		t.Errorf("Notes before a list (-want +got):\n%s", diff)
	}
	if _, _, ok := c.Get("docs", fp); ok {
		t.Error("Get of an entry with notes and no tools: a hit")
	}
	if diff := cmp.Diff(Notes{}, notes(other)); diff != "" {
		t.Errorf("Notes of another config (-want +got):\n%s", diff)
	}

	// A list keeps the noise, and drops the failure.
	if err := c.Put("docs", fp, sampleTools(), base, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Notes{StdoutNoise: true}, notes(fp)); diff != "" {
		t.Errorf("Notes after a list (-want +got):\n%s", diff)
	}
	// A note after the list keeps the tools.
	if err := Open(c.Dir(), nil).ReportFailure("docs", fp, "lost", base.Add(time.Minute)); err != nil { // another process
		t.Fatal(err)
	}
	if tools, _, ok := c.Get("docs", fp); !ok || len(tools) != len(sampleTools()) || notes(fp).Failure != "lost" {
		t.Errorf("after a note: tools %v (%v), notes %+v; want the tools kept, and the failure", names(tools), ok, notes(fp))
	}

	// A new config starts afresh.
	if err := c.Put("docs", other, named("c"), base.Add(2*time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Notes{}, notes(other)); diff != "" {
		t.Errorf("Notes of a new config's entry (-want +got):\n%s", diff)
	}

	// A failure is forgotten after the time to live.
	if err := c.ReportFailure("docs", other, "timed out", base.Add(-DefaultTTL)); err != nil {
		t.Fatal(err)
	}
	if got := notes(other); got.Failure != "" {
		t.Errorf("a failure older than the time to live: %+v", got)
	}
}
