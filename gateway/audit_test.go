package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
