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
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

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
	return start(t, []config.Server{srv}, &switchboard.Options{NoCache: true}, opts)
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

// TestSubscriptionReachesOnlyItsSubscribers: resources/updated reaches the
// sessions subscribed to that URI, no other; the server's subscription is
// held while any session wants it, and dropped after the last one
// unsubscribes or disconnects. Modern clients subscribe with
// subscriptions/listen, legacy ones with resources/subscribe: b is legacy.
func TestSubscriptionReachesOnlyItsSubscribers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(mcptest.Script{Resources: []mcptest.ResourceSpec{{URI: "mem://a", Name: "a"}, {URI: "mem://b", Name: "b"}}})
		_, g := setup(t, upstreams{"s": srv}, []config.Server{entry("s", false)}, nil)
		subscriber := func(version string) (*mcp.ClientSession, chan string) {
			updates := make(chan string, 10)
			return clientWith(t, g, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
				updates <- req.Params.URI
			}}, &mcp.ClientSessionOptions{ProtocolVersion: version}), updates
		}
		subscribe := func(cs *mcp.ClientSession, uri string) {
			t.Helper()
			if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
		}
		held := func(want ...string) {
			t.Helper()
			synctest.Wait()
			if diff := cmp.Diff(want, srv.Subscriptions(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("the server's subscriptions (-want +got):\n%s", diff)
			}
		}
		a, toA := subscriber("")
		b, toB := subscriber(legacy)
		c, toC := subscriber("")
		subscribe(a, "mem://a")
		subscribe(b, "mem://a")
		subscribe(b, "mem://b")
		subscribe(c, "mem://b")
		held("mem://a", "mem://b")

		// Each update of a goes before one of b: a session that got a
		// wrongly would see it first.
		srv.NotifyResourceUpdated("mem://a")
		srv.NotifyResourceUpdated("mem://b")
		synctest.Wait()
		for name, tc := range map[string]struct {
			got  chan string
			want []string
		}{"a": {toA, []string{"mem://a"}}, "b": {toB, []string{"mem://a", "mem://b"}}, "c": {toC, []string{"mem://b"}}} {
			var got []string
			for len(tc.got) > 0 {
				got = append(got, <-tc.got)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("session %s got updates (-want +got):\n%s", name, diff)
			}
		}

		// b leaves a: a still holds it. a leaves: no one does.
		if err := b.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: "mem://a"}); err != nil {
			t.Fatal(err)
		}
		held("mem://a", "mem://b")
		if err := a.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: "mem://a"}); err != nil {
			t.Fatal(err)
		}
		held("mem://b")
		// b disconnects: c still holds b. c disconnects: no one does.
		b.Close()
		held("mem://b")
		c.Close()
		held()
	})
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

// TestProcessPerSession: a stdio server with processPerSession gives each
// client session a process of its own, so that a sampling request always
// reaches the client whose call caused it, however many call at once.
func TestProcessPerSession(t *testing.T) {
	script := passthroughScript
	script.Tools = append(slices.Clone(script.Tools), mcptest.ToolSpec{Name: "count", Behavior: mcptest.Increment})
	srv := config.Server{Name: "s", ProtocolVersion: legacy, ProcessPerSession: true}
	srv.Command, srv.Args, srv.Env = mcptest.StdioCommand(script)
	m, g := start(t, []config.Server{srv}, &switchboard.Options{NoCache: true}, nil)

	for round := range 2 {
		texts, isErr := askAll(t, g, 4)
		for i, text := range texts {
			if want := fmt.Sprintf("client %d", i); text != want || isErr[i] {
				t.Errorf("round %d: client %d got %q (error: %v), want its own answer", round, i, text, isErr[i])
			}
		}
	}
	// Each session counts in its own process.
	a, b := legacyClient(t, g, nil), legacyClient(t, g, nil)
	for _, step := range []struct {
		cs   *mcp.ClientSession
		want string
	}{{a, "1"}, {a, "2"}, {b, "1"}, {a, "3"}} {
		res, err := step.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__count"})
		if err != nil || mcptest.Text(res) != step.want {
			t.Errorf("count = %v %v, want %s", mcptest.Text(res), err, step.want)
		}
	}
	if st := m.Status()[0]; st.SessionProcesses != 2+4*2 {
		// askAll's clients stay connected until the test ends.
		t.Errorf("status: %d processes per session, want %d", st.SessionProcesses, 2+4*2)
	}
	// A level set after a session's process started reaches it.
	logs := make(chan any, 10)
	c := legacyClient(t, g, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { logs <- req.Params.Data }})
	if _, err := c.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__count"}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__work", Arguments: map[string]any{"steps": 1}}); err != nil {
		t.Fatal(err)
	}
	select {
	case data := <-logs:
		if data != "step 1" {
			t.Errorf("log %v, want step 1", data)
		}
	case <-t.Context().Done():
		t.Error("no log from the session's own process")
	}
}

