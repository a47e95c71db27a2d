package pins

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var pinnedAt = time.Date(2026, 11, 28, 22, 30, 0, 0, time.UTC)

func TestLoadMissingIsEmpty(t *testing.T) {
	f, err := Load(filepath.Join(t.TempDir(), "pins.json"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(New(), f, cmpopts.IgnoreUnexported(File{})); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "pins.json")
	f := New()
	if err := f.Set("github", sampleTool(), pinnedAt.Add(123*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("memory", &mcp.Tool{Name: "read", InputSchema: map[string]any{"type": "object"}}, pinnedAt); err != nil {
		t.Fatal(err)
	}
	if err := Save(path, f); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{
  "version": 1,
  "servers": {
    "github": {
      "tools": {
        "create_issue": {
          "definition": {
            "name": "create_issue",
            "title": "Create issue",
            "description": "Create an issue in a repository.",
            "inputSchema": {
              "properties": {
                "repo": {
                  "type": "string"
                },
                "title": {
                  "type": "string"
                }
              },
              "required": [
                "repo"
              ],
              "type": "object"
            },
            "annotations": {
              "readOnlyHint": false,
              "destructiveHint": false,
              "idempotentHint": false
            }
          },
          "pin": "378db5b0e9256c4eaf7a9cb2fc9f8c69295574728789d15582c41a4bed45ede0",
          "pinnedAt": "2026-11-28T22:30:00Z"
        }
      }
    },
    "memory": {
      "tools": {
        "read": {
          "definition": {
            "name": "read",
            "inputSchema": {
              "type": "object"
            }
          },
          "pin": "%s",
          "pinnedAt": "2026-11-28T22:30:00Z"
        }
      }
    }
  }
}
`
	readPin, _ := Pin(&mcp.Tool{Name: "read", InputSchema: map[string]any{"type": "object"}})
	if diff := cmp.Diff(fmt.Sprintf(want, readPin), string(b)); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("mode = %v, %v; want 0600", fi.Mode().Perm(), err)
		}
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f, got, cmpopts.IgnoreUnexported(File{})); diff != "" {
		t.Errorf("Load after Save (-want +got):\n%s", diff)
	}
	// The kept definition gives the kept pin.
	e, ok := got.Lookup("github", "create_issue")
	if p, err := e.Definition.Pin(); !ok || err != nil || p != e.Pin {
		t.Errorf("Lookup = %v; definition's pin %s, %v, want %s", ok, p, err, e.Pin)
	}
	if _, ok := got.Lookup("github", "nope"); ok {
		t.Error("Lookup of an unknown tool found it")
	}
}

func TestSetOverLimitsLeavesFile(t *testing.T) {
	f := New()
	err := f.Set("srv", &mcp.Tool{Name: "deep", InputSchema: nested(1000)}, pinnedAt)
	if !errors.Is(err, ErrTooDeep) || !strings.Contains(err.Error(), `server "srv"`) || !strings.Contains(err.Error(), `tool "deep"`) {
		t.Errorf("Set err = %v, want ErrTooDeep naming server and tool", err)
	}
	if len(f.Servers) != 0 {
		t.Errorf("Set of a tool over the limits changed the file: %v", f.Servers)
	}
}

func TestLoadBad(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          error
	}{
		{"not JSON", "{not json", ErrCorrupt},
		{"truncated", `{"version": 1, "servers": {"a": {"tools": {`, ErrCorrupt},
		{"no version", `{"servers": {}}`, ErrCorrupt},
		{"version 0", `{"version": 0}`, ErrCorrupt},
		{"wrong shape", `{"version": 1, "servers": []}`, ErrCorrupt},
		{"null server", `{"version": 1, "servers": {"a": null}}`, ErrCorrupt},
		{"bad pin", `{"version": 1, "servers": {"a": {"tools": {"t": {"pin": "xyz"}}}}}`, ErrCorrupt},
		{"newer", `{"version": 2, "servers": {"a": {"future": true}}}`, ErrNewerVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pins.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("Load err = %v, want %v naming %s", err, tc.want, path)
			}
			// Update refuses it, and leaves it as it was.
			called := false
			err = Update(path, func(*File) error { called = true; return nil })
			if !errors.Is(err, tc.want) || called {
				t.Errorf("Update err = %v, fn called %v; want %v and not called", err, called, tc.want)
			}
			if b, _ := os.ReadFile(path); string(b) != tc.content {
				t.Errorf("file after Update = %q, want it unchanged", b)
			}
		})
	}
}

func TestLoadUnreadable(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("needs a file mode that stops its owner reading")
	}
	path := filepath.Join(t.TempDir(), "pins.json")
	if err := os.WriteFile(path, []byte(`{"version":1}`), 0o000); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), path) {
		t.Errorf("Load err = %v, want a permission error naming %s", err, path)
	}
}

// TestSaveKeepsBackup: a file that is not a pins file of this version is
// kept before Save replaces it; a good one is replaced without a backup.
func TestSaveKeepsBackup(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		backup        bool
	}{
		{"corrupt", "{not json", true},
		{"newer", `{"version": 2}`, true},
		{"good", `{"version": 1, "servers": {}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "pins.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			for range 2 { // the second Save finds a good file: one backup only
				if err := Save(path, New()); err != nil {
					t.Fatal(err)
				}
			}
			baks, _ := filepath.Glob(path + ".bak-*")
			if !tc.backup {
				if len(baks) != 0 {
					t.Errorf("backups %v of a good file", baks)
				}
				return
			}
			if len(baks) != 1 {
				t.Fatalf("backups = %v, want one", baks)
			}
			if b, _ := os.ReadFile(baks[0]); string(b) != tc.content {
				t.Errorf("backup holds %q, want %q", b, tc.content)
			}
			if _, err := Load(path); err != nil {
				t.Errorf("Load after Save: %v", err)
			}
		})
	}
}

// TestSaveAtomic: a write that fails leaves the old file as it was, and no
// temporary file behind.
func TestSaveAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pins.json")
	old := New()
	if err := old.Set("a", sampleTool(), pinnedAt); err != nil {
		t.Fatal(err)
	}
	if err := Save(path, old); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	errDisk := errors.New("disk full")
	prepareHook = func(tmp string) error {
		// Half a file is written, then the write fails.
		if err := os.WriteFile(tmp, before[:len(before)/2], 0o600); err != nil {
			return err
		}
		return errDisk
	}
	defer func() { prepareHook = nil }()
	err := Save(path, New())
	if !errors.Is(err, errDisk) || !strings.Contains(err.Error(), path) {
		t.Errorf("Save err = %v, want %v naming %s", err, errDisk, path)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("file after a failed Save:\n%s\nwant\n%s", after, before)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if n := e.Name(); n != "pins.json" && n != "pins.json.lock" {
			t.Errorf("left behind: %s", n)
		}
	}
}

// TestUpdateConcurrent: updates from many goroutines, each on its own lock
// file handle as separate processes would be, all land.
func TestUpdateConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pins.json")
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = Update(path, func(f *File) error {
				return f.Set(fmt.Sprintf("server%d", i), sampleTool(), pinnedAt)
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Update %d: %v", i, err)
		}
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Servers) != n {
		t.Errorf("servers = %d, want %d", len(f.Servers), n)
	}
}

func TestUpdateErrorLeavesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pins.json")
	if err := Update(path, func(f *File) error { return f.Set("a", sampleTool(), pinnedAt) }); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	errStop := errors.New("stop")
	err := Update(path, func(f *File) error {
		delete(f.Servers, "a")
		return errStop
	})
	if !errors.Is(err, errStop) {
		t.Errorf("Update err = %v, want %v", err, errStop)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("a failed Update changed the file")
	}
}

// TestParseSaysWhereAndWhat: a file edited by hand that is not JSON, or not
// of the shape, is an error that says where, in JSON's words; a pin that
// is not its definition's is corrupt.
func TestParseSaysWhereAndWhat(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"{\n  \"version\": 1,\n  \"servers\": {,}\n}", "line 3, column 15: invalid character ','"},
		{`{"version": "1"}`, `line 1, column 16: version: want a number, not a JSON string`},
		{`{"version": 1, "servers": {"s": {"tools": []}}}`, `servers.tools: want an object, not a JSON array`},
	} {
		_, err := Parse("pins.json", []byte(tc.in))
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "Go struct") {
			t.Errorf("%s: %v, want ErrCorrupt saying %q", tc.in, err, tc.want)
		}
	}
	f := New()
	if err := f.Set("s", &mcp.Tool{Name: "t", Description: "honest"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	f.Servers["s"].Tools["t"] = Entry{Definition: Definition{Name: "t", Description: "honest"}, Pin: strings.Repeat("0", 64)}
	b, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("pins.json", b); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `tool "t": the pin is not the definition's`) {
		t.Errorf("a pin edited by hand: %v", err)
	}
}
