//lint:file-ignore SA1019 The tests exercise sampling and logging, which the gateway forwards.

package gateway

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// legacy is the revision on which a server sends a client requests while
// it serves one (sampling, say), and logs and progress reach the caller;
// from 2026-07-28 it asks in its result (multi round-trip requests: see
// TestInputRequestsPassThrough).
const legacy = "2025-11-25"

var passthroughScript = mcptest.Script{
	Tools: []mcptest.ToolSpec{{Name: "ask", Behavior: mcptest.Sample}, {Name: "work", Behavior: mcptest.Progress}},
}

// serve is setup with one server, s, running script for real: over
// Streamable HTTP behind a listener ("http"), or as a child process over
// stdio ("stdio").
func serve(t *testing.T, transport string, script mcptest.Script) (*switchboard.Manager, *Gateway) {
	t.Helper()
	return serveAt(t, transport, legacy, script, nil)
}

// serveModern is serve, with the server on revision 2026-07-28.
func serveModern(t *testing.T, transport string, script mcptest.Script) (*switchboard.Manager, *Gateway) {
	t.Helper()
	return serveAt(t, transport, "2026-07-28", script, nil)
}

// serveAt is serve, with the server on revision version ("": the
// default), and the gateway's options.
func serveAt(t *testing.T, transport, version string, script mcptest.Script, opts *Options) (*switchboard.Manager, *Gateway) {
	t.Helper()
	srv := config.Server{Name: "s", ProtocolVersion: version}
	switch transport {
	case "http":
		s := mcptest.NewServer(script)
		hs, err := mcptest.StartHTTP(s)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			s.Close()
			hs.Close()
		})
		srv.URL = hs.URL
		if version >= "2026-07-28" {
			srv.URL = hs.StatelessURL // the era's own handler
		}
	case "stdio":
		srv.Command, srv.Args, srv.Env = mcptest.StdioCommand(script)
	default:
		t.Fatalf("unknown transport %q", transport)
	}
	return start(t, []config.Server{srv}, &switchboard.Options{Cache: switchboard.CacheOff}, opts)
}

// transports are the ways serve runs a server.
var transports = []string{"http", "stdio"}

// legacyClient is client, on the legacy protocol: from revision
// 2026-07-28 a server cannot send a client requests while it serves one.
func legacyClient(t *testing.T, g *Gateway, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return clientWith(t, g, opts, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
}

// answering connects a client to g that answers every sampling request
// with its own name.
func answering(t *testing.T, g *Gateway, name string) *mcp.ClientSession {
	return legacyClient(t, g, &mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: name}, Model: "m", Role: "assistant"}, nil
	}})
}

// askAll has n clients call s__ask at once and returns, per client, the
// text of its result and whether it is an error.
func askAll(t *testing.T, g *Gateway, n int) (texts []string, isErr []bool) {
	t.Helper()
	texts, isErr = make([]string, n), make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		cs := answering(t, g, fmt.Sprintf("client %d", i))
		wg.Go(func() {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__ask", Arguments: map[string]any{"text": "hi"}})
			if err != nil {
				t.Errorf("client %d: %v", i, err)
				return
			}
			texts[i], isErr[i] = res.Content[0].(*mcp.TextContent).Text, res.IsError
		})
	}
	wg.Wait()
	return texts, isErr
}

// TestSamplingReachesTheCallingClientOverHTTP: over Streamable HTTP, a
// sampling request goes to the client whose call caused it, however many
// clients call the same server at once.
func TestSamplingReachesTheCallingClientOverHTTP(t *testing.T) {
	_, g := serve(t, "http", passthroughScript)
	for round := range 3 {
		texts, isErr := askAll(t, g, 4)
		for i, text := range texts {
			if want := fmt.Sprintf("client %d", i); text != want || isErr[i] {
				t.Errorf("round %d: client %d got %q (error: %v), want its own answer %q", round, i, text, isErr[i], want)
			}
		}
	}
}

