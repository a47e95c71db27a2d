package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGatewayAuth: "gateway.auth" is read with its defaults; a bad one
// fails the file with the file and the field; other keys of "gateway" are
// warnings naming the field.
func TestGatewayAuth(t *testing.T) {
	cfg, err := Parse("mcp.json", []byte(`{"mcpServers": {}, "gateway": {
		"auth": {"issuer": "https://id.example.com", "audience": "https://mcp.example.com/mcp", "scopes": ["mcp", "tools:read"], "claims": {"groups": "roles"}},
		"colour": "blue"}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &GatewayAuth{Issuer: "https://id.example.com", Audience: "https://mcp.example.com/mcp", Scopes: []string{"mcp", "tools:read"}, Claims: AuthClaims{Groups: "roles"}}
	if diff := cmp.Diff(want, cfg.Gateway.Auth); diff != "" {
		t.Errorf("Gateway.Auth (-want +got):\n%s", diff)
	}
	var warnings []string
	for _, w := range cfg.Warnings {
		warnings = append(warnings, w.Error())
	}
	wantWarnings := []string{"mcp.json: gateway.colour: unknown field, ignored"}
	if diff := cmp.Diff(wantWarnings, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}

	for _, tc := range []struct{ auth, want string }{
		{`"x"`, `mcp.json: gateway.auth: invalid gateway auth setting: want an object`},
		{`{"audience": "https://m.example/mcp"}`, `mcp.json: gateway.auth.issuer: invalid gateway auth setting: missing`},
		{`{"issuer": "https://id.example.com"}`, `mcp.json: gateway.auth.audience: invalid gateway auth setting: missing`},
		{`{"issuer": "http://id.example.com", "audience": "https://m.example/mcp"}`, `gateway.auth.issuer: invalid gateway auth setting: http is allowed only on a loopback host`},
		{`{"issuer": "id.example.com", "audience": "https://m.example/mcp"}`, `gateway.auth.issuer: invalid gateway auth setting: want an absolute https URL`},
		{`{"issuer": "https://id.example.com?x=1", "audience": "https://m.example/mcp"}`, `gateway.auth.issuer: invalid gateway auth setting: want an absolute https URL`},
		{`{"issuer": "https://id.example.com", "audience": "/mcp"}`, `gateway.auth.audience: invalid gateway auth setting: want an absolute http or https URL`},
		{`{"issuer": "https://id.example.com", "audience": "https://m.example/mcp", "scope": ["mcp"]}`, `gateway.auth.scope: invalid gateway auth setting: unknown field`},
		{`{"issuer": "https://id.example.com", "audience": "https://m.example/mcp", "scopes": "mcp"}`, `gateway.auth.scopes: invalid gateway auth setting: want a list`},
		{`{"issuer": "https://id.example.com", "audience": "https://m.example/mcp", "scopes": ["a b"]}`, `gateway.auth.scopes: invalid gateway auth setting: [0]: want a scope name`},
		{`{"issuer": "https://id.example.com", "audience": "https://m.example/mcp", "claims": {"role": "r"}}`, `gateway.auth.claims.role: invalid gateway auth setting: unknown field`},
		{`{"issuer": 1, "audience": "https://m.example/mcp"}`, `gateway.auth.issuer: invalid gateway auth setting: want a string`},
	} {
		_, err := Parse("mcp.json", []byte(`{"mcpServers": {}, "gateway": {"auth": `+tc.auth+`}}`))
		if !errors.Is(err, ErrGatewayAuth) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("auth %s: %v, want ErrGatewayAuth with %q", tc.auth, err, tc.want)
		}
	}
	for _, ok := range []string{"http://127.0.0.1:4444", "http://localhost:4444/", "http://[::1]:1", "https://id.example.com/realms/x"} {
		cfg, err := Parse("mcp.json", []byte(`{"gateway": {"auth": {"issuer": "`+ok+`", "audience": "http://127.0.0.1:7777/mcp"}}}`))
		if err != nil || cfg.Gateway.Auth == nil || cfg.Gateway.Auth.Issuer != ok {
			t.Errorf("issuer %s: %v, %+v", ok, err, cfg)
		}
	}
}

// TestGatewayAuthPrecedence: the file of highest precedence that sets
// "gateway.auth" gives it whole.
func TestGatewayAuthPrecedence(t *testing.T) {
	dir := t.TempDir()
	user, project, other := filepath.Join(dir, "user.json"), filepath.Join(dir, "project.json"), filepath.Join(dir, "other.json")
	os.WriteFile(user, []byte(`{"gateway": {"auth": {"issuer": "https://a.example", "audience": "https://m.example/mcp", "scopes": ["x"]}}}`), 0o600)
	os.WriteFile(project, []byte(`{"gateway": {"auth": {"issuer": "https://b.example", "audience": "https://m.example/mcp"}}}`), 0o600)
	os.WriteFile(other, []byte(`{"gateway": {}}`), 0o600)
	cfg, err := Load(&LoadOptions{Paths: []string{user, project, other}})
	if err != nil {
		t.Fatal(err)
	}
	want := &GatewayAuth{Issuer: "https://b.example", Audience: "https://m.example/mcp"}
	if diff := cmp.Diff(want, cfg.Gateway.Auth); diff != "" {
		t.Errorf("Gateway.Auth (-want +got):\n%s", diff)
	}
	if !want.Equal(cfg.Gateway.Auth) || want.Equal(&GatewayAuth{Issuer: "https://b.example", Audience: "https://m.example/mcp", Scopes: []string{"x"}}) || want.Equal(nil) {
		t.Error("Equal is wrong")
	}
}

// TestGatewayAuthIntrospection: "gateway.auth.introspection" is read; a
// bad one fails the file with the file and the field, and a secret in the
// file is refused.
func TestGatewayAuthIntrospection(t *testing.T) {
	const base = `"issuer": "https://id.example.com", "audience": "https://m.example/mcp"`
	for _, tc := range []struct {
		in   string
		want *AuthIntrospection
	}{
		{`{"url": "https://id.example.com/oauth2/introspect", "clientId": "gw", "clientSecretEnv": "GW_SECRET"}`,
			&AuthIntrospection{URL: "https://id.example.com/oauth2/introspect", ClientID: "gw", ClientSecretEnv: "GW_SECRET"}},
		{`{"url": "http://127.0.0.1:4445/admin/oauth2/introspect"}`, &AuthIntrospection{URL: "http://127.0.0.1:4445/admin/oauth2/introspect"}},
		{`{"url": "https://id.example.com/introspect?realm=x"}`, &AuthIntrospection{URL: "https://id.example.com/introspect?realm=x"}},
	} {
		cfg, err := Parse("mcp.json", []byte(`{"gateway": {"auth": {`+base+`, "introspection": `+tc.in+`}}}`))
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, cfg.Gateway.Auth.Introspection); diff != "" {
			t.Errorf("%s: Introspection (-want +got):\n%s", tc.in, diff)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{`"x"`, `mcp.json: gateway.auth.introspection: invalid gateway auth setting: want an object with "url"`},
		{`{}`, `mcp.json: gateway.auth.introspection.url: invalid gateway auth setting: missing`},
		{`{"url": "http://id.example.com/introspect"}`, `gateway.auth.introspection.url: invalid gateway auth setting: http is allowed only on a loopback host`},
		{`{"url": "/introspect"}`, `gateway.auth.introspection.url: invalid gateway auth setting: want an absolute https URL`},
		{`{"url": "https://gw:pw@id.example.com/introspect"}`, `gateway.auth.introspection.url: invalid gateway auth setting: want an absolute https URL`},
		{`{"url": 1}`, `gateway.auth.introspection.url: invalid gateway auth setting: want a string`},
		{`{"url": "https://id.example.com/i", "clientId": "gw"}`, `gateway.auth.introspection.clientSecretEnv: invalid gateway auth setting: missing`},
		{`{"url": "https://id.example.com/i", "clientSecretEnv": "S"}`, `gateway.auth.introspection.clientId: invalid gateway auth setting: missing`},
		{`{"url": "https://id.example.com/i", "clientId": "gw", "clientSecretEnv": "not a name"}`, `gateway.auth.introspection.clientSecretEnv: invalid gateway auth setting: want the name of an environment variable`},
		{`{"url": "https://id.example.com/i", "clientId": "gw", "clientSecret": "hunter2"}`, `gateway.auth.introspection.clientSecret: invalid gateway auth setting: a secret does not go in the file`},
		{`{"url": "https://id.example.com/i", "timeout": "5s"}`, `gateway.auth.introspection.timeout: invalid gateway auth setting: unknown field`},
	} {
		_, err := Parse("mcp.json", []byte(`{"gateway": {"auth": {`+base+`, "introspection": `+tc.in+`}}}`))
		if !errors.Is(err, ErrGatewayAuth) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("introspection %s: %v, want ErrGatewayAuth with %q", tc.in, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error quotes the secret: %v", err)
		}
	}
	a := &GatewayAuth{Issuer: "https://a.example", Audience: "https://m.example/mcp", Introspection: &AuthIntrospection{URL: "https://a.example/i"}}
	b := *a
	b.Introspection = &AuthIntrospection{URL: "https://a.example/i"}
	c := *a
	c.Introspection = &AuthIntrospection{URL: "https://a.example/i", ClientID: "x", ClientSecretEnv: "X"}
	d := *a
	d.Introspection = nil
	if !a.Equal(&b) || a.Equal(&c) || a.Equal(&d) || d.Equal(a) {
		t.Error("Equal is wrong about Introspection")
	}
}

// TestGatewayPolicies: "gateway.policies" is read in order; a bad rule
// fails the file with the file, the rule's index, the field and, for a
// condition, the line and column in it.
func TestGatewayPolicies(t *testing.T) {
	cfg, err := Parse("mcp.json", []byte(`{"mcpServers": {}, "gateway": {"policies": [
		{"allow": {"servers": ["memory"]}, "when": "'eng' in identity.groups"},
		// comments are fine
		{"allow": {}, "when": "'admin' in identity.scopes"},
		{"deny": {"tools": ["*__delete*"], "prompts": [], "resources": ["file:///etc/*"]}}
	]}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []PolicyRule{
		{Servers: []string{"memory"}, When: "'eng' in identity.groups"},
		{When: "'admin' in identity.scopes"},
		{Deny: true, Tools: []string{"*__delete*"}, Prompts: []string{}, Resources: []string{"file:///etc/*"}},
	}
	if diff := cmp.Diff(want, cfg.Gateway.Policies); diff != "" {
		t.Errorf("Gateway.Policies (-want +got):\n%s", diff)
	}
	if len(cfg.Warnings) != 0 || cfg.Gateway.Auth != nil {
		t.Errorf("warnings %v, auth %v", cfg.Warnings, cfg.Gateway.Auth)
	}
	if cfg, err := Parse("mcp.json", []byte(`{"gateway": {"policies": []}}`)); err != nil || cfg.Gateway.Policies == nil {
		t.Errorf("an empty list: %v, %#v; want set and empty", err, cfg.Gateway.Policies)
	}

	for _, tc := range []struct{ policies, want string }{
		{`{}`, `mcp.json: gateway.policies: invalid gateway policy: want a list of rules`},
		{`["x"]`, `mcp.json: gateway.policies[0]: invalid gateway policy: want an object with "allow" or "deny"`},
		{`[{"when": "true"}]`, `mcp.json: gateway.policies[0]: invalid gateway policy: want "allow" or "deny"`},
		{`[{"allow": {}}, {"allow": {}, "deny": {}}]`, `mcp.json: gateway.policies[1].deny: invalid gateway policy: a rule has one of "allow" and "deny", not both`},
		{`[{"allow": {"tool": ["x"]}}]`, `mcp.json: gateway.policies[0].allow.tool: invalid gateway policy: unknown field`},
		{`[{"allow": {}, "unless": "x"}]`, `mcp.json: gateway.policies[0].unless: invalid gateway policy: unknown field`},
		{`[{"allow": []}]`, `mcp.json: gateway.policies[0].allow: invalid gateway policy: want an object of glob lists`},
		{`[{"deny": {"servers": "memory"}}]`, `mcp.json: gateway.policies[0].deny.servers: invalid gateway policy: want a list of globs`},
		{`[{"deny": {"servers": [1]}}]`, `mcp.json: gateway.policies[0].deny.servers[0]: invalid gateway policy: want a glob in a string`},
		{`[{"allow": {}}, {"deny": {"tools": ["a", ""]}}]`, `mcp.json: gateway.policies[1].deny.tools[1]: invalid gateway policy: empty glob`},
		{`[{"allow": {}, "when": 1}]`, `mcp.json: gateway.policies[0].when: invalid gateway policy: want a CEL expression in a string`},
		{`[{"allow": {}, "when": ""}]`, `mcp.json: gateway.policies[0].when: invalid gateway policy: empty`},
		{`[{"allow": {}}, {"allow": {}, "when": "identity.subject"}]`, `mcp.json: gateway.policies[1].when: invalid gateway policy: 1:1: the expression is string; want a bool`},
		{`[{"allow": {}, "when": "'eng' in identity.groups &&"}]`, `mcp.json: gateway.policies[0].when: invalid gateway policy: 1:28: Syntax error: mismatched input '<EOF>'`},
		{`[{"allow": {}, "when": "true &&\n identity.grups == []"}]`, `mcp.json: gateway.policies[0].when: invalid gateway policy: 2:10: undefined field 'grups'`},
	} {
		_, err := Parse("mcp.json", []byte(`{"gateway": {"policies": `+tc.policies+`}}`))
		if !errors.Is(err, ErrGatewayPolicy) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("policies %s:\n%v\nwant ErrGatewayPolicy with %q", tc.policies, err, tc.want)
		}
	}
}

// TestGatewayPoliciesPrecedence: the file of highest precedence that sets
// "gateway.policies" gives them whole, and "auth" apart from them.
func TestGatewayPoliciesPrecedence(t *testing.T) {
	dir := t.TempDir()
	user, project, other := filepath.Join(dir, "user.json"), filepath.Join(dir, "project.json"), filepath.Join(dir, "other.json")
	os.WriteFile(user, []byte(`{"gateway": {"auth": {"issuer": "https://a.example", "audience": "https://m.example/mcp"}, "policies": [{"allow": {}}]}}`), 0o600)
	os.WriteFile(project, []byte(`{"gateway": {"policies": [{"deny": {"servers": ["x"]}}]}}`), 0o600)
	os.WriteFile(other, []byte(`{"gateway": {}}`), 0o600)
	cfg, err := Load(&LoadOptions{Paths: []string{user, project, other}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]PolicyRule{{Deny: true, Servers: []string{"x"}}}, cfg.Gateway.Policies); diff != "" {
		t.Errorf("Gateway.Policies (-want +got):\n%s", diff)
	}
	if cfg.Gateway.Auth == nil || cfg.Gateway.Auth.Issuer != "https://a.example" {
		t.Errorf("Gateway.Auth = %+v, want the user file's", cfg.Gateway.Auth)
	}
}

// TestGatewayAudit: "gateway.audit" is read; a bad one fails the file with
// the file and the field; a later file's replaces an earlier one's.
func TestGatewayAudit(t *testing.T) {
	cfg, err := Parse("mcp.json", []byte(`{"mcpServers": {}, "gateway": {"audit": {"file": "/var/log/a.jsonl"}}}`))
	if err != nil || cfg.Gateway.Audit == nil || len(cfg.Warnings) != 0 {
		t.Fatalf("Parse = %+v, %v", cfg, err)
	}
	if want := (GatewayAudit{File: "/var/log/a.jsonl", MaxSizeMB: DefaultAuditMaxSizeMB, MaxFiles: DefaultAuditMaxFiles}); *cfg.Gateway.Audit != want {
		t.Errorf("Gateway.Audit = %+v, want %+v", *cfg.Gateway.Audit, want)
	}
	cfg, err = Parse("mcp.json", []byte(`{"gateway": {"audit": {"file": "a", "maxSizeMB": 0, "maxFiles": 3}}}`))
	if err != nil || *cfg.Gateway.Audit != (GatewayAudit{File: "a", MaxSizeMB: 0, MaxFiles: 3}) {
		t.Errorf("maxSizeMB 0, maxFiles 3: %+v, %v", cfg.Gateway.Audit, err)
	}
	for _, tc := range []struct{ audit, want string }{
		{`"x"`, `mcp.json: gateway.audit: invalid gateway audit setting: want an object`},
		{`{}`, `mcp.json: gateway.audit.file: invalid gateway audit setting: missing`},
		{`{"file": ""}`, `mcp.json: gateway.audit.file: invalid gateway audit setting: want the log's path`},
		{`{"file": 1}`, `mcp.json: gateway.audit.file: invalid gateway audit setting: want the log's path`},
		{`{"file": "-", "rotate": true}`, `mcp.json: gateway.audit.rotate: invalid gateway audit setting: unknown field`},
		{`{"file": "a", "maxSizeMB": -1}`, `mcp.json: gateway.audit.maxSizeMB: invalid gateway audit setting: want a whole number of MiB from 0`},
		{`{"file": "a", "maxSizeMB": 1.5}`, `mcp.json: gateway.audit.maxSizeMB: invalid gateway audit setting: want a whole number`},
		{`{"file": "a", "maxSizeMB": "100"}`, `mcp.json: gateway.audit.maxSizeMB: invalid gateway audit setting: want a whole number`},
		{`{"file": "a", "maxSizeMB": 2000000}`, `mcp.json: gateway.audit.maxSizeMB: invalid gateway audit setting: want a whole number`},
		{`{"file": "a", "maxFiles": 0}`, `mcp.json: gateway.audit.maxFiles: invalid gateway audit setting: want a whole number of rotated files to keep, from 1 to 1000`},
		{`{"file": "a", "maxFiles": 1001}`, `mcp.json: gateway.audit.maxFiles: invalid gateway audit setting: want a whole number`},
	} {
		_, err := Parse("mcp.json", []byte(`{"gateway": {"audit": `+tc.audit+`}}`))
		if !errors.Is(err, ErrGatewayAudit) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("audit %s: %v, want ErrGatewayAudit with %q", tc.audit, err, tc.want)
		}
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	if err := os.WriteFile(a, []byte(`{"gateway": {"audit": {"file": "a.jsonl"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(`{"gateway": {"audit": {"file": "-"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load(&LoadOptions{Paths: []string{a, b}})
	if err != nil || cfg.Gateway.Audit == nil || cfg.Gateway.Audit.File != "-" {
		t.Errorf("Load(a, b) = %+v, %v; want b's audit", cfg, err)
	}
}

// TestGatewayAuthAdmin: "gateway.auth.admin" is a CEL condition checked at
// load: a bad one fails the file with the field and the position.
func TestGatewayAuthAdmin(t *testing.T) {
	const base = `"issuer": "https://id.example.com", "audience": "https://m.example/mcp"`
	cfg, err := Parse("mcp.json", []byte(`{"gateway": {"auth": {`+base+`, "admin": "'ops' in identity.groups"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Gateway.Auth.Admin; got != "'ops' in identity.groups" {
		t.Errorf("admin = %q", got)
	}
	for _, tc := range []struct{ in, want string }{
		{`""`, `mcp.json: gateway.auth.admin: invalid gateway auth setting: want a CEL condition over identity`},
		{`1`, `mcp.json: gateway.auth.admin: invalid gateway auth setting: want a string`},
		{`"'ops' in identity.grups"`, `mcp.json: gateway.auth.admin: invalid gateway auth setting: 1:18:`},
		{`"identity.subject +"`, `mcp.json: gateway.auth.admin: invalid gateway auth setting: 1:`},
	} {
		_, err := Parse("mcp.json", []byte(`{"gateway": {"auth": {`+base+`, "admin": `+tc.in+`}}}`))
		if !errors.Is(err, ErrGatewayAuth) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("admin %s: %v, want ErrGatewayAuth with %q", tc.in, err, tc.want)
		}
	}
}

// TestAuditPayloadsField: a server's "auditPayloads" marks it; a value
// that is not a boolean rejects the server, naming the field.
func TestAuditPayloadsField(t *testing.T) {
	cfg, err := Parse("mcp.json", []byte(`{"mcpServers": {"a": {"command": "x", "auditPayloads": true}, "b": {"command": "y"}}}`))
	if err != nil || len(cfg.Servers) != 2 || !cfg.Servers[0].AuditPayloads || cfg.Servers[1].AuditPayloads || len(cfg.Warnings) != 0 {
		t.Fatalf("Parse = %+v, %v", cfg, err)
	}
	cfg, err = Parse("mcp.json", []byte(`{"mcpServers": {"a": {"command": "x", "auditPayloads": "yes"}}}`))
	if err != nil || len(cfg.Rejected) != 1 || !strings.Contains(cfg.Rejected[0].Err.Error(), "auditPayloads: want true or false") {
		t.Errorf("auditPayloads \"yes\": rejected %v, %v", cfg.Rejected, err)
	}
}

// TestGatewayLimits: "gateway.limits" is read with its defaults; a bad one
// fails the file with the file and the field, and never quotes a password;
// a later file's replaces an earlier one's.
func TestGatewayLimits(t *testing.T) {
	cfg, err := Parse("mcp.json", []byte(`{"mcpServers": {}, "gateway": {"limits": {
		"perIdentity": {"rate": 10, "burst": 20},
		"perServer": {"rate": 0.5, "servers": {"memory": {"rate": 2.5}}},
		"redis": {"url": "redis://redis:6379/0", "passwordEnv": "REDIS_PASSWORD"}}}}`))
	if err != nil || len(cfg.Warnings) != 0 {
		t.Fatalf("Parse = %+v, %v", cfg, err)
	}
	want := &GatewayLimits{
		PerIdentity: &RateLimit{Rate: 10, Burst: 20},
		PerServer:   &ServerLimits{Default: RateLimit{Rate: 0.5, Burst: 1}, Servers: map[string]RateLimit{"memory": {Rate: 2.5, Burst: 3}}},
		Redis:       &LimitsRedis{URL: "redis://redis:6379/0", PasswordEnv: "REDIS_PASSWORD"},
	}
	if diff := cmp.Diff(want, cfg.Gateway.Limits); diff != "" {
		t.Errorf("Gateway.Limits (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ limits, want string }{
		{`"x"`, `mcp.json: gateway.limits: invalid gateway limits setting: want an object`},
		{`{"perUser": {}}`, `mcp.json: gateway.limits.perUser: invalid gateway limits setting: unknown field`},
		{`{"perIdentity": {}}`, `mcp.json: gateway.limits.perIdentity.rate: invalid gateway limits setting: missing`},
		{`{"perIdentity": {"burst": 3}}`, `mcp.json: gateway.limits.perIdentity.rate: invalid gateway limits setting: missing; "burst" needs a rate`},
		{`{"perIdentity": {"rate": 0}}`, `mcp.json: gateway.limits.perIdentity.rate: invalid gateway limits setting: want a positive number`},
		{`{"perIdentity": {"rate": -1}}`, `gateway.limits.perIdentity.rate: invalid gateway limits setting: want a positive number`},
		{`{"perIdentity": {"rate": "10"}}`, `gateway.limits.perIdentity.rate: invalid gateway limits setting: want a positive number`},
		{`{"perIdentity": {"rate": 10, "burst": 0}}`, `gateway.limits.perIdentity.burst: invalid gateway limits setting: want a positive whole number`},
		{`{"perIdentity": {"rate": 10, "burst": 2.5}}`, `gateway.limits.perIdentity.burst: invalid gateway limits setting: want a positive whole number`},
		{`{"perIdentity": {"rate": 10, "servers": {}}}`, `gateway.limits.perIdentity.servers: invalid gateway limits setting: unknown field`},
		{`{"perServer": {}}`, `gateway.limits.perServer.rate: invalid gateway limits setting: missing`},
		{`{"perServer": {"servers": []}}`, `gateway.limits.perServer.servers: invalid gateway limits setting: want an object of server names`},
		{`{"perServer": {"servers": {"memory": {"burst": 1}}}}`, `gateway.limits.perServer.servers.memory.rate: invalid gateway limits setting: missing`},
		{`{"redis": {}}`, `gateway.limits.redis.url: invalid gateway limits setting: missing`},
		{`{"redis": {"url": "http://redis:6379"}}`, `gateway.limits.redis.url: invalid gateway limits setting: want redis://host:port/db`},
		{`{"redis": {"url": "redis://redis:6379/x"}}`, `gateway.limits.redis.url: invalid gateway limits setting: want redis://host:port/db`},
		{`{"redis": {"url": "redis://:hunter2@redis:6379/0"}}`, `gateway.limits.redis.url: invalid gateway limits setting: a password does not go in the file`},
		{`{"redis": {"url": "redis://redis:6379", "password": "hunter2"}}`, `gateway.limits.redis.password: invalid gateway limits setting: a password does not go in the file`},
		{`{"redis": {"url": "redis://redis:6379", "passwordEnv": "$X"}}`, `gateway.limits.redis.passwordEnv: invalid gateway limits setting: want the name of an environment variable`},
	} {
		_, err := Parse("mcp.json", []byte(`{"gateway": {"limits": `+tc.limits+`}}`))
		if !errors.Is(err, ErrGatewayLimits) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("limits %s: %v, want ErrGatewayLimits with %q", tc.limits, err, tc.want)
		}
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	if err := os.WriteFile(a, []byte(`{"gateway": {"limits": {"perIdentity": {"rate": 1}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(`{"gateway": {"limits": {"perServer": {"rate": 2}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load(&LoadOptions{Paths: []string{a, b}})
	if err != nil || cfg.Gateway.Limits == nil || cfg.Gateway.Limits.PerIdentity != nil || cfg.Gateway.Limits.PerServer == nil {
		t.Errorf("Load(a, b) = %+v, %v; want b's limits", cfg, err)
	}
}