// TestProcessPerSessionLifetime: a session's own process starts on its
// first request and stops when the session ends; requests made for no
// client go to the shared one.
func TestProcessPerSessionLifetime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "echo", Behavior: mcptest.Echo}}})
		e := entry("s", false)
		e.ProcessPerSession = true
		m, g := setup(t, upstreams{"s": srv}, []config.Server{e}, nil)
		call := func(cs *mcp.ClientSession) {
			t.Helper()
			if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"text": "x"}}); err != nil || res.IsError {
				t.Fatalf("call: %v %v", res, err)
			}
		}
		open := func(want int) {
			t.Helper()
			synctest.Wait()
			if n := srv.OpenSessions(); n != want {
				t.Errorf("the server has %d sessions open, want %d", n, want)
			}
			if n := m.Status()[0].SessionProcesses; n != want-1 {
				t.Errorf("status: %d processes per session, want %d", n, want-1)
			}
		}
		open(1) // the shared one, which listed the tools
		a := client(t, g, nil)
		open(1) // nothing before a request
		call(a)
		call(a)
		open(2)
		b := client(t, g, nil)
		call(b)
		open(3)
		if _, err := m.CallTool(t.Context(), nil, &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"text": "x"}}); err != nil {
			t.Fatal(err)
		}
		open(3) // no client: the shared one
		a.Close()
		open(2)
		b.Close()
		open(1)
	})
}

// TestProcessPerSessionFollowsTheHost: a session's own process follows what
// the host does to its server: Reconnect restarts it; a reload that moves
// the server moves it too; one that ends processPerSession, disables or
// removes the server ends it, and so does Disconnect; the session's next
// request then starts one on what the config says.
func TestProcessPerSessionFollowsTheHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "echo", Behavior: mcptest.Echo}}}
		a, b := mcptest.NewServer(script), mcptest.NewServer(script)
		t.Cleanup(func() { a.Close(); b.Close() })
		dial := func(ctx context.Context, srv config.Server) (mcp.Transport, error) {
			if slices.Contains(srv.Args, "b") {
				return b.ConnectInMemory(ctx)
			}
			return a.ConnectInMemory(ctx)
		}
		onA := entry("s", false)
		onA.ProcessPerSession = true
		onB := onA
		onB.Args = []string{"b"}
		sharedOnB := onB
		sharedOnB.ProcessPerSession = false
		m, g := start(t, []config.Server{onA}, &switchboard.Options{Dial: dial}, nil)
		cs := client(t, g, nil)
		call := func(on *mcptest.Server) {
			t.Helper()
			before := on.Counts().Calls
			if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"text": "x"}}); err != nil || res.IsError {
				t.Fatalf("call: %v %v", res, err)
			}
			if on.Counts().Calls != before+1 {
				t.Fatalf("the call did not reach the server it should have")
			}
		}
		open := func(step string, onA, onB, own int) {
			t.Helper()
			synctest.Wait()
			if na, nb := a.OpenSessions(), b.OpenSessions(); na != onA || nb != onB {
				t.Errorf("%s: sessions open on a and b: %d and %d, want %d and %d", step, na, nb, onA, onB)
			}
			if st := m.Status(); len(st) > 0 && st[0].SessionProcesses != own {
				t.Errorf("%s: status: %d processes per session, want %d", step, st[0].SessionProcesses, own)
			}
		}
		reload := func(servers ...config.Server) {
			t.Helper()
			if _, err := m.Reconfigure(t.Context(), &config.Config{Servers: servers}); err != nil {
				t.Fatal(err)
			}
		}

		call(a)
		open("first call", 2, 0, 1)
		starts := a.Counts().Starts
		if err := m.Reconnect(t.Context(), "s"); err != nil {
			t.Fatal(err)
		}
		open("reconnect", 2, 0, 1)
		if got := a.Counts().Starts - starts; got != 2 {
			t.Errorf("reconnect: %d handshakes, want 2 (the shared process and the session's)", got)
		}
		reload(onB)
		open("moved to b", 0, 2, 1)
		call(b)
		open("called on b", 0, 2, 1)
		reload(sharedOnB)
		open("shared again", 0, 1, 0)
		call(b)
		open("called the shared process", 0, 1, 0)
		reload(onB)
		call(b)
		open("a process per session again", 0, 2, 1)
		disabled := onB
		disabled.Enabled = new(bool)
		reload(disabled)
		open("disabled", 0, 0, 0)
		reload(onB)
		synctest.Wait() // connected again: a call before may find no tool yet
		call(b)
		open("enabled again", 0, 2, 1)
		if err := m.Disconnect(t.Context(), "s"); err != nil {
			t.Fatal(err)
		}
		open("disconnected", 0, 0, 0)
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		call(b)
		open("connected again", 0, 2, 1)
		reload()
		open("removed", 0, 0, 0)
	})
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

