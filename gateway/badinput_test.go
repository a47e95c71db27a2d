package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

var badInputScript = mcptest.Script{
	Tools:     []mcptest.ToolSpec{{Name: "wait", Behavior: mcptest.Hang}, {Name: "echo", Behavior: mcptest.Echo}},
	Prompts:   []mcptest.PromptSpec{{Name: "greet"}},
	Resources: []mcptest.ResourceSpec{{URI: "mem://a", Name: "a"}},
	Templates: []mcptest.TemplateSpec{{URITemplate: "mem://t/{id}", Name: "t"}},
}

// wantRPCError checks that err is a JSON-RPC error with code, whose message
// names what is wrong.
func wantRPCError(t *testing.T, what string, err error, code int64, names string) {
	t.Helper()
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) {
		t.Errorf("%s: error %v, want a JSON-RPC error", what, err)
		return
	}
	if rpcErr.Code != code || !strings.Contains(rpcErr.Message, names) {
		t.Errorf("%s: error %d %q, want code %d naming %q", what, rpcErr.Code, rpcErr.Message, code, names)
	}
}

// TestUnknownNamesGetClearErrors: a prompt, resource, template or
// completion reference that no server offers gets a JSON-RPC error that
// names it, and the session goes on.
func TestUnknownNamesGetClearErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, g := setup(t, upstreams{"s": mcptest.NewServer(badInputScript)}, []config.Server{entry("s", false)}, nil)
		cs := client(t, g, nil)
		ctx := t.Context()
		_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "s__nope"})
		wantRPCError(t, "prompts/get", err, jsonrpc.CodeInvalidParams, `"s__nope"`)
		_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://nope"})
		wantRPCError(t, "resources/read", err, jsonrpc.CodeInvalidParams, "mem://nope")
		_, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "s__nope"}, Argument: mcp.CompleteParamsArgument{Name: "x"}})
		wantRPCError(t, "completion/complete of a prompt", err, jsonrpc.CodeInvalidParams, `"s__nope"`)
		_, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "nope://{x}"}, Argument: mcp.CompleteParamsArgument{Name: "x"}})
		wantRPCError(t, "completion/complete of a template", err, jsonrpc.CodeInvalidParams, "nope://{x}")
		if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "s__greet"}); err != nil {
			t.Errorf("the session after the errors: %v", err)
		}
	})
}

// TestReusedProgressTokenIsRefused: a progress token already in use by a
// request in flight on the session is refused, naming it; the same token on
// another session is that session's own.
func TestReusedProgressTokenIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(badInputScript)
		_, g := setup(t, upstreams{"s": srv}, []config.Server{entry("s", false)}, nil)
		cs, other := client(t, g, nil), client(t, g, nil)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		withToken := func(name string) *mcp.CallToolParams {
			p := &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "hi"}}
			p.SetProgressToken("t1")
			return p
		}
		go cs.CallTool(ctx, withToken("s__wait"))
		synctest.Wait()
		_, err := cs.CallTool(t.Context(), withToken("s__echo"))
		wantRPCError(t, "a second call with the token", err, jsonrpc.CodeInvalidParams, `"t1"`)
		if res, err := other.CallTool(t.Context(), withToken("s__echo")); err != nil || res.IsError {
			t.Errorf("another session's call with the same token: %v %v", res, err)
		}
		cancel()
		synctest.Wait()
		if res, err := cs.CallTool(t.Context(), withToken("s__echo")); err != nil || res.IsError {
			t.Errorf("the token once its call ended: %v %v", res, err)
		}
		if c := srv.Counts().ByTool; c["echo"] != 2 {
			t.Errorf("the server ran echo %d times, want 2: the refused call must not reach it", c["echo"])
		}
	})
}

// TestStrayAnswerIsIgnored: an answer to a request the gateway never sent
// cannot be answered (JSON-RPC answers no response); it is dropped, and the
// session goes on.
func TestStrayAnswerIsIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, g := setup(t, upstreams{"s": mcptest.NewServer(badInputScript)}, []config.Server{entry("s", false)}, nil)
		serverEnd, clientEnd := net.Pipe()
		ss, err := g.Server().Connect(t.Context(), &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Wait()
		defer clientEnd.Close()
		dec := json.NewDecoder(clientEnd)
		send := func(msg string) {
			t.Helper()
			if _, err := clientEnd.Write([]byte(msg + "\n")); err != nil {
				t.Fatal(err)
			}
		}
		receive := func() map[string]any {
			t.Helper()
			var msg map[string]any
			if err := dec.Decode(&msg); err != nil {
				t.Fatal(err)
			}
			return msg
		}
		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
		receive()
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		send(`{"jsonrpc":"2.0","id":77,"result":{"model":"m","role":"assistant","content":{"type":"text","text":"stray"}}}`)
		send(`{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"stray"}}`)
		send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__echo","arguments":{"text":"still here"}}}`)
		msg := receive()
		if msg["id"] != float64(2) || msg["result"] == nil {
			t.Errorf("after stray answers, the call got %v", msg)
		}
	})
}
