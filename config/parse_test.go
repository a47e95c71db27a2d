package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const file = "/x/.mcp.json"

func TestParseFormats(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // server names in order
	}{
		{"json", `{"mcpServers": {"a": {"command": "x"}, "b": {"url": "https://h/mcp"}}}`, []string{"a", "b"}},
		{"line comments", "// top\n{\n\"mcpServers\": { // servers\n\"a\": {\"command\": \"x\"} // a\n}\n}\n// end", []string{"a"}},
		{"block comments", `/* a */ {"mcpServers": /* b */ {"a": /* c */ {"command": "x" /* d */}}} /* e */`, []string{"a"}},
		{"trailing commas", `{"mcpServers": {"a": {"command": "x", "args": ["1", "2",],},},}`, []string{"a"}},
		{"servers key", `{"servers": {"a": {"type": "http", "url": "https://h"}}, "inputs": []}`, []string{"a"}},
		{"order kept", `{"mcpServers": {"zeta": {"command": "x"}, "alpha": {"command": "x"}, "mid": {"command": "x"}, "beta": {"command": "x"}}}`, []string{"zeta", "alpha", "mid", "beta"}},
		{"empty servers", `{"mcpServers": {}}`, nil},
		{"no servers key", `{}`, nil},
		{"byte order mark", "\ufeff{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}", []string{"a"}},
		{"duplicate keeps first place", `{"mcpServers": {"a": {"command": "1"}, "b": {"command": "x"}, "a": {"command": "2"}}}`, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(file, []byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var got []string
			for _, s := range cfg.Servers {
				got = append(got, s.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("server names (-want +got):\n%s", diff)
			}
			if len(cfg.Rejected) > 0 {
				t.Errorf("Rejected = %v", cfg.Rejected)
			}
			if diff := cmp.Diff([]string{file}, cfg.Files); diff != "" {
				t.Errorf("Files (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseFields(t *testing.T) {
	in := `{
	  // The example from the design, plus every other field.
	  "mcpServers": {
	    "files":  { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
	                "env": { "DEBUG": "${DEBUG:-0}" } },
	    "github": { "type": "http", "url": "https://example.invalid/mcp",
	                "headers": { "Authorization": "Bearer ${GITHUB_TOKEN}" },
	                "tools": { "allow": ["issue_*"], "deny": ["*_delete"] }, "required": true },
	    "legacy": { "type": "sse", "url": "http://127.0.0.1:9000/sse", "timeout": 60000 },
	    "raw":    { "command": "./server", "prefix": "" },
	    "off":    { "command": "x", "enabled": false },
	    "all":    { "type": "stdio", "command": "c", "cwd": "/tmp", "inheritEnv": true, "enabled": true,
	                "timeout": 0, "prefix": "p", "required": false, "protocolVersion": "2025-11-25",
	                "serializeRequests": true, "processPerSession": true },
	    "stream": { "type": "streamable-http", "url": "https://h/mcp", "timeout": 1e3 },
	    "nulls":  { "command": "x", "args": null, "env": null, "timeout": null, "prefix": null },
	  },
	}`
	cfg, err := Parse(file, []byte(in))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []Server{
		{Name: "files", Source: file, Type: Stdio, Command: "npx",
			Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/srv"},
			Env:  map[string]string{"DEBUG": "${DEBUG:-0}"}},
		{Name: "github", Source: file, Type: HTTP, URL: "https://example.invalid/mcp",
			Headers:  map[string]string{"Authorization": "Bearer ${GITHUB_TOKEN}"},
			Tools:    ToolFilter{Allow: []string{"issue_*"}, Deny: []string{"*_delete"}},
			Required: true},
		{Name: "legacy", Source: file, Type: SSE, URL: "http://127.0.0.1:9000/sse", Timeout: ptr[int64](60000)},
		{Name: "raw", Source: file, Type: Stdio, Command: "./server", Prefix: ptr("")},
		{Name: "off", Source: file, Type: Stdio, Command: "x", Enabled: ptr(false)},
		{Name: "all", Source: file, Type: Stdio, Command: "c", Cwd: "/tmp", InheritEnv: true, Enabled: ptr(true),
			Timeout: ptr[int64](0), Prefix: ptr("p"), ProtocolVersion: "2025-11-25", SerializeRequests: true, ProcessPerSession: true},
		{Name: "stream", Source: file, Type: HTTP, URL: "https://h/mcp", Timeout: ptr[int64](1000)},
		{Name: "nulls", Source: file, Type: Stdio, Command: "x"},
	}
	if diff := cmp.Diff(want, cfg.Servers); diff != "" {
		t.Errorf("Servers (-want +got):\n%s", diff)
	}
	if len(cfg.Rejected) > 0 || len(cfg.Warnings) > 0 {
		t.Errorf("Rejected = %v, Warnings = %v", cfg.Rejected, cfg.Warnings)
	}
}

func TestParseLimitsAndRetry(t *testing.T) {
	cfg, err := Parse(file, []byte(`{"mcpServers": {
		"tuned":    {"command": "x", "maxInFlight": 8, "maxResponseBytes": 1048576, "retry": {"max": -1, "backoffMs": 250, "maxBackoffMs": 4000}},
		"defaults": {"command": "x"}
	}}`))
	if err != nil || len(cfg.Rejected) > 0 {
		t.Fatalf("Parse = %v, rejected %v", err, cfg.Rejected)
	}
	tuned, defaults := cfg.Servers[0], cfg.Servers[1]
	got := []any{tuned.InFlightLimit(), tuned.ResponseLimit(), tuned.Retry.Max, tuned.Retry.Backoff(), tuned.Retry.MaxBackoff(),
		defaults.InFlightLimit(), defaults.ResponseLimit(), defaults.Retry.Max, defaults.Retry.Backoff(), defaults.Retry.MaxBackoff()}
	want := []any{8, int64(1 << 20), -1, 250 * time.Millisecond, 4 * time.Second,
		DefaultMaxInFlight, int64(DefaultMaxResponseBytes), 0, time.Second, time.Duration(0)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("limits and retry (-want +got):\n%s", diff)
	}
	if tuned.Fingerprint() == defaults.Fingerprint() {
		t.Error("retry and limits do not change the fingerprint")
	}
	clone := tuned.Clone()
	*clone.Retry.BackoffMs = 1
	if tuned.Retry.Backoff() != 250*time.Millisecond {
		t.Error("Clone shares Retry.BackoffMs")
	}
}

func TestParseOAuth(t *testing.T) {
	cfg, err := Parse(file, []byte(`{"mcpServers": {
		"tracker": {"url": "https://mcp.example.com/mcp", "oauth": {"clientId": "abc", "clientSecret": "${TRACKER_SECRET}", "scopes": ["read", "write"], "callbackPort": 8765}},
		"docs":    {"url": "https://docs.example.com/mcp"}
	}}`))
	if err != nil || len(cfg.Rejected) > 0 {
		t.Fatalf("Parse = %v, rejected %v", err, cfg.Rejected)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings %v, want none", cfg.Warnings)
	}
	tracker, docs := cfg.Servers[0], cfg.Servers[1]
	want := &OAuth{ClientID: "abc", ClientSecret: "${TRACKER_SECRET}", Scopes: []string{"read", "write"}, CallbackPort: 8765}
	if diff := cmp.Diff(want, tracker.OAuth); diff != "" || docs.OAuth != nil {
		t.Errorf("oauth (-want +got):\n%s\nwithout one: %+v", diff, docs.OAuth)
	}
	clone := tracker.Clone()
	clone.OAuth.Scopes[0], clone.OAuth.ClientID = "x", "x"
	if diff := cmp.Diff(want, tracker.OAuth); diff != "" {
		t.Errorf("changing a clone's oauth changed the original (-want +got):\n%s", diff)
	}
	resolved, secrets, err := tracker.Resolve(func(string) (string, bool) { return "s3cr3t-value", true })
	if err != nil || resolved.OAuth.ClientSecret != "s3cr3t-value" || tracker.OAuth.ClientSecret != "${TRACKER_SECRET}" {
		t.Fatalf("Resolve = %+v, %v", resolved.OAuth, err)
	}
	if got := secrets.Redact("token request with s3cr3t-value"); strings.Contains(got, "s3cr3t-value") {
		t.Errorf("the client secret is not redacted: %q", got)
	}
	// A secret written as is is redacted too.
	literal := Server{Name: "l", URL: "https://h/mcp", OAuth: &OAuth{ClientID: "id", ClientSecret: "plain-secret"}}
	if _, secrets, err := literal.Resolve(nil); err != nil || strings.Contains(secrets.Redact("x plain-secret"), "plain-secret") {
		t.Errorf("a literal client secret is not redacted (%v)", err)
	}
}

func TestServerDefaults(t *testing.T) {
	tests := []struct {
		name       string
		s          Server
		enabled    bool
		timeout    string
		prefix     string
		transport  Transport
		displayURL string
	}{
		{"zero", Server{Name: "n", Command: "x"}, true, "30s", "n", Stdio, "<invalid-url>"},
		{"set", Server{Name: "n", URL: "https://u:p@h/mcp?k=v", Enabled: ptr(false), Timeout: ptr[int64](1500), Prefix: ptr("")}, false, "1.5s", "", HTTP, "https://h/mcp"},
		{"no timeout", Server{Name: "n", Type: "streamable-http", Timeout: ptr[int64](0), Prefix: ptr("p")}, true, "0s", "p", HTTP, "<invalid-url>"},
		{"enabled true", Server{Name: "n", Type: SSE, Enabled: ptr(true), Tools: ToolFilter{Allow: []string{"list_*"}}}, true, "30s", "n", SSE, "<invalid-url>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := []any{tt.s.IsEnabled(), tt.s.TimeoutDuration().String(), tt.s.PublicPrefix(), tt.s.TransportType(), tt.s.DisplayURL()}
			want := []any{tt.enabled, tt.timeout, tt.prefix, tt.transport, tt.displayURL}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("IsEnabled, TimeoutDuration, PublicPrefix, TransportType, DisplayURL (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTransportInference(t *testing.T) {
	tests := []struct {
		entry string
		want  Transport
	}{
		{`{"command": "x"}`, Stdio},
		{`{"url": "https://h"}`, HTTP},
		{`{"type": "stdio", "command": "x"}`, Stdio},
		{`{"type": "http", "url": "https://h"}`, HTTP},
		{`{"type": "streamable-http", "url": "https://h"}`, HTTP},
		{`{"type": "sse", "url": "https://h"}`, SSE},
	}
	for _, tt := range tests {
		t.Run(tt.entry, func(t *testing.T) {
			cfg, err := Parse(file, []byte(`{"mcpServers": {"x": `+tt.entry+`}}`))
			if err != nil || len(cfg.Servers) != 1 {
				t.Fatalf("Parse: %v, %+v", err, cfg)
			}
			if got := cfg.Servers[0].Type; got != tt.want {
				t.Errorf("Type = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	const p = file + `: server "x": `
	tests := []struct {
		name  string
		entry string
		want  []string
	}{
		{"stdio without command", `{"type": "stdio"}`, []string{p + "command: required for stdio servers"}},
		{"http without url", `{"type": "http"}`, []string{p + "url: required for http servers"}},
		{"sse without url", `{"type": "sse"}`, []string{p + "url: required for sse servers"}},
		{"neither command nor url", `{}`, []string{p + "want a command (stdio) or a url (http, sse)"}},
		{"command and url", `{"command": "x", "url": "https://h"}`, []string{p + "command and url are both set; want one, or a type"}},
		{"unknown type", `{"type": "websocket", "url": "wss://h"}`, []string{p + `type: unknown transport "websocket" (want stdio, http or sse)`}},
		{"url scheme", `{"url": "ftp://h/x"}`, []string{p + "url: want an absolute http or https URL"}},
		{"relative url", `{"url": "/mcp"}`, []string{p + "url: want an absolute http or https URL"}},
		{"url without host", `{"type": "sse", "url": "https:///mcp"}`, []string{p + "url: want an absolute http or https URL"}},
		{"unparsable url", `{"url": "http://h:port/"}`, []string{p + "url: want an absolute http or https URL"}},
		{"not an object", `5`, []string{p + "want an object"}},
		{"oauth on stdio", `{"command": "x", "oauth": {}}`, []string{p + "oauth: only for http and sse servers"}},
		{"oauth type", `{"url": "https://h", "oauth": "yes"}`, []string{p + `oauth: want an object such as {"clientId": "...", "scopes": ["read"]}`}},
		{"oauth port", `{"url": "https://h", "oauth": {"callbackPort": 70000}}`, []string{p + "oauth.callbackPort: want a port from 1 to 65535, or 0 for any free one"}},
		{"oauth secret alone", `{"url": "https://h", "oauth": {"clientSecret": "s"}}`, []string{p + "oauth.clientSecret: set without oauth.clientId: a secret belongs to a pre-registered client"}},
		{"oauth scope", `{"url": "https://h", "oauth": {"scopes": ["a b"]}}`, []string{p + `oauth.scopes[0]: invalid scope "a b"`}},
		{"oauth scopes type", `{"url": "https://h", "oauth": {"scopes": "a"}}`, []string{p + "oauth.scopes: want an array of strings"}},
		{"type type", `{"type": 1, "command": "x"}`, []string{p + "type: want a string"}},
		{"command type", `{"command": 5}`, []string{p + "command: want a string"}},
		{"args type", `{"command": "x", "args": "a b"}`, []string{p + "args: want an array of strings"}},
		{"args element type", `{"command": "x", "args": ["a", 2, {}]}`, []string{p + "args[1]: want a string", p + "args[2]: want a string"}},
		{"env type", `{"command": "x", "env": ["A=1"]}`, []string{p + "env: want an object of strings"}},
		{"env value type", `{"command": "x", "env": {"PORT": 8080, "ON": true}}`, []string{p + "env.PORT: want a string", p + "env.ON: want a string"}},
		{"cwd type", `{"command": "x", "cwd": true}`, []string{p + "cwd: want a string"}},
		{"inheritEnv type", `{"command": "x", "inheritEnv": "yes"}`, []string{p + "inheritEnv: want true or false"}},
		{"url type", `{"url": 1}`, []string{p + "url: want a string"}},
		{"headers type", `{"url": "https://h", "headers": "X: y"}`, []string{p + "headers: want an object of strings"}},
		{"header value type", `{"url": "https://h", "headers": {"X-N": 1}}`, []string{p + "headers.X-N: want a string"}},
		{"enabled type", `{"command": "x", "enabled": "false"}`, []string{p + "enabled: want true or false"}},
		{"timeout type", `{"command": "x", "timeout": "30s"}`, []string{p + "timeout: want a whole number of milliseconds"}},
		{"negative timeout", `{"command": "x", "timeout": -1}`, []string{p + "timeout: must not be negative"}},
		{"negative fraction timeout", `{"command": "x", "timeout": -0.5}`, []string{p + "timeout: must not be negative"}},
		{"fractional timeout", `{"command": "x", "timeout": 1.5}`, []string{p + "timeout: want a whole number of milliseconds, not a fraction"}},
		{"huge timeout", `{"command": "x", "timeout": 1e300}`, []string{p + "timeout: too large (at most 9223372036854 milliseconds)"}},
		{"big timeout", `{"command": "x", "timeout": 9223372036855}`, []string{p + "timeout: too large (at most 9223372036854 milliseconds)"}},
		{"tools type", `{"command": "x", "tools": ["a"]}`, []string{p + `tools: want an object with "allow" and "deny" lists`}},
		{"tools.allow type", `{"command": "x", "tools": {"allow": "a*"}}`, []string{p + "tools.allow: want an array of strings"}},
		{"tools.deny element type", `{"command": "x", "tools": {"deny": ["a", 1, "["]}}`, []string{p + "tools.deny[1]: want a string", p + `tools.deny[2]: bad glob "[": syntax error in pattern`}},
		{"bad glob", `{"command": "x", "tools": {"allow": ["ok_*", "a[b"]}}`, []string{p + `tools.allow[1]: bad glob "a[b": syntax error in pattern`}},
		{"prefix type", `{"command": "x", "prefix": false}`, []string{p + "prefix: want a string"}},
		{"required type", `{"command": "x", "required": 1}`, []string{p + "required: want true or false"}},
		{"protocolVersion type", `{"command": "x", "protocolVersion": 2025}`, []string{p + "protocolVersion: want a string"}},
		{"protocolVersion format", `{"command": "x", "protocolVersion": "2025-13-01"}`, []string{p + "protocolVersion: want a date such as 2025-11-25"}},
		{"protocolVersion short", `{"command": "x", "protocolVersion": "2025-1-01"}`, []string{p + "protocolVersion: want a date such as 2025-11-25"}},
		{"serializeRequests type", `{"command": "x", "serializeRequests": "no"}`, []string{p + "serializeRequests: want true or false"}},
		{"maxInFlight type", `{"command": "x", "maxInFlight": "64"}`, []string{p + "maxInFlight: want a whole number"}},
		{"maxInFlight negative", `{"command": "x", "maxInFlight": -1}`, []string{p + "maxInFlight: must not be negative (0 means the default, 64)"}},
		{"maxResponseBytes fraction", `{"command": "x", "maxResponseBytes": 1.5}`, []string{p + "maxResponseBytes: want a whole number"}},
		{"maxResponseBytes negative", `{"command": "x", "maxResponseBytes": -5}`, []string{p + "maxResponseBytes: must not be negative (0 means the default, 16777216)"}},
		{"retry type", `{"command": "x", "retry": 3}`, []string{p + `retry: want an object such as {"max": 3, "backoffMs": 1000}`}},
		{"retry.max range", `{"command": "x", "retry": {"max": -2}}`, []string{p + "retry.max: want -1 (no limit), 0 (no retries) or a positive count"}},
		{"retry backoffs", `{"command": "x", "retry": {"backoffMs": -1, "maxBackoffMs": "1s"}}`, []string{p + "retry.maxBackoffMs: want a whole number of milliseconds", p + "retry.backoffMs: must not be negative"}},
		{"stdio fields on http", `{"type": "http", "url": "https://h", "command": "x", "args": ["a"], "env": {"A": "1"}, "cwd": "/", "inheritEnv": true, "processPerSession": true}`, []string{
			p + "command: only for stdio servers", p + "args: only for stdio servers", p + "env: only for stdio servers",
			p + "cwd: only for stdio servers", p + "inheritEnv: only for stdio servers",
			p + "processPerSession: only for stdio servers: an HTTP server ties what it asks to the request that caused it"}},
		{"processPerSession type", `{"command": "x", "processPerSession": 1}`, []string{p + "processPerSession: want true or false"}},
		{"http fields on stdio", `{"type": "stdio", "command": "x", "url": "https://h", "headers": {"A": "b"}}`, []string{
			p + "url: only for http and sse servers", p + "headers: only for http and sse servers"}},
		{"unterminated template", `{"command": "x", "args": ["ok", "${HOME"]}`, []string{p + "args[1]: unterminated ${ (want ${NAME})"}},
		{"empty template", `{"command": "x", "env": {"A": "${}", "B": "${env:}", "C": "${:-x}"}}`, []string{
			p + "env.A: empty variable name in ${}", p + "env.B: empty variable name in ${}", p + "env.C: empty variable name in ${}"}},
		{"bad template name", `{"url": "https://h/${1X}"}`, []string{p + "url: invalid variable name in ${...} (want letters, digits and _, not starting with a digit)"}},
		{"dash in template name", `{"url": "https://h", "headers": {"A": "${MY-VAR}"}}`, []string{p + "headers.A: invalid variable name in ${...} (want letters, digits and _, not starting with a digit)"}},
		{"vs code input", `{"url": "https://h", "headers": {"Authorization": "Bearer ${input:token}"}}`, []string{p + "headers.Authorization: ${input:...} is not supported (want ${NAME}, ${NAME:-default} or ${env:NAME})"}},
		{"dollar in default", `{"command": "x", "args": ["${A:-$HOME}"]}`, []string{p + "args[0]: a default in ${NAME:-default} must not contain $"}},
		{"bad header name", `{"url": "https://h", "headers": {"Bad Name": "v"}}`, []string{p + `headers: invalid header name "Bad Name"`}},
		{"header line break", `{"url": "https://h", "headers": {"X-A": "a\r\nX-B: b"}}`, []string{p + "headers.X-A: value contains a line break or NUL"}},
		{"bad env name", `{"command": "x", "env": {"A=B": "1", "": "2"}}`, []string{p + `env: invalid variable name ""`, p + `env: invalid variable name "A=B"`}},
		{"every problem", `{"type": "http", "command": 5, "timeout": -5, "tools": {"allow": ["["]}, "args": ["${"]}`, []string{
			p + "command: want a string", p + "url: required for http servers", p + "args: only for stdio servers",
			p + "timeout: must not be negative", p + `tools.allow[0]: bad glob "[": syntax error in pattern`,
			p + "args[0]: unterminated ${ (want ${NAME})"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := `{"mcpServers": {"before": {"command": "b"}, "x": ` + tt.entry + `, "after": {"command": "a"}}}`
			cfg, err := Parse(file, []byte(in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(cfg.Servers) != 2 || cfg.Servers[0].Name != "before" || cfg.Servers[1].Name != "after" {
				t.Errorf("Servers = %+v, want before and after", cfg.Servers)
			}
			if len(cfg.Rejected) != 1 {
				t.Fatalf("Rejected = %+v, want one", cfg.Rejected)
			}
			r := cfg.Rejected[0]
			if r.Name != "x" || r.Source != file {
				t.Errorf("Rejected = %+v, want x from %s", r, file)
			}
			if diff := cmp.Diff(tt.want, messages(r.Err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if !allErrorsAre(r.Err) {
				t.Errorf("problems are not all *Error: %#v", r.Err)
			}
		})
	}
}

func TestParseErrorFields(t *testing.T) {
	cfg, err := Parse(file, []byte(`{"mcpServers": {"x": {"command": "x", "args": ["a", "${"], "required": true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Rejected) != 1 || !cfg.Rejected[0].Required {
		t.Fatalf("Rejected = %+v, want one, required", cfg.Rejected)
	}
	var e *Error
	if !errors.As(cfg.Rejected[0].Err, &e) {
		t.Fatalf("error %v is not an *Error", cfg.Rejected[0].Err)
	}
	got := Error{File: e.File, Server: e.Server, Field: e.Field, Problem: e.Problem}
	want := Error{File: file, Server: "x", Field: "args[1]", Problem: "unterminated ${ (want ${NAME})"}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(Error{})); diff != "" {
		t.Errorf("Error (-want +got):\n%s", diff)
	}
}

func TestParseEmptyName(t *testing.T) {
	cfg, err := Parse(file, []byte(`{"mcpServers": {"": {"type": "http"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Rejected) != 1 {
		t.Fatalf("Rejected = %+v, want one", cfg.Rejected)
	}
	want := []string{
		file + `: server "": server name must not be empty`,
		file + `: server "": url: required for http servers`,
	}
	if diff := cmp.Diff(want, messages(cfg.Rejected[0].Err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestParseWarnings(t *testing.T) {
	in := `{
	  "inputs": [{"id": "token"}],
	  "mcpServers": {
	    "a": {"command": "x", "disabled": true, "env": {"A": null, "B": "b"}, "tools": {"allow": ["*"], "block": []}},
	    "b": {"url": "https://h", "url": "https://h2", "autoApprove": null},
	    "b": {"command": "y", "bogus": 1}
	  }
	}`
	cfg, err := Parse(file, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		file + `: inputs: unknown top-level key, ignored`,
		file + `: server "a": disabled: unknown field, ignored`,
		file + `: server "a": env.A: null value, ignored`,
		file + `: server "a": tools.block: unknown field, ignored`,
		file + `: server "b": url: duplicate field; the last one wins`,
		file + `: server "b": autoApprove: unknown field, ignored`,
		file + `: server "b": bogus: unknown field, ignored`,
		file + `: server "b": duplicate entry; the last one wins`,
	}
	if diff := cmp.Diff(want, errorStrings(cfg.Warnings)); diff != "" {
		t.Errorf("Warnings (-want +got):\n%s", diff)
	}
	wantServers := []Server{
		{Name: "a", Source: file, Type: Stdio, Command: "x", Env: map[string]string{"B": "b"}, Tools: ToolFilter{Allow: []string{"*"}}},
		{Name: "b", Source: file, Type: Stdio, Command: "y"},
	}
	if diff := cmp.Diff(wantServers, cfg.Servers); diff != "" {
		t.Errorf("Servers (-want +got):\n%s", diff)
	}

	cfg, err = Parse(file, []byte(`{"other": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	want = []string{
		file + `: other: unknown top-level key, ignored`,
		file + `: no "mcpServers" or "servers" key; no servers defined`,
	}
	if diff := cmp.Diff(want, errorStrings(cfg.Warnings)); diff != "" {
		t.Errorf("Warnings (-want +got):\n%s", diff)
	}
}

func TestParseFileErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
		line int
	}{
		{"empty", ``, file + ":1:1: parsing value: unexpected EOF", 1},
		{"unclosed", "{\"mcpServers\": {} // x", file + ":1:23: parsing object after value: unexpected EOF", 1},
		{"open brace", "{", file + ":1:2: parsing value: unexpected EOF", 1},
		{"open brace and newline", "{\n", file + ":2:1: parsing value: unexpected EOF", 2},
		{"array", `[{"command": "x"}]`, file + ": want a JSON object at the top level", 0},
		{"string", `"mcpServers"`, file + ": want a JSON object at the top level", 0},
		{"both keys", `{"mcpServers": {}, "servers": {}}`, file + `: both "mcpServers" and "servers" are set; want one`, 0},
		{"servers not an object", `{"mcpServers": [{"command": "x"}]}`, file + ": mcpServers: want an object with one entry per server", 0},
		{"servers null", `{"servers": null}`, file + ": servers: want an object with one entry per server", 0},
		{"missing comma", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n    \"b\": {}\n  }\n}", file + `:4:5: invalid character '"' after object value (expecting ',' or '}')`, 4},
		{"after comments", "// line one\n/* two\n   three */ {\"mcpServers\": {\n  // five\n  \"a\": {\"command\": \"x\",}, /* six */ \"b\": {\"command\" \"y\"}\n}}", file + `:5:53: invalid character '"' after object name`, 5},
		{"comment in the line", "{\"mcpServers\": /* x */ {\"a\": tru}}", file + ":1:30: invalid value (want an object, array, string, number, true, false or null)", 1},
		{"unterminated string", "{\"mcpServers\": {\"a\": {\"command\": \"x\n\"}}}", file + ":1:34: invalid string (unterminated, a bad escape or a control character)", 1},
		{"unterminated comment", "{\"mcpServers\": {}} /* x", file + ":1:20: parsing comment: unexpected EOF", 1},
		{"trailing garbage", "{}\n}", file + ":2:1: invalid character '}' after top-level value", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(file, []byte(tt.in))
			if cfg != nil {
				t.Errorf("Config = %+v, want nil", cfg)
			}
			if err == nil {
				t.Fatal("no error")
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error = %q, want %q", got, tt.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Line != tt.line || e.File != file {
				t.Errorf("error = %#v, want an *Error at line %d", err, tt.line)
			}
		})
	}
}

// TestNoSecretInMessages plants a secret-looking value in the env and headers
// of bad entries and files, and checks that no message shows it.
func TestNoSecretInMessages(t *testing.T) {
	const secret = "sk-PLANTED-0123456789"
	entries := []string{
		`{"url": "https://h", "headers": {"Authorization": "Bearer ` + secret + `"}, "command": "x"}`,
		`{"type": "http", "headers": {"Authorization": "Bearer ` + secret + `${"}}`,
		`{"type": "http", "url": "https://h", "headers": {"Authorization": "Bearer ${` + secret + `}"}}`,
		`{"type": "http", "url": "https://h", "headers": {"X": "` + secret + `\n", "Y": "${A:-$` + secret + `}"}}`,
		`{"type": "http", "url": "https://` + secret + `:x@h:port/"}`,
		`{"type": "http", "url": "` + secret + `"}`,
		`{"command": "x", "env": {"TOKEN": "` + secret + `${", "T2": "${` + secret + `}", "T3": "${input:` + secret + `}"}, "url": "x"}`,
		`{"command": "x", "args": ["${` + secret + `", "${` + secret + `:-x}"], "type": "sse"}`,
		`{"command": "x", "env": {"TOKEN": ["` + secret + `"], "T2": {"v": "` + secret + `"}}}`,
		`{"command": "x", "env": {"TOKEN": "` + secret + `"}, "timeout": "` + secret + `", "bogus": "` + secret + `"}`,
	}
	var all []string
	for _, e := range entries {
		in := `{"mcpServers": {"bad": ` + e + `}, "inputs": "` + secret + `"}`
		cfg, err := Parse(file, []byte(in))
		if err != nil {
			t.Fatalf("Parse(%s): %v", in, err)
		}
		if len(cfg.Rejected) != 1 {
			t.Errorf("Parse(%s): Rejected = %+v, want one", in, cfg.Rejected)
			continue
		}
		all = append(all, messages(cfg.Rejected[0].Err)...)
		all = append(all, errorStrings(cfg.Warnings)...)
		s := Server{Name: "bad", Type: HTTP, URL: "https://h", Headers: map[string]string{"X": "${" + secret}}
		all = append(all, messages(s.Validate())...)
	}
	for _, in := range []string{
		`{"mcpServers": {"bad": {"command": "x", "env": {"TOKEN": "` + secret + "\n" + `"}}}}`,
		`{"mcpServers": {"bad": {"command": "x", "env": {"TOKEN": "` + secret + `\q"}}}}`,
		`{"mcpServers": {"bad": {"command": "x", "env": {"TOKEN": ` + secret + `}}}}`,
		`{"mcpServers": {"bad": {"command": "x", "env": {"TOKEN": "` + secret + `}}}}`,
	} {
		_, err := Parse(file, []byte(in))
		if err == nil {
			t.Fatalf("Parse(%s): no error", in)
		}
		all = append(all, err.Error())
	}
	for _, m := range all {
		if strings.Contains(m, secret) || strings.Contains(m, "PLANTED") {
			t.Errorf("message shows the secret: %s", m)
		}
	}
	if len(all) < 20 {
		t.Errorf("only %d messages checked", len(all))
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		s    Server
		want []string
	}{
		{"valid stdio", Server{Name: "a", Command: "x"}, nil},
		{"valid http alias", Server{Name: "a", Type: "streamable-http", URL: "https://h"}, nil},
		{"templated url", Server{Name: "a", URL: "${MCP_URL}"}, nil},
		{"no source", Server{Name: "a"}, []string{`server "a": want a command (stdio) or a url (http, sse)`}},
		{"source", Server{Name: "a", Source: "f.json", Type: SSE, URL: "h"}, []string{`f.json: server "a": url: want an absolute http or https URL`}},
		{"empty name", Server{Command: "x"}, []string{`server "": server name must not be empty`}},
		{"timeout", Server{Name: "a", Command: "x", Timeout: ptr[int64](-1)}, []string{`server "a": timeout: must not be negative`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Validate()
			if diff := cmp.Diff(tt.want, messages(err)); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
			if err != nil && !allErrorsAre(err) {
				t.Errorf("Validate: not all *Error: %#v", err)
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "f", Line: 3, Column: 7, Problem: "bad"}, "f:3:7: bad"},
		{Error{File: "f", Server: "s", Field: "url", Problem: "bad"}, `f: server "s": url: bad`},
		{Error{File: "f", Server: "s", Problem: "bad"}, `f: server "s": bad`},
		{Error{File: "f", Problem: "bad"}, "f: bad"},
		{Error{File: "f", Field: "inputs", Problem: "bad"}, "f: inputs: bad"},
		{Error{Problem: "bad"}, "bad"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
