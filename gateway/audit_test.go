package gateway

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/audit"
)

// TestAuditLog: the gateway writes a line for each tools/call, ok or error,
// and for each request a policy refuses, denied, with the caller's
// identity and session and never its arguments; the log verifies.
func TestAuditLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := OpenAuditLog(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, connect := auditedPolicyGateway(t, nil, log)
	alice := connect("alice", "eng")
	if _, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "mem__echo", Arguments: map[string]any{"secret": "s3cr3t"}}); err != nil {
		t.Fatal(err)
	}
	if res, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "mem__fail", Arguments: map[string]any{}}); err != nil || !res.IsError {
		t.Fatalf("mem__fail: %v, %v", res, err)
	}
	if _, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "ops__echo", Arguments: map[string]any{}}); err == nil {
		t.Fatal("ops__echo: no error")
	}
	if _, err := alice.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "ops__ops_prompt"}); err == nil {
		t.Fatal("ops__ops_prompt: no error")
	}
	if _, err := alice.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "ops://doc"}); err == nil {
		t.Fatal("ops://doc: no error")
	}
	alice.Close() // before the log's Close: the lines are all queued
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := VerifyAuditLog(f); n != 5 || err != nil {
		t.Fatalf("VerifyAuditLog = %d, %v; want 5, nil", n, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cr3t") || strings.Contains(string(b), "secret") {
		t.Errorf("the log holds the arguments:\n%s", b)
	}
	want := []map[string]any{
		{"method": "tools/call", "tool": "mem__echo", "server": "mem", "outcome": "ok"},
		{"method": "tools/call", "tool": "mem__fail", "server": "mem", "outcome": "error", "errorClass": "tool_error"},
		{"method": "tools/call", "tool": "ops__echo", "server": "ops", "outcome": "denied", "errorClass": "not_permitted"},
		{"method": "prompts/get", "prompt": "ops__ops_prompt", "server": "ops", "outcome": "denied", "errorClass": "not_permitted"},
		{"method": "resources/read", "uri": "ops://doc", "outcome": "denied", "errorClass": "not_permitted"},
	}
	for i, line := range strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n") {
		var got map[string]any
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range want[i] {
			if got[k] != v {
				t.Errorf("line %d: %s = %v, want %v (%s)", i+1, k, got[k], v, line)
			}
		}
		if got["subject"] != "alice" || got["session"] == "" || got["session"] == nil {
			t.Errorf("line %d: subject %v, session %v", i+1, got["subject"], got["session"])
		}
		if _, ok := got["errorClass"]; ok != (got["outcome"] != "ok") {
			t.Errorf("line %d: errorClass %v with outcome %v", i+1, got["errorClass"], got["outcome"])
		}
	}
}

// auditLines closes log and returns its lines, decoded, after checking
// that its chain is intact.
func auditLines(t *testing.T, path string, log *AuditLog) (raw string, lines []map[string]any) {
	t.Helper()
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := VerifyAuditLog(strings.NewReader(string(b))); err != nil {
		t.Fatalf("VerifyAuditLog = %d, %v", n, err)
	}
	for _, line := range strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n") {
		var got map[string]any
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, got)
	}
	return string(b), lines
}