// TestRootsReachTheSessionsOwnProcess: a process per session is offered
// its client's roots, and their changes; a shared process is offered none,
// for one client's roots are not another's.
func TestRootsReachTheSessionsOwnProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "roots", Behavior: mcptest.Roots}}}
		own, shared := entry("own", false), entry("shared", false)
		own.ProcessPerSession, own.ProtocolVersion, shared.ProtocolVersion = true, legacy, legacy
		_, g := setup(t, upstreams{"own": mcptest.NewServer(script), "shared": mcptest.NewServer(script)}, []config.Server{own, shared}, nil)
		rootsOf := func(cs *mcp.ClientSession, server string) (string, bool) {
			t.Helper()
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: server + "__roots"})
			if err != nil {
				t.Fatal(err)
			}
			return mcptest.Text(res), res.IsError
		}
		clients := map[string]*mcp.Client{}
		sessions := map[string]*mcp.ClientSession{}
		for _, name := range []string{"a", "b"} {
			c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "v"}, nil)
			c.AddRoots(&mcp.Root{URI: "file:///" + name})
			clients[name] = c
			st, ct := mcp.NewInMemoryTransports()
			ss, err := g.Server().Connect(t.Context(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := c.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				cs.Close()
				ss.Wait()
			})
			sessions[name] = cs
		}
		for name, cs := range sessions {
			if got, isErr := rootsOf(cs, "own"); got != "file:///"+name || isErr {
				t.Errorf("%s's own process was offered %q (error: %v)", name, got, isErr)
			}
			// The go-sdk answers an empty list for a client that does not
			// offer roots.
			if got, _ := rootsOf(cs, "shared"); got != "" && !strings.HasPrefix(got, "roots failed") {
				t.Errorf("the shared process was offered %q, want no roots", got)
			}
		}
		clients["a"].AddRoots(&mcp.Root{URI: "file:///a2"})
		synctest.Wait()
		if got, _ := rootsOf(sessions["a"], "own"); got != "file:///a\nfile:///a2" {
			t.Errorf("after a's roots changed, its process was offered %q", got)
		}
		if got, _ := rootsOf(sessions["b"], "own"); got != "file:///b" {
			t.Errorf("after a's roots changed, b's process was offered %q", got)
		}
	})
}