// TestSamplingWithoutALinkIsNeverMisattributed: where nothing on the wire
// ties a request to a call (stdio), concurrent clients get their own answer
// or a clear error, never another client's.
func TestSamplingWithoutALinkIsNeverMisattributed(t *testing.T) {
	_, g := serve(t, "stdio", passthroughScript)
	for round := range 3 {
		texts, isErr := askAll(t, g, 4)
		for i, text := range texts {
			own := text == fmt.Sprintf("client %d", i) && !isErr[i]
			refused := isErr[i] && strings.Contains(text, "nothing tells which one")
			if !own && !refused {
				t.Errorf("round %d: client %d got %q (error: %v): neither its own answer nor a refusal", round, i, text, isErr[i])
			}
		}
	}
	// Alone, a client is always answered.
	if texts, isErr := askAll(t, g, 1); texts[0] != "client 0" || isErr[0] {
		t.Errorf("a lone client got %q (error: %v)", texts[0], isErr[0])
	}
}

// TestSamplingWithoutTheCapabilityIsRefused: a client that did not declare
// sampling gets an error result, never a hang.
func TestSamplingWithoutTheCapabilityIsRefused(t *testing.T) {
	_, g := serve(t, "http", passthroughScript)
	cs := legacyClient(t, g, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__ask", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "does not support") {
		t.Errorf("result %q (error: %v), want a refusal", text, res.IsError)
	}
}

// TestProgressAndLogsReachTheCaller: the upstream sees a token of the
// gateway's own, and the client that called gets its progress back with its
// own token, and the log messages of its call at the level it set, over
// HTTP (linked to the call) and stdio (one client calling); with servers
// and clients on either side of revision 2026-07-28, where a client asks
// for logs per request.
func TestProgressAndLogsReachTheCaller(t *testing.T) {
	for _, transport := range transports {
		for _, server := range []string{legacy, "2026-07-28"} {
			for _, client := range []string{legacy, "2026-07-28"} {
				t.Run(fmt.Sprintf("%s/server %s/client %s", transport, server, client), func(t *testing.T) {
					_, g := serveAt(t, transport, server, passthroughScript, nil)
					progressAndLogs(t, g, client)
				})
			}
		}
	}
}

// progressAndLogs is TestProgressAndLogsReachTheCaller, for one client on
// revision version.
func progressAndLogs(t *testing.T, g *Gateway, version string) {
	t.Helper()
	progress := make(chan *mcp.ProgressNotificationParams, 10)
	logs := make(chan *mcp.LoggingMessageParams, 10)
	cs := clientWith(t, g, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { progress <- req.Params },
		LoggingMessageHandler:       func(_ context.Context, req *mcp.LoggingMessageRequest) { logs <- req.Params },
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	params := &mcp.CallToolParams{Name: "s__work", Arguments: map[string]any{"steps": 2}}
	params.SetProgressToken("mine")
	if version == legacy {
		if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
	} else {
		params.Meta[mcp.MetaKeyLogLevel] = "info" // the era's way: per request
	}
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", res, err)
	}
	for i := range 2 {
		select {
		case p := <-progress:
			if p.ProgressToken != "mine" || p.Progress != float64(i+1) {
				t.Errorf("progress %d: token %v, progress %v; want mine, %d", i, p.ProgressToken, p.Progress, i+1)
			}
		case <-t.Context().Done():
			t.Fatal("no progress")
		}
		select {
		case l := <-logs:
			if l.Data != fmt.Sprintf("step %d", i+1) {
				t.Errorf("log %d: %v", i, l.Data)
			}
		case <-t.Context().Done():
			t.Fatal("no log")
		}
	}
}