// TestAuditLogEveryMethod: prompts/get, resources/read,
// completion/complete, resources/subscribe and unsubscribe each get a line,
// ok (with a duration) or denied, naming the server; a call through
// call_tool gets a line naming the tool it called and its server.
func TestAuditLogEveryMethod(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := OpenAuditLog(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, connect := auditedPolicyGateway(t, &config.ToolSearch{Mode: config.ToolSearchOn}, log)
	alice := connect("alice", "eng")
	ctx := t.Context()
	if _, err := alice.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mem__mem_prompt"}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://doc"}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "mem__mem_prompt"}, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "ops__ops_prompt"}, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "x"}}); err == nil {
		t.Fatal("complete of ops__ops_prompt: no error")
	}
	if err := alice.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://doc"}); err != nil {
		t.Fatal(err)
	}
	if err := alice.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "mem://doc"}); err != nil {
		t.Fatal(err)
	}
	if err := alice.Subscribe(ctx, &mcp.SubscribeParams{URI: "ops://doc"}); err == nil {
		t.Fatal("subscribe to ops://doc: no error")
	}
	if _, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": "mem__echo", "arguments": map[string]any{}}}); err != nil {
		t.Fatal(err)
	}
	alice.Close()
	_, lines := auditLines(t, path, log)
	want := []map[string]any{
		{"method": "prompts/get", "prompt": "mem__mem_prompt", "server": "mem", "outcome": "ok"},
		{"method": "resources/read", "uri": "mem://doc", "server": "mem", "outcome": "ok"},
		{"method": "completion/complete", "prompt": "mem__mem_prompt", "server": "mem", "outcome": "ok"},
		{"method": "completion/complete", "prompt": "ops__ops_prompt", "server": "ops", "outcome": "denied", "errorClass": "not_permitted"},
		{"method": "resources/subscribe", "uri": "mem://doc", "server": "mem", "outcome": "ok"},
		{"method": "resources/unsubscribe", "uri": "mem://doc", "server": "mem", "outcome": "ok"},
		{"method": "resources/subscribe", "uri": "ops://doc", "server": "ops", "outcome": "denied", "errorClass": "not_permitted"},
		{"method": "tools/call", "tool": "mem__echo", "server": "mem", "outcome": "ok"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d: %v", len(lines), len(want), lines)
	}
	for i, got := range lines {
		for k, v := range want[i] {
			if got[k] != v {
				t.Errorf("line %d: %s = %v, want %v (%v)", i+1, k, got[k], v, got)
			}
		}
		if _, ok := got["durationMs"].(float64); !ok || got["subject"] != "alice" {
			t.Errorf("line %d: durationMs %v, subject %v", i+1, got["durationMs"], got["subject"])
		}
		if got["arguments"] != nil || got["result"] != nil {
			t.Errorf("line %d holds a payload of a server not marked for it: %v", i+1, got)
		}
	}
}

// TestAuditPayloads: a server marked auditPayloads gets its arguments and
// result in its lines, redacted; an unmarked server's never appear.
func TestAuditPayloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := OpenAuditLog(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, connect := auditedPolicyGateway(t, nil, log, func(s *config.Server) { s.AuditPayloads = s.Name == "mem" })
	bob := connect("bob", "admin")
	ctx := t.Context()
	args := map[string]any{"password": "p4ssw0rd-value", "note": "Bearer abcdefghijklmnopqrstuvwxyz", "city": "Lisbon"}
	if _, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "mem__echo", Arguments: args}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "mem__echo", Arguments: map[string]any{"long": strings.Repeat("x", 1000)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "ops__echo", Arguments: map[string]any{"q": "unmarked-value-42"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ops__ops_prompt", Arguments: map[string]string{"who": "unmarked-prompt-arg"}}); err != nil {
		t.Fatal(err)
	}
	bob.Close()
	raw, lines := auditLines(t, path, log)
	for _, secret := range []string{"p4ssw0rd-value", "abcdefghijklmnopqrstuvwxyz", "unmarked-value-42", "unmarked-prompt-arg", strings.Repeat("x", 257)} {
		if strings.Contains(raw, secret) {
			t.Errorf("the log holds %q:\n%s", secret, raw)
		}
	}
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4", len(lines))
	}
	gotArgs, _ := lines[0]["arguments"].(map[string]any)
	if gotArgs["password"] != "[redacted]" || gotArgs["note"] != "[redacted]" || gotArgs["city"] != "Lisbon" {
		t.Errorf("mem__echo's arguments: %v", lines[0]["arguments"])
	}
	result, _ := lines[0]["result"].(map[string]any)
	if text, _ := result["text"].(string); text != `{"city":"Lisbon","note":"[redacted]","password":"[redacted]"}` || result["isError"] != nil {
		t.Errorf("mem__echo's result: %v", lines[0]["result"])
	}
	long, _ := lines[1]["arguments"].(map[string]any)
	result, _ = lines[1]["result"].(map[string]any)
	if !strings.HasSuffix(fmt.Sprint(long["long"]), "…[cut: 1000 bytes]") || !strings.Contains(fmt.Sprint(result["text"]), "…[cut: ") {
		t.Errorf("mem__echo of a long string: %v", lines[1])
	}
	for _, l := range lines[2:] {
		if _, ok := l["arguments"]; ok {
			t.Errorf("a line of the unmarked server ops holds arguments: %v", l)
		}
		if _, ok := l["result"]; ok {
			t.Errorf("a line of the unmarked server ops holds a result: %v", l)
		}
	}
}

