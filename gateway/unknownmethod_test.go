package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestUnknownMethodIsMethodNotFound: a request for a method the gateway
// does not serve gets the JSON-RPC error -32601, which names the method,
// over Streamable HTTP (stateful and stateless, legacy and modern clients)
// and over stdio; the session goes on.
func TestUnknownMethodIsMethodNotFound(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stateless bool
		stdio     bool
		version   string
	}{
		{name: "http", version: "2025-11-25"},
		{name: "http stateless", stateless: true, version: "2025-11-25"},
		{name: "http stateless modern", stateless: true, version: "2026-07-28"},
		{name: "stdio", stdio: true, version: "2025-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, g := setup(t, upstreams{"a": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("a", false)}, &Options{Stateless: tc.stateless})
			client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v"}, nil)
			if err := mcp.AddSendingCustomMethod[*mcp.PingParams, *mcp.ListToolsResult](client, "frobnicate/this"); err != nil {
				t.Fatal(err)
			}
			transport := httpTransport(t, g)
			if tc.stdio {
				transport = stdioTransport(t, g)
			}
			cs, err := client.Connect(t.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			_, err = mcp.CallCustomMethod[*mcp.PingParams, *mcp.ListToolsResult](t.Context(), cs, "frobnicate/this", &mcp.PingParams{})
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeMethodNotFound || !strings.Contains(rpcErr.Message, `"frobnicate/this"`) {
				t.Errorf("an unknown method = %v; want JSON-RPC error -32601 naming it", err)
			}
			if _, err := cs.ListTools(t.Context(), nil); err != nil {
				t.Errorf("tools/list after the unknown method: %v", err)
			}
		})
	}
}

// TestUnknownMethodOverHTTP: over Streamable HTTP, a call of an unknown
// method gets its answer with 200, as JSON; a notification of one is
// accepted and ignored, as JSON-RPC asks; what the go-sdk refuses for other
// reasons is refused as before.
func TestUnknownMethodOverHTTP(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprint("stateless=", stateless), func(t *testing.T) {
			_, g := setup(t, upstreams{"a": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("a", false)}, &Options{Stateless: stateless})
			srv := httptest.NewServer(g.Handler())
			defer srv.Close()
			defer srv.Client().CloseIdleConnections()
			header := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}, "Mcp-Protocol-Version": {"2025-11-25"}}
			post := func(body string) (int, http.Header, string) {
				t.Helper()
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header = header.Clone()
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				data, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, resp.Header, string(data)
			}
			if !stateless {
				_, h, _ := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"v"}}}`)
				header.Set("Mcp-Session-Id", h.Get("Mcp-Session-Id"))
			}
			for _, tc := range []struct {
				body, contentType, answer string
				code                      int
			}{
				{`{"jsonrpc":"2.0","id":7,"method":"frobnicate/this"}`, "application/json",
					`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"method not found: \"frobnicate/this\""}}`, http.StatusOK},
				{`{"params":{"x":1},"method":"frobnicate/this","jsonrpc":"2.0","id":"s"}`, "application/json",
					`{"jsonrpc":"2.0","id":"s","error":{"code":-32601,"message":"method not found: \"frobnicate/this\""}}`, http.StatusOK},
				{`{"jsonrpc":"2.0","method":"notifications/frobnicated"}`, "", "", http.StatusAccepted},
				{`{"jsonrpc":"2.0","id":8,"method":"tools/call"}`, "text/plain; charset=utf-8", `missing required "params"`, http.StatusBadRequest},
				{`[{"jsonrpc":"2.0","id":9,"method":"frobnicate/this"}]`, "text/plain; charset=utf-8", "batching is not supported", http.StatusBadRequest},
			} {
				code, h, answer := post(tc.body)
				if contentType := h.Get("Content-Type"); code != tc.code || contentType != tc.contentType || !strings.Contains(answer, tc.answer) {
					t.Errorf("POST %s = %d, %q, %q; want %d, %q, %q", tc.body, code, contentType, answer, tc.code, tc.contentType, tc.answer)
				}
			}
		})
	}
}

// httpTransport serves g over Streamable HTTP for the test.
func httpTransport(t *testing.T, g *Gateway) mcp.Transport {
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(srv.Client().CloseIdleConnections)
	return &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: srv.Client()}
}

// stdioTransport serves g as serve --stdio does, over a pair of pipes
// instead of stdin and stdout, until the test ends.
func stdioTransport(t *testing.T, g *Gateway) mcp.Transport {
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { g.Server().Run(ctx, &mcp.IOTransport{Reader: serverIn, Writer: serverOut}) })
	t.Cleanup(func() {
		cancel()
		clientOut.Close()
		wg.Wait()
	})
	return &mcp.IOTransport{Reader: clientIn, Writer: clientOut}
}