// TestCancellationReachesTheServer: a call that its client cancels, or
// whose client goes away (its connection drops), is cancelled on the server
// too, and never run again.
func TestCancellationReachesTheServer(t *testing.T) {
	for _, how := range []string{"notifications/cancelled", "connection dropped"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "wait", Behavior: mcptest.Hang}}})
				_, g := setup(t, upstreams{"s": srv}, []config.Server{entry("s", false)}, nil)
				// A pipe of the test's own, to drop: a client's Close is
				// graceful, and waits for its calls.
				serverEnd, clientEnd := net.Pipe()
				ss, err := g.Server().Connect(t.Context(), &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd}, nil)
				if err != nil {
					t.Fatal(err)
				}
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v"}, nil).Connect(t.Context(), &mcp.IOTransport{Reader: clientEnd, Writer: clientEnd}, nil)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				done := make(chan error, 1)
				go func() {
					_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__wait"})
					done <- err
				}()
				synctest.Wait()
				if n := srv.Counts().ByTool["wait"]; n != 1 {
					t.Fatalf("the server runs %d calls, want 1", n)
				}
				if how == "connection dropped" {
					clientEnd.Close()
				} else {
					cancel()
				}
				if err := <-done; err == nil {
					t.Error("the cancelled call succeeded")
				}
				synctest.Wait()
				if c := srv.Counts(); c.Cancelled != 1 || c.Calls != 1 {
					t.Errorf("the server saw %d calls and %d cancellations, want 1 and 1", c.Calls, c.Cancelled)
				}
				cs.Close()
				ss.Wait()
			})
		})
	}
}

// TestInputRequestsPassThrough: a modern server asks for input in its
// result (multi round-trip requests). The result reaches the client that
// called, whose go-sdk fulfils it and retries through the gateway with its
// own answer; a legacy client gets the request as an ordinary sampling
// request. Attribution is exact over any transport, under concurrency.
func TestInputRequestsPassThrough(t *testing.T) {
	script := mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "ask", Behavior: mcptest.AskInput}}}
	for _, transport := range transports {
		t.Run(transport, func(t *testing.T) {
			_, g := serveModern(t, transport, script)
			var wg sync.WaitGroup
			for i := range 4 {
				version := ""
				if i%2 == 1 {
					version = legacy
				}
				name := fmt.Sprintf("client %d (%q)", i, version)
				cs := clientWith(t, g, &mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: name}, Model: "m", Role: "assistant"}, nil
				}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
				wg.Go(func() {
					for range 3 {
						res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__ask", Arguments: map[string]any{"text": "hi"}})
						if err != nil {
							t.Errorf("%s: %v", name, err)
							return
						}
						if text := res.Content[0].(*mcp.TextContent).Text; text != name || res.IsError {
							t.Errorf("%s got %q (error: %v), want its own answer", name, text, res.IsError)
						}
					}
				})
			}
			wg.Wait()
		})
	}
}

// TestElicitationReachesTheCallingClient: an elicitation request, in form
// and URL modes, reaches the client whose call caused it, and its answer
// goes back, over HTTP and stdio.
func TestElicitationReachesTheCallingClient(t *testing.T) {
	script := mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "who", Behavior: mcptest.Elicit}}}
	for _, transport := range transports {
		t.Run(transport, func(t *testing.T) {
			_, g := serve(t, transport, script)
			var modes []string
			cs := legacyClient(t, g, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					modes = append(modes, req.Params.Mode+" "+req.Params.URL)
					if req.Params.Mode == "url" {
						return &mcp.ElicitResult{Action: "decline"}, nil
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
				},
			})
			for _, tc := range []struct {
				args map[string]any
				want string
			}{{nil, "accept ada"}, {map[string]any{"url": "https://example.invalid/login"}, "decline"}} {
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__who", Arguments: tc.args})
				if err != nil || mcptest.Text(res) != tc.want {
					t.Errorf("who(%v) = %q, %v; want %q", tc.args, mcptest.Text(res), err, tc.want)
				}
			}
			if want := []string{" ", "url https://example.invalid/login"}; !slices.Equal(modes, want) && !slices.Equal(modes, []string{"form ", want[1]}) {
				t.Errorf("the client was asked %q", modes)
			}
		})
	}
}
