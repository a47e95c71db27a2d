package config

import (
	"encoding/json"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"mcpServers": {"a": {"command": "x", "args": ["${A:-b}"], "env": {"K": "${env:K}"}}}}`,
		`{"servers": {"h": {"type": "http", "url": "https://h/${P}", "headers": {"A": "Bearer ${T}"}, "tools": {"allow": ["a*"], "deny": ["[]"]}}}}`,
		`// c
		{"mcpServers": {"s": {"type": "sse", "url": "http://h", "timeout": 1e3, "prefix": "", "enabled": false,},}, "inputs": []}`,
		`{"mcpServers": {"": {"command": 1}, "b": {"type": "streamable-http", "url": "x", "timeout": -1.5, "protocolVersion": "2025-11-25"}}}`,
		`{"mcpServers": {"a": {"command": "x"}, "a": null, "b": {"command": "y", "env": {"A": null}}}}`,
		`{"mcpServers": {}, "servers": {}}`,
		`[1, 2]`,
		"{\"mcpServers\": /* x */ {\"a\": tru}}",
		"\ufeff{} // end",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("f.json", data)
		if err != nil {
			if cfg != nil {
				t.Fatalf("Parse returned both a Config and %v", err)
			}
			return
		}
		for i := range cfg.Servers {
			s := &cfg.Servers[i]
			if err := s.Validate(); err != nil {
				t.Fatalf("Parse accepted %q, which does not validate: %v", s.Name, err)
			}
			if s.Type == "" {
				t.Fatalf("server %q has no type", s.Name)
			}
			// The JSON encoding of a server is an entry with the same
			// fingerprint.
			entry, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			name, _ := json.Marshal(s.Name)
			again, err := Parse("g.json", []byte(`{"mcpServers": {`+string(name)+`: `+string(entry)+`}}`))
			if err != nil || len(again.Servers) != 1 {
				t.Fatalf("re-parsing %s: %+v, %v", entry, again, err)
			}
			if again.Servers[0].Fingerprint() != s.Fingerprint() {
				t.Fatalf("re-parsing %s changed the fingerprint", entry)
			}
			_, _, _ = s.Resolve(func(string) (string, bool) { return "", false })
		}
		for _, r := range cfg.Rejected {
			if r.Err == nil || !allErrorsAre(r.Err) {
				t.Fatalf("rejected %q with %#v", r.Name, r.Err)
			}
		}
	})
}

func FuzzResolve(f *testing.F) {
	f.Add("${A}", "pre ${env:B} post", "https://${H:-h}/p", "Bearer ${T:-x}")
	f.Add("${", "${}", "${1}", "${input:x}")
	f.Add("$${A}{B}", "${A:-}${B}", "${A:-${B}}", "}${A}{")
	f.Add("", "$", "${A:-a:-b}", "${env:env:A}")
	f.Fuzz(func(t *testing.T, arg, envValue, rawURL, header string) {
		const secret = "s3cret-VALUE"
		s := Server{Name: "f", Type: HTTP, Args: []string{arg}, Env: map[string]string{"E": envValue},
			URL: rawURL, Headers: map[string]string{"H": header}}

		// With every variable set, every template is expanded: no "${"
		// is left, since literal text never holds one.
		all := func(string) (string, bool) { return secret, true }
		got, secrets, err := s.Resolve(all)
		if err == nil {
			for _, v := range []string{got.Args[0], got.Env["E"], got.URL, got.Headers["H"]} {
				if strings.Contains(v, "${") {
					t.Fatalf("Resolve left a template in %q", v)
				}
			}
			templated := false
			for _, v := range []string{arg, envValue, rawURL, header} {
				templated = templated || strings.Contains(v, "${")
			}
			if templated && secrets.Values() != 1 {
				t.Fatalf("Secrets.Values() = %d, want 1", secrets.Values())
			}
		} else if strings.Contains(err.Error(), secret) {
			t.Fatalf("error shows a value: %v", err)
		}

		// With some variables unset or empty, defaults and errors apply.
		some := func(name string) (string, bool) {
			switch len(name) % 3 {
			case 0:
				return secret, true
			case 1:
				return "", true
			}
			return "", false
		}
		if _, _, err := s.Resolve(some); err != nil {
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error shows a value: %v", err)
			}
			if !allErrorsAre(err) {
				t.Fatalf("Resolve error is not all *Error: %#v", err)
			}
		}
	})
}
