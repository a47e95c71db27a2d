package config

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolve(t *testing.T) {
	vars := env(map[string]string{
		"TOKEN": "tok-1234567",
		"HOST":  "example.invalid",
		"EMPTY": "",
		"ON":    "1",
		"PATH_": "/srv/data",
	})
	tests := []struct {
		name    string
		s       Server
		want    Server
		secrets int
		wantErr []string
	}{
		{
			name: "all syntaxes",
			s: Server{Name: "s", Command: "x",
				Args: []string{"--root=${PATH_}", "${env:PATH_}", "${MISSING:-fallback}", "${EMPTY:-was empty}", "${EMPTY}", "plain $HOME ${ON}", "${TOKEN}${TOKEN}"},
				Env:  map[string]string{"A": "${TOKEN}", "B": "${MISSING:-}", "C": "literal"}},
			want: Server{Name: "s", Command: "x",
				Args: []string{"--root=/srv/data", "/srv/data", "fallback", "was empty", "", "plain $HOME 1", "tok-1234567tok-1234567"},
				Env:  map[string]string{"A": "tok-1234567", "B": "", "C": "literal"}},
			secrets: 2, // "1" is too short to track
		},
		{
			name:    "url and headers",
			s:       Server{Name: "h", Type: HTTP, URL: "https://${HOST}/mcp?k=${env:TOKEN}", Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}, Cwd: "${NOT_SUBSTITUTED}", Command: "${NOT_SUBSTITUTED}"},
			want:    Server{Name: "h", Type: HTTP, URL: "https://example.invalid/mcp?k=tok-1234567", Headers: map[string]string{"Authorization": "Bearer tok-1234567"}, Cwd: "${NOT_SUBSTITUTED}", Command: "${NOT_SUBSTITUTED}"},
			secrets: 2,
		},
		{
			name:    "unset variables",
			s:       Server{Name: "u", Source: "f.json", URL: "${MISSING_URL}", Headers: map[string]string{"X": "${TOKEN} ${MISSING_H}"}, Args: []string{"${A}", "ok", "${B:-b} ${C}"}},
			wantErr: []string{`f.json: server "u": args[0]: environment variable A is not set`, `f.json: server "u": args[2]: environment variable C is not set`, `f.json: server "u": url: environment variable MISSING_URL is not set`, `f.json: server "u": headers.X: environment variable MISSING_H is not set`},
			secrets: 1,
		},
		{
			name:    "malformed template",
			s:       Server{Name: "m", Env: map[string]string{"A": "${TOKEN", "B": "${1}"}},
			wantErr: []string{`server "m": env.A: unterminated ${ (want ${NAME})`, `server "m": env.B: invalid variable name in ${...} (want letters, digits and _, not starting with a digit)`},
		},
		{
			name:    "url not absolute after substitution",
			s:       Server{Name: "r", URL: "${PATH_}"},
			wantErr: []string{`server "r": url: want an absolute http or https URL after substitution`},
			secrets: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := tt.s.Clone()
			got, secrets, err := tt.s.Resolve(vars)
			if diff := cmp.Diff(tt.wantErr, messages(err)); diff != "" {
				t.Errorf("Resolve errors (-want +got):\n%s", diff)
			}
			if err != nil && !allErrorsAre(err) {
				t.Errorf("Resolve errors are not all *Error: %#v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve (-want +got):\n%s", diff)
			}
			if got := secrets.Values(); got != tt.secrets {
				t.Errorf("Secrets.Values() = %d, want %d", got, tt.secrets)
			}
			if diff := cmp.Diff(orig, tt.s); diff != "" {
				t.Errorf("Resolve changed its receiver (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveHeaderInjection(t *testing.T) {
	s := Server{Name: "h", URL: "https://h", Headers: map[string]string{"X": "${V}"}}
	_, _, err := s.Resolve(env(map[string]string{"V": "a\r\nEvil: yes"}))
	want := []string{`server "h": headers.X: value contains a line break or NUL after substitution`}
	if diff := cmp.Diff(want, messages(err)); diff != "" {
		t.Errorf("Resolve errors (-want +got):\n%s", diff)
	}
}

func TestResolveOSEnv(t *testing.T) {
	t.Setenv("SWITCHBOARD_TEST_RESOLVE", "from-os-env")
	s := Server{Name: "o", Command: "x", Args: []string{"${SWITCHBOARD_TEST_RESOLVE}"}}
	got, secrets, err := s.Resolve(nil)
	if err != nil || got.Args[0] != "from-os-env" || secrets.Values() != 1 {
		t.Errorf("Resolve(nil) = %v, %d secrets, %v", got.Args, secrets.Values(), err)
	}
}

// TestResolveErrorsHideSecrets plants a secret in the environment and
// checks that no Resolve error shows it, and that the returned Secrets
// redact it.
func TestResolveErrorsHideSecrets(t *testing.T) {
	const secret = "ghp_PLANTEDsecret123"
	s := Server{Name: "g", Type: HTTP, URL: "${TOKEN}",
		Headers: map[string]string{"Authorization": "Bearer ${TOKEN}", "X": "${TOKEN}${NOPE}", "Y": "${TOKEN}\n${TOKEN"}}
	_, secrets, err := s.Resolve(env(map[string]string{"TOKEN": secret}))
	if err == nil {
		t.Fatal("no error")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error shows the secret: %v", err)
	}
	wrapped := fmt.Errorf("connect: token %s rejected: %w", secret, fs.ErrPermission)
	red := secrets.RedactError(wrapped)
	if strings.Contains(red.Error(), secret) {
		t.Errorf("RedactError shows the secret: %v", red)
	}
	if want := "connect: token [redacted] rejected: permission denied"; red.Error() != want {
		t.Errorf("RedactError = %q, want %q", red.Error(), want)
	}
	if !errors.Is(red, fs.ErrPermission) || !errors.Is(red, wrapped) {
		t.Errorf("RedactError broke errors.Is")
	}
}

func TestSecrets(t *testing.T) {
	var r Secrets
	r.Add("abc", "abcd", "abcdefgh", "abcd", "")
	if got := r.Values(); got != 2 {
		t.Errorf("Values() = %d, want 2", got)
	}
	tests := []struct{ in, want string }{
		{"", ""},
		{"nothing here", "nothing here"},
		{"abc", "abc"},
		{"x abcd y", "x [redacted] y"},
		{"abcdefgh", "[redacted]"},
		{"abcdefghabcd!", "[redacted][redacted]!"},
		{"abcdefg", "[redacted]efg"},
	}
	for _, tt := range tests {
		if got := r.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}

	var nilSecrets *Secrets
	if got := nilSecrets.Redact("abcd"); got != "abcd" || nilSecrets.Values() != 0 {
		t.Errorf("nil Secrets: Redact = %q, Values = %d", got, nilSecrets.Values())
	}
	if nilSecrets.RedactError(nil) != nil || r.RedactError(nil) != nil {
		t.Error("RedactError(nil) is not nil")
	}
	plain := errors.New("no secret")
	if got := r.RedactError(plain); got != plain {
		t.Errorf("RedactError changed an error without secrets: %v", got)
	}

	var m Secrets
	m.Merge(nil)
	m.Merge(&m)
	m.Merge(&r)
	m.Add("zzzz")
	if got := m.Values(); got != 3 {
		t.Errorf("after Merge, Values() = %d, want 3", got)
	}
	if got := m.Redact("abcd zzzz"); got != "[redacted] [redacted]" {
		t.Errorf("after Merge, Redact = %q", got)
	}
}

// TestSecretsEncodings: a value is redacted in the forms a server or a log
// may quote it in, each of which differs here.
func TestSecretsEncodings(t *testing.T) {
	var r Secrets
	r.Add("sk live/ä?>>~")
	for name, form := range map[string]string{
		"std base64":     "c2sgbGl2ZS/DpD8+Pn4=",
		"raw std base64": "c2sgbGl2ZS/DpD8+Pn4",
		"url base64":     "c2sgbGl2ZS_DpD8-Pn4=",
		"raw url base64": "c2sgbGl2ZS_DpD8-Pn4",
		"query escaped":  "sk+live%2F%C3%A4%3F%3E%3E~",
		"path escaped":   "sk%20live%2F%C3%A4%3F%3E%3E~",
		"python quote":   "sk%20live/%C3%A4%3F%3E%3E~",
		"lower escapes":  "sk%20live/%c3%a4%3f%3e%3e~",
		"hex":            "736b206c6976652fc3a43f3e3e7e",
		"upper hex":      "736B206C6976652FC3A43F3E3E7E",
	} {
		if got := r.Redact("x " + form + " y"); got != "x [redacted] y" {
			t.Errorf("%s: Redact = %q, want it redacted", name, got)
		}
	}
	// Inside a longer base64 text, at each offset of a 3-byte group: a
	// Basic credential, say.
	for _, text := range []string{
		"dTpzayBsaXZlL8OkPz4+fjpvdGhlcg==", // "u:" + it + ":other"
		"dXNlcjpzayBsaXZlL8OkPz4+fg==",     // "user:" + it
		"c2sgbGl2ZS/DpD8+Pn46bW9yZQ==",     // it + ":more"
	} {
		if got := r.Redact(text); !strings.Contains(got, "[redacted]") {
			t.Errorf("Redact(%q) = %q, want the value's part redacted", text, got)
		}
	}
}

// TestRedactTruncated: of a text cut off, the end that begins a value or a
// form of one is left out, as well as every whole value redacted.
func TestRedactTruncated(t *testing.T) {
	var r Secrets
	r.Add("abab", "sk-secret-123456")
	tests := []struct{ in, want string }{
		{"", ""},
		{"nothing here", "nothing here"},
		{"x sk-secret-12", "x "},
		{"x sk-secret-123456", "x [redacted]"},
		{"x sk-secret-123456 sk-s", "x [redacted] "},
		{"x abab", "x [redacted]"},
		{"x aba", "x "},
		{"x c2stc2VjcmV0LTEy", "x "}, // the start of its base64
		{"x sk-secret-X", "x sk-secret-X"},
	}
	for _, tt := range tests {
		if got := r.RedactTruncated(tt.in); got != tt.want {
			t.Errorf("RedactTruncated(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var nilSecrets *Secrets
	if got := nilSecrets.RedactTruncated("abcd"); got != "abcd" {
		t.Errorf("nil Secrets: RedactTruncated = %q", got)
	}
}

func TestSecretsConcurrent(t *testing.T) {
	var r, other Secrets
	other.Add("other-secret")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				r.Add(fmt.Sprintf("secret-%d-%d", i, j))
				r.Merge(&other)
				_ = r.Redact("secret-1-1 other-secret")
				_ = r.Values()
			}
		})
	}
	wg.Wait()
	if got := r.Values(); got != 8*50+1 {
		t.Errorf("Values() = %d, want %d", got, 8*50+1)
	}
	if got := r.Redact("secret-1-1 other-secret"); got != "[redacted] [redacted]" {
		t.Errorf("Redact = %q", got)
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://user:pw@h/p?token=x#f", "https://h/p"},
		{"http://127.0.0.1:9000/sse", "http://127.0.0.1:9000/sse"},
		{"https://h", "https://h"},
		{"https://h:8443/a%2Fb/c?x", "https://h:8443/a%2Fb/c"},
		{"HTTPS://H/P", "https://H/P"},
		{"https://[::1]:80/mcp#frag", "https://[::1]:80/mcp"},
		{"", "<invalid-url>"},
		{"not a url", "<invalid-url>"},
		{"/relative/path?token=x", "<invalid-url>"},
		{"mailto:secret@example.com", "<invalid-url>"},
		{"http://h:port/", "<invalid-url>"},
		{"https://user:pw@h:bad/p", "<invalid-url>"},
		{"://missing-scheme", "<invalid-url>"},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFingerprint(t *testing.T) {
	parseOne := func(t *testing.T, in string) Server {
		t.Helper()
		cfg, err := Parse("f", []byte(in))
		if err != nil || len(cfg.Servers) != 1 {
			t.Fatalf("Parse(%s) = %+v, %v", in, cfg, err)
		}
		return cfg.Servers[0]
	}
	a := parseOne(t, `{"mcpServers": {"a": {"command": "npx", "args": ["-y", "pkg"], "env": {"A": "1", "B": "${TOKEN}"}, "timeout": 100, "tools": {"allow": ["x*"]}}}}`)
	b := parseOne(t, `// same entry, other key order and layout
	{"mcpServers": {"other-name": {
	    "tools": {"allow": ["x*"],},
	    "timeout": 100,
	    "env": {"B": "${TOKEN}", "A": "1"},
	    "args": ["-y", "pkg"],
	    "type": "stdio",
	    "command": "npx",
	}}}`)
	fp := a.Fingerprint()
	if len(fp) != 64 || strings.Trim(fp, "0123456789abcdef") != "" {
		t.Errorf("Fingerprint = %q, want 64 hex digits", fp)
	}
	if got := b.Fingerprint(); got != fp {
		t.Errorf("same entry in another layout: Fingerprint = %s, want %s", got, fp)
	}
	if got := a.Fingerprint(); got != fp {
		t.Error("Fingerprint is not stable")
	}
	resolved, _, err := a.Resolve(env(map[string]string{"TOKEN": "secret-value"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Fingerprint(); got != fp {
		t.Error("Resolve changed the fingerprint of the unresolved entry")
	}
	if resolved.Fingerprint() == fp {
		t.Error("the resolved entry has the fingerprint of the unresolved one")
	}
	c := a.Clone()
	c.Name, c.Source = "renamed", "elsewhere"
	if got := c.Fingerprint(); got != fp {
		t.Error("Name or Source changed the fingerprint")
	}
	c = a.Clone()
	c.Args, c.Tools.Deny = []string{}, []string{}
	d := a.Clone()
	d.Args = nil
	if c.Fingerprint() != d.Fingerprint() {
		t.Error("empty and nil lists have different fingerprints")
	}

	changes := map[string]func(s *Server){
		"type":              func(s *Server) { s.Type = SSE },
		"command":           func(s *Server) { s.Command = "npm" },
		"args":              func(s *Server) { s.Args[1] = "pkg2" },
		"args order":        func(s *Server) { s.Args[0], s.Args[1] = s.Args[1], s.Args[0] },
		"env value":         func(s *Server) { s.Env["A"] = "2" },
		"env key":           func(s *Server) { s.Env["C"] = "1" },
		"cwd":               func(s *Server) { s.Cwd = "/" },
		"inheritEnv":        func(s *Server) { s.InheritEnv = true },
		"url":               func(s *Server) { s.URL = "https://h" },
		"headers":           func(s *Server) { s.Headers = map[string]string{"A": "b"} },
		"enabled":           func(s *Server) { s.Enabled = ptr(false) },
		"enabled true":      func(s *Server) { s.Enabled = ptr(true) },
		"timeout":           func(s *Server) { *s.Timeout = 101 },
		"no timeout":        func(s *Server) { s.Timeout = nil },
		"tools.allow":       func(s *Server) { s.Tools.Allow = []string{"y*"} },
		"tools.deny":        func(s *Server) { s.Tools.Deny = []string{"x*"} },
		"prefix":            func(s *Server) { s.Prefix = ptr("") },
		"required":          func(s *Server) { s.Required = true },
		"protocolVersion":   func(s *Server) { s.ProtocolVersion = "2025-11-25" },
		"serializeRequests": func(s *Server) { s.SerializeRequests = true },
		"processPerSession": func(s *Server) { s.ProcessPerSession = true },
	}
	seen := map[string]string{fp: "original"}
	for name, change := range changes {
		c := a.Clone()
		change(&c)
		got := c.Fingerprint()
		if prev, ok := seen[got]; ok {
			t.Errorf("changing %s gives the fingerprint of %s", name, prev)
		}
		seen[got] = name
	}
	if a.Fingerprint() != fp {
		t.Error("changing a clone changed the original")
	}
}

func TestClone(t *testing.T) {
	s := Server{Name: "n", Args: []string{"a"}, Env: map[string]string{"A": "1"}, Headers: map[string]string{"H": "v"},
		Enabled: ptr(true), Timeout: ptr[int64](1), Prefix: ptr("p"), Tools: ToolFilter{Allow: []string{"a"}, Deny: []string{"b"}}}
	want := s.Clone()
	c := s.Clone()
	c.Args[0], c.Env["A"], c.Headers["H"] = "x", "x", "x"
	*c.Enabled, *c.Timeout, *c.Prefix = false, 2, "x"
	c.Tools.Allow[0], c.Tools.Deny[0] = "x", "x"
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("changing a clone changed the original (-want +got):\n%s", diff)
	}
}
