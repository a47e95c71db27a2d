package gateway

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestCallOfAServerThatNeverConnected: a tool of a server that never
// connected, which the gateway never listed, fails as a call to any
// unavailable server does: an error result that names the server, its
// state and why, with no URL or address; never "unknown tool". A tool that
// no server may own is unknown.
func TestCallOfAServerThatNeverConnected(t *testing.T) {
	remote := config.Server{Name: "remote", Type: config.HTTP, URL: "http://127.0.0.1:1/mcp?key=k3y"}
	_, g := start(t, []config.Server{remote}, &switchboard.Options{Cache: switchboard.CacheOff}, nil)
	cs := client(t, g, nil)

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "remote__search", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("remote__search = %v; want an error result", err)
	}
	text := mcptest.Text(res)
	for _, want := range []string{`server "remote"`, `call tool "remote__search"`, "failed; last error: ", "connection refused"} {
		if !res.IsError || !strings.Contains(text, want) {
			t.Errorf("remote__search = %q (isError %v); want an error result with %q", text, res.IsError, want)
		}
	}
	for _, leak := range []string{"127.0.0.1", "k3y", "http://", "unknown tool"} {
		if strings.Contains(text, leak) {
			t.Errorf("remote__search = %q; it shows %q", text, leak)
		}
	}

	_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nobody__search"})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || rpcErr.Message != `unknown tool "nobody__search"` {
		t.Errorf("a tool no server owns = %v; want the unknown tool error", err)
	}
}

// TestCallWaitsForAServerMakingItsFirstConnection: a tool of a server
// still making its first connection, with nothing listed yet, waits for
// it, as the library's CallTool does, and runs.
func TestCallWaitsForAServerMakingItsFirstConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// It connects after the gateway's handshake, which waits for
		// servers making their first connection no longer than the
		// startup gate.
		slow := mcptest.NewServer(mcptest.Script{StartDelay: 10 * time.Second})
		t.Cleanup(func() { slow.Close() })
		m := switchboard.New(&config.Config{Servers: []config.Server{entry("slow", false)}},
			&switchboard.Options{Cache: switchboard.CacheOff, Dial: upstreams{"slow": slow}.dial})
		t.Cleanup(func() { m.Close() })
		if err := m.Connect(t.Context()); err != nil { // returns at the startup gate
			t.Fatal(err)
		}
		g := New(m, nil)
		t.Cleanup(func() { g.Close() })
		cs := client(t, g, nil)
		if _, ok := m.Lookup("slow__echo"); ok {
			t.Fatal("the server has listed its tools already: nothing to wait for")
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "slow__echo", Arguments: map[string]any{"a": 1}})
		if err != nil || res.IsError || mcptest.Text(res) != `{"a":1}` {
			t.Errorf("slow__echo while the server connects = %v, %v; want it to wait and run", res, err)
		}
	})
}

// TestArgumentErrorsNameTheToolAndTheArgument: arguments that the gateway
// refuses, or that the server refuses with -32602 without naming the tool,
// are named by the server and the tool; the gateway's own name the
// argument too.
func TestArgumentErrorsNameTheToolAndTheArgument(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []any{"text"}}
	ups := upstreams{"m": mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{
		{Name: "say", InputSchema: schema},
		{Name: "picky", Behavior: mcptest.InvalidParams},
		// The server's "Invalid params" names this one: it goes unchanged.
		{Name: "params", Behavior: mcptest.InvalidParams},
		// And not this one, whose name is only a part of a word of it.
		{Name: "id", Behavior: mcptest.InvalidParams},
	}})}
	_, g := setup(t, ups, []config.Server{entry("m", false)}, nil)
	cs := client(t, g, nil)

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "m__say", Arguments: map[string]any{}})
	if want := `switchboard: server "m": call tool "say": invalid arguments: missing required argument "text"`; err != nil || !res.IsError || mcptest.Text(res) != want {
		t.Errorf("m__say without text = %v, %v; want the error result %q", res, err, want)
	}
	for name, want := range map[string]string{
		"m__picky":  `server "m": call tool "picky": Invalid params`,
		"m__params": "Invalid params",
		"m__id":     `server "m": call tool "id": Invalid params`,
	} {
		_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || rpcErr.Message != want {
			t.Errorf("%s = %v; want the server's -32602 as %q", name, err, want)
		}
	}
}

// TestStderrStaysOffTheClient: what a server that failed wrote to stderr
// shows in its status, not in the errors its clients get.
func TestStderrStaysOffTheClient(t *testing.T) {
	const canary = "Error: canary-7f3e is not set"
	crashy := config.Server{Name: "crashy", Command: "/bin/sh", Args: []string{"-c", "echo '" + canary + "' >&2; exit 3"}}
	m, g := start(t, []config.Server{crashy}, &switchboard.Options{Cache: switchboard.CacheOff}, nil)
	if st := m.Status()[0]; !strings.Contains(st.ErrorText(), canary) {
		t.Errorf("status error = %q; want the server's stderr in it", st.ErrorText())
	}
	cs := client(t, g, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "crashy__search", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(mcptest.Text(res), `server "crashy"`) || !strings.Contains(mcptest.Text(res), "exited with status 3") {
		t.Fatalf("crashy__search = %v, %q; want an error result that says the server exited", err, mcptest.Text(res))
	}
	if strings.Contains(mcptest.Text(res), "canary") {
		t.Errorf("crashy__search = %q; it shows the server's stderr", mcptest.Text(res))
	}

	err = protocolError(t.Context(), errors.New(`server "s": get prompt "p": EOF; stderr: `+canary))
	if want := `switchboard: server "s": get prompt "p": EOF`; err.Error() != want {
		t.Errorf("protocolError = %q, want %q", err, want)
	}
}