// TestSlowSubscribeBlocksNoOtherClient: while a server is slow to
// subscribe for one client, other clients connect and call.
func TestSlowSubscribeBlocksNoOtherClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := resourceServer("mem://a")
		_, g := setup(t, upstreams{"s": srv}, []config.Server{entry("s", false)}, nil)
		_, answered := subscribeHeld(t, g, srv, "mem://a")

		b := legacyClient(t, g, nil)
		if err := b.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		if res, err := b.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"text": "x"}}); err != nil || res.IsError {
			t.Errorf("b's call while a subscribes: %v %v", res, err)
		}
		answered()
	})
}

// resourceServer is a test server with one resource, uri.
func resourceServer(uri string) *mcptest.Server {
	return mcptest.NewServer(mcptest.Script{Resources: []mcptest.ResourceSpec{{URI: uri, Name: uri}}})
}

// subscribeHeld has a new client of g subscribe to uri while srv holds
// every subscribe, and returns once the request waits upstream. answered
// waits for srv's answer: it fails t if the subscribe ended before release
// was called, or failed after.
func subscribeHeld(t *testing.T, g *Gateway, srv *mcptest.Server, uri string) (a *mcp.ClientSession, answered func()) {
	t.Helper()
	release := srv.BlockSubscribe()
	t.Cleanup(release)
	a = legacyClient(t, g, nil)
	subscribed := make(chan error, 1)
	go func() { subscribed <- a.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}) }()
	synctest.Wait()
	return a, func() {
		t.Helper()
		select {
		case err := <-subscribed:
			t.Fatalf("the subscribe to %s ended (%v) before the server answered", uri, err)
		default:
		}
		release()
		if err := <-subscribed; err != nil {
			t.Errorf("the subscribe to %s: %v", uri, err)
		}
	}
}

// TestHungSubscribeHoldsUpOnlyItsURI: while one server never answers a
// subscribe, another server's subscribe goes through at once, and so does
// the end of a session that held a subscription of the other server.
func TestHungSubscribeHoldsUpOnlyItsURI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hung, live := resourceServer("mem://hung"), resourceServer("mem://live")
		_, g := setup(t, upstreams{"hung": hung, "live": live}, []config.Server{entry("hung", false), entry("live", false)}, nil)
		_, answered := subscribeHeld(t, g, hung, "mem://hung")

		// In the bubble, time passes only while every goroutine waits: a
		// subscribe held up by the hung one would return after some.
		b := legacyClient(t, g, nil)
		start := time.Now()
		if err := b.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "mem://live"}); err != nil {
			t.Fatalf("b's subscribe of the other server: %v", err)
		}
		if waited := time.Since(start); waited > 0 {
			t.Errorf("b's subscribe of the other server waited %v for the hung one", waited)
		}
		if got := live.Subscriptions(); !slices.Equal(got, []string{"mem://live"}) {
			t.Fatalf("the live server's subscriptions = %v, want mem://live", got)
		}

		start = time.Now()
		b.Close()
		synctest.Wait()
		if got := live.Subscriptions(); len(got) != 0 {
			t.Errorf("after b ended, the live server still has subscriptions %v", got)
		}
		if waited := time.Since(start); waited > 0 {
			t.Errorf("b's end waited %v for the hung subscribe", waited)
		}
		answered()
	})
}

// TestSessionEndedDuringItsSubscribe: a session that ends while its
// subscribe waits upstream leaves no upstream subscription behind once
// the server answers.
func TestSessionEndedDuringItsSubscribe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := resourceServer("mem://a")
		_, g := setup(t, upstreams{"s": srv}, []config.Server{entry("s", false)}, nil)
		release := srv.BlockSubscribe()
		defer release()
		a := legacyClient(t, g, nil)
		go a.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "mem://a"})
		synctest.Wait() // a's subscribe waits upstream
		a.Close()
		synctest.Wait()
		release()
		synctest.Wait()
		if got := srv.Subscriptions(); len(got) != 0 {
			t.Errorf("after a ended during its subscribe, the server holds subscriptions %v", got)
		}
	})
}