// TestAuditResultRedaction: a secret in a result's text is redacted
// whatever the shape of the result: JSON as one of several text items (of
// a tool, a prompt, a resource), JSON too long to parse, KEY=value and
// KEY: value in plain text, and "KEY": "value" in text that is not JSON.
func TestAuditResultRedaction(t *testing.T) {
	texts := func(ss ...string) *mcp.CallToolResult {
		r := &mcp.CallToolResult{}
		for _, s := range ss {
			r.Content = append(r.Content, &mcp.TextContent{Text: s})
		}
		return r
	}
	for name, result := range map[string]any{
		"two JSON items": texts(`{"user":"alice"}`, `{"password":"hunter2"}`),
		"prompt": &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: `{"a":1}`}},
			{Role: "user", Content: &mcp.TextContent{Text: `{"api_key":"hunter2"}`}},
		}},
		"resource":      &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "x:a", Text: `[1]`}, {URI: "x:b", Text: `{"token":"hunter2"}`}}},
		"JSON > 64 KiB": texts(`{"password":"hunter2","filler":"` + strings.Repeat("f", 70<<10) + `"}`),
		"KEY=value":     texts("connecting with DB_PASSWORD=hunter2 to db"),
		"KEY: value":    texts("user: alice\npassword: hunter2\n"),
		"not JSON":      texts(`{"user": "alice", "password": "hunter2", `),
		"single quotes": texts(`secret='hunter2'`),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			log, err := OpenAuditLog(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			log.Record(audit.Entry{Server: "mem", Method: "tools/call", Outcome: audit.OK, Result: auditResult(result)})
			raw, lines := auditLines(t, path, log)
			if strings.Contains(raw, "hunter2") {
				t.Errorf("the log holds hunter2:\n%s", raw)
			}
			if res, _ := lines[0]["result"].(map[string]any); !strings.Contains(fmt.Sprint(res["text"]), "[redacted]") {
				t.Errorf("result %v: no [redacted]", lines[0]["result"])
			}
		})
	}
}

// TestAuditLongNames: a client's 2 MiB URI (subscribe) and tool name (an
// unknown tool) are written cut, so that the log verifies and opens again
// (as the gateway does on its next start).
func TestAuditLongNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := OpenAuditLog(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, connect := auditedPolicyGateway(t, nil, log)
	bob := connect("bob", "admin")
	long := strings.Repeat("u", 2<<20)
	_ = bob.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "mem://" + long}) // its outcome is not the point
	_, _ = bob.CallTool(t.Context(), &mcp.CallToolParams{Name: "mem__" + long})
	bob.Close()
	raw, lines := auditLines(t, path, log)
	if len(lines) != 2 || len(raw) > 2*audit.MaxField+2000 {
		t.Fatalf("%d lines, %d bytes: want 2 lines, cut", len(lines), len(raw))
	}
	for i, want := range map[int]struct{ key, sent string }{0: {"uri", "mem://" + long}, 1: {"tool", "mem__" + long}} {
		if v, _ := lines[i][want.key].(string); !strings.HasSuffix(v, fmt.Sprintf("…[cut: %d bytes]", len(want.sent))) {
			t.Errorf("line %d: %s = %.40q...; want it cut", i+1, want.key, v)
		}
	}
	reopened, err := OpenAuditLog(path, nil)
	if err != nil {
		t.Fatalf("OpenAuditLog after a long URI: %v", err)
	}
	if err := reopened.Close(); err != nil {
		t.Fatal(err)
	}
}
