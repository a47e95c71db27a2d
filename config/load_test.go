package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// env returns a LookupEnv over m.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func write(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// summary describes a Config in a form that is easy to compare.
type summary struct {
	Servers  []string // name=command or url @source
	Rejected []string // name@source
	Files    []string
}

func summarize(c *Config) summary {
	var s summary
	for _, srv := range c.Servers {
		s.Servers = append(s.Servers, srv.Name+"="+srv.Command+srv.URL+"@"+filepath.Base(srv.Source))
	}
	for _, r := range c.Rejected {
		s.Rejected = append(s.Rejected, r.Name+"@"+filepath.Base(r.Source))
	}
	for _, f := range c.Files {
		s.Files = append(s.Files, filepath.Base(f))
	}
	return s
}

func TestLoadDiscovery(t *testing.T) {
	const (
		user    = `{"mcpServers": {"shared": {"command": "user"}, "u": {"command": "u"}, "bad": {"type": "sse"}}}`
		project = `// project
		{"mcpServers": {"p": {"command": "p"}, "shared": {"url": "https://project/mcp"}, "bad": {"command": "fixed"},}}`
	)
	tests := []struct {
		name    string
		files   map[string]string // relative to a temporary root
		env     map[string]string // "ROOT" in values is the root
		exe     string
		want    summary
		wantErr string
	}{
		{
			name:  "user and project",
			files: map[string]string{"home/.config/switchboard/mcp.json": user, "work/.mcp.json": project},
			env:   map[string]string{"HOME": "ROOT/home"},
			want: summary{
				Servers: []string{"shared=https://project/mcp@.mcp.json", "u=u@mcp.json", "bad=fixed@.mcp.json", "p=p@.mcp.json"},
				Files:   []string{"mcp.json", ".mcp.json"},
			},
		},
		{
			name:  "xdg config home wins over home",
			files: map[string]string{"xdg/switchboard/mcp.json": `{"mcpServers": {"x": {"command": "xdg"}}}`, "home/.config/switchboard/mcp.json": user},
			env:   map[string]string{"HOME": "ROOT/home", "XDG_CONFIG_HOME": "ROOT/xdg"},
			want:  summary{Servers: []string{"x=xdg@mcp.json"}, Files: []string{"mcp.json"}},
		},
		{
			name:  "windows: no HOME, but USERPROFILE",
			files: map[string]string{"profile/.config/switchboard/mcp.json": `{"mcpServers": {"w": {"command": "win"}}}`},
			env:   map[string]string{"USERPROFILE": "ROOT/profile"},
			want:  summary{Servers: []string{"w=win@mcp.json"}, Files: []string{"mcp.json"}},
		},
		{
			name:  "HOME wins over USERPROFILE",
			files: map[string]string{"home/.config/switchboard/mcp.json": `{"mcpServers": {"h": {"command": "home"}}}`, "profile/.config/switchboard/mcp.json": `{"mcpServers": {"w": {"command": "win"}}}`},
			env:   map[string]string{"HOME": "ROOT/home", "USERPROFILE": "ROOT/profile"},
			want:  summary{Servers: []string{"h=home@mcp.json"}, Files: []string{"mcp.json"}},
		},
		{
			name:  "relative xdg config home is ignored",
			files: map[string]string{"home/.config/switchboard/mcp.json": `{"mcpServers": {"h": {"command": "home"}}}`},
			env:   map[string]string{"HOME": "ROOT/home", "XDG_CONFIG_HOME": "relative"},
			want:  summary{Servers: []string{"h=home@mcp.json"}, Files: []string{"mcp.json"}},
		},
		{
			name:  "user only, rejected kept",
			files: map[string]string{"home/.config/switchboard/mcp.json": user},
			env:   map[string]string{"HOME": "ROOT/home"},
			want:  summary{Servers: []string{"shared=user@mcp.json", "u=u@mcp.json"}, Rejected: []string{"bad@mcp.json"}, Files: []string{"mcp.json"}},
		},
		{
			name:  "project only, no home",
			files: map[string]string{"work/.mcp.json": project},
			env:   map[string]string{},
			want:  summary{Servers: []string{"p=p@.mcp.json", "shared=https://project/mcp@.mcp.json", "bad=fixed@.mcp.json"}, Files: []string{".mcp.json"}},
		},
		{
			name:  "valid user entry overridden by an invalid project entry",
			files: map[string]string{"home/.config/switchboard/mcp.json": user, "work/.mcp.json": `{"mcpServers": {"u": {"command": 1}}}`},
			env:   map[string]string{"HOME": "ROOT/home"},
			want:  summary{Servers: []string{"shared=user@mcp.json"}, Rejected: []string{"u@.mcp.json", "bad@mcp.json"}, Files: []string{"mcp.json", ".mcp.json"}},
		},
		{
			name: "no file gives the default",
			env:  map[string]string{"HOME": "ROOT/home"},
			exe:  "/opt/bin/switchboard",
			want: summary{Servers: []string{"clock=/opt/bin/switchboard@<embedded>", "notes=/opt/bin/switchboard@<embedded>"}, Files: []string{EmbeddedSource}},
		},
		{
			name: "default without executable",
			env:  map[string]string{},
			want: summary{Servers: []string{"clock=switchboard@<embedded>", "notes=switchboard@<embedded>"}, Files: []string{EmbeddedSource}},
		},
		{
			name:    "a broken file is still a file",
			files:   map[string]string{"work/.mcp.json": `{"mcpServers": {`},
			env:     map[string]string{"HOME": "ROOT/home"},
			want:    summary{Files: []string{".mcp.json"}},
			wantErr: "ROOT/work/.mcp.json:1:17: parsing value: unexpected EOF",
		},
		{
			name:    "a broken project file keeps the user file",
			files:   map[string]string{"home/.config/switchboard/mcp.json": user, "work/.mcp.json": `{"mcpServers": {}, "servers": {}}`},
			env:     map[string]string{"HOME": "ROOT/home"},
			want:    summary{Servers: []string{"shared=user@mcp.json", "u=u@mcp.json"}, Rejected: []string{"bad@mcp.json"}, Files: []string{"mcp.json", ".mcp.json"}},
			wantErr: `ROOT/work/.mcp.json: both "mcpServers" and "servers" are set; want one`,
		},
		{
			// A repository's file must not stop every verb: it is
			// ignored, with a warning (see TestLoadSpecialFiles).
			name:  "an unreadable discovery file is ignored",
			files: map[string]string{"work/.mcp.json/x": "", "cfg/switchboard/mcp.json": user},
			env:   map[string]string{"XDG_CONFIG_HOME": "ROOT/cfg"},
			want: summary{
				Servers:  []string{"shared=user@mcp.json", "u=u@mcp.json"},
				Rejected: []string{"bad@mcp.json"},
				Files:    []string{"mcp.json"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for name, data := range tt.files {
				write(t, filepath.Join(root, name), data)
			}
			e := map[string]string{}
			for k, v := range tt.env {
				e[k] = strings.ReplaceAll(v, "ROOT", root)
			}
			work := filepath.Join(root, "work")
			cfg, err := Load(&LoadOptions{Dir: work, LookupEnv: env(e), Executable: tt.exe, Trust: trusting(t, filepath.Join(work, ProjectFile))})
			if got := strings.ReplaceAll(errString(err), root, "ROOT"); got != tt.wantErr {
				t.Errorf("Load error = %q, want %q", got, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, summarize(cfg)); diff != "" {
				t.Errorf("Load (-want +got):\n%s", diff)
			}
		})
	}
}

// trusting returns a trust store in a new temporary directory that trusts
// the file at path as it is, if there is one: the content need not parse.
func trusting(t *testing.T, path string) *TrustStore {
	t.Helper()
	s := &TrustStore{File: filepath.Join(t.TempDir(), "trust.json")}
	data, err := os.ReadFile(path)
	if err != nil {
		return s
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.write(&trustFile{Files: map[string]trustRecord{abs: {SHA256: hash(data)}}}); err != nil {
		t.Fatal(err)
	}
	return s
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestLoadDefaultDir(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers": {"here": {"command": "x"}}}`)
	t.Chdir(dir)
	cfg, err := Load(&LoadOptions{LookupEnv: env(nil), Trust: trusting(t, ".mcp.json")})
	if err != nil {
		t.Fatal(err)
	}
	want := summary{Servers: []string{"here=x@.mcp.json"}, Files: []string{".mcp.json"}}
	if diff := cmp.Diff(want, summarize(cfg)); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
}

func TestLoadPaths(t *testing.T) {
	dir := t.TempDir()
	a := write(t, filepath.Join(dir, "a.json"), `{"mcpServers": {"one": {"command": "a1", "env": {"K": "v"}}, "two": {"command": "a2"}, "bad": {}}}`)
	b := write(t, filepath.Join(dir, "b.jsonc"), `{"servers": {"three": {"command": "b3"}, "one": {"command": "b1"}, /* fixes */ "bad": {"command": "ok"}}}`)
	c := write(t, filepath.Join(dir, "c.json"), `{"mcpServers": {"two": {"type": "nope"}}}`)
	broken := write(t, filepath.Join(dir, "broken.json"), `{"mcpServers": {"x": {"command": "x"}} trailing`)
	missing := filepath.Join(dir, "missing.json")
	// A project file that explicit paths must not read.
	write(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers": {"project": {"command": "p"}}}`)

	tests := []struct {
		name    string
		paths   []string
		want    summary
		wantErr []string
	}{
		{"one", []string{a}, summary{Servers: []string{"one=a1@a.json", "two=a2@a.json"}, Rejected: []string{"bad@a.json"}, Files: []string{"a.json"}}, nil},
		{"override in place", []string{a, b}, summary{Servers: []string{"one=b1@b.jsonc", "two=a2@a.json", "bad=ok@b.jsonc", "three=b3@b.jsonc"}, Files: []string{"a.json", "b.jsonc"}}, nil},
		{"other order", []string{b, a}, summary{Servers: []string{"three=b3@b.jsonc", "one=a1@a.json", "two=a2@a.json"}, Rejected: []string{"bad@a.json"}, Files: []string{"b.jsonc", "a.json"}}, nil},
		{"valid then invalid", []string{a, b, c}, summary{Servers: []string{"one=b1@b.jsonc", "bad=ok@b.jsonc", "three=b3@b.jsonc"}, Rejected: []string{"two@c.json"}, Files: []string{"a.json", "b.jsonc", "c.json"}}, nil},
		{"missing", []string{a, missing, b}, summary{Servers: []string{"one=b1@b.jsonc", "two=a2@a.json", "bad=ok@b.jsonc", "three=b3@b.jsonc"}, Files: []string{"a.json", "b.jsonc"}},
			[]string{"DIR/missing.json: read: no such file or directory"}},
		{"only missing", []string{missing}, summary{}, []string{"DIR/missing.json: read: no such file or directory"}},
		{"broken", []string{broken, a, missing}, summary{Servers: []string{"one=a1@a.json", "two=a2@a.json"}, Rejected: []string{"bad@a.json"}, Files: []string{"broken.json", "a.json"}},
			[]string{"DIR/broken.json:1:40: invalid character 't' after object value (expecting ',' or '}')", "DIR/missing.json: read: no such file or directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(&LoadOptions{Paths: tt.paths, Dir: dir, LookupEnv: env(nil)})
			var got []string
			for _, m := range messages(err) {
				got = append(got, strings.ReplaceAll(m, dir, "DIR"))
			}
			if diff := cmp.Diff(tt.wantErr, got); diff != "" {
				t.Errorf("Load errors (-want +got):\n%s", diff)
			}
			if err != nil && !allErrorsAre(err) {
				t.Errorf("Load errors are not all *Error: %#v", err)
			}
			if diff := cmp.Diff(tt.want, summarize(cfg)); diff != "" {
				t.Errorf("Load (-want +got):\n%s", diff)
			}
		})
	}

	_, err := Load(&LoadOptions{Paths: []string{missing}, LookupEnv: env(nil)})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want fs.ErrNotExist", err)
	}
}

func TestLoadTimeoutEnv(t *testing.T) {
	dir := t.TempDir()
	path := write(t, filepath.Join(dir, "a.json"), `{"mcpServers": {"set": {"command": "x", "timeout": 5000}, "unset": {"command": "y"}}}`)
	const warn = "SWITCHBOARD_TIMEOUT_MS: invalid value %q (want a non-negative whole number of milliseconds); ignored"
	tests := []struct {
		name  string
		env   map[string]string
		want  []*int64
		warns []string
	}{
		{"unset", nil, []*int64{ptr[int64](5000), nil}, nil},
		{"empty", map[string]string{TimeoutEnv: ""}, []*int64{ptr[int64](5000), nil}, nil},
		{"override", map[string]string{TimeoutEnv: "1200"}, []*int64{ptr[int64](1200), ptr[int64](1200)}, nil},
		{"zero disables", map[string]string{TimeoutEnv: "0"}, []*int64{ptr[int64](0), ptr[int64](0)}, nil},
		{"largest", map[string]string{TimeoutEnv: "9223372036854"}, []*int64{ptr[int64](9223372036854), ptr[int64](9223372036854)}, nil},
	}
	for _, bad := range []string{"abc", "-1", "1.5", "1e3", "+5", " 5", "5ms", "9223372036855", "99999999999999999999"} {
		tests = append(tests, struct {
			name  string
			env   map[string]string
			want  []*int64
			warns []string
		}{"invalid " + bad, map[string]string{TimeoutEnv: bad}, []*int64{ptr[int64](5000), nil}, []string{strings.Replace(warn, "%q", `"`+bad+`"`, 1)}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(&LoadOptions{Paths: []string{path}, LookupEnv: env(tt.env)})
			if err != nil {
				t.Fatal(err)
			}
			var got []*int64
			for _, s := range cfg.Servers {
				got = append(got, s.Timeout)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("timeouts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.warns, errorStrings(cfg.Warnings)); diff != "" {
				t.Errorf("Warnings (-want +got):\n%s", diff)
			}
		})
	}

	// The override applies to the embedded default too, and each server
	// gets its own value.
	cfg, err := Load(&LoadOptions{Dir: dir, LookupEnv: env(map[string]string{TimeoutEnv: "7"})})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 2 || cfg.Servers[0].TimeoutDuration().Milliseconds() != 7 || cfg.Servers[0].Timeout == cfg.Servers[1].Timeout {
		t.Errorf("default servers = %+v, want timeouts of 7ms each", cfg.Servers)
	}
}

func TestLoadNilOptions(t *testing.T) {
	// Discovery from the real environment: only check that it works.
	t.Chdir(t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv(TimeoutEnv, "")
	cfg, err := Load(nil)
	if err != nil || cfg == nil || len(cfg.Servers) != 2 {
		t.Errorf("Load(nil) = %+v, %v, want the default", cfg, err)
	}
}

func TestDefault(t *testing.T) {
	cfg := Default("")
	want := []Server{
		{Name: "clock", Source: EmbeddedSource, Type: Stdio, Command: "switchboard", Args: []string{"demo-server", "--name", "clock"},
			Tools: ToolFilter{Allow: []string{"now", "echo"}}},
		{Name: "notes", Source: EmbeddedSource, Type: Stdio, Command: "switchboard", Args: []string{"demo-server", "--name", "notes"},
			Tools: ToolFilter{Allow: []string{"note_*"}}},
	}
	if diff := cmp.Diff(want, cfg.Servers); diff != "" {
		t.Errorf("Default servers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{EmbeddedSource}, cfg.Files); diff != "" {
		t.Errorf("Default files (-want +got):\n%s", diff)
	}
	if got := Default("/bin/sb").Servers[1].Command; got != "/bin/sb" {
		t.Errorf("Default(/bin/sb) command = %q", got)
	}
	// Each call returns its own copy.
	Default("").Servers[0].Args[0] = "changed"
	if got := Default("").Servers[0].Args[0]; got != "demo-server" {
		t.Errorf("Default shares state: args[0] = %q", got)
	}
}

func TestLookup(t *testing.T) {
	cfg := Default("")
	s, ok := cfg.Lookup("notes")
	if !ok || s.Name != "notes" {
		t.Fatalf("Lookup(notes) = %+v, %v", s, ok)
	}
	s.Args[0] = "changed"
	if cfg.Servers[1].Args[0] != "demo-server" {
		t.Error("Lookup returned shared state")
	}
	if _, ok := cfg.Lookup("nope"); ok {
		t.Error("Lookup(nope) found something")
	}
}
