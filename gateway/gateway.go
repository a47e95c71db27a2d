package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
)

// Options configure a [Gateway]. A nil *Options means all defaults.
type Options struct {
	// Implementation is how the gateway introduces itself to its clients.
	// Default: name "switchboard", version "dev".
	Implementation *mcp.Implementation
	// Logger receives diagnostics. Default: discard.
	Logger *slog.Logger
	// Stateless serves Streamable HTTP without sessions, for replicas behind
	// a load balancer.
	Stateless bool
	// AuthToken, if set, is required as "Authorization: Bearer AuthToken" on
	// /mcp. /healthz and /readyz never require it: orchestrator probes carry
	// no token.
	AuthToken string
}

// A Gateway serves a manager's tools to MCP clients.
type Gateway struct {
	// Set by New, read-only after.
	m           *switchboard.Manager
	server      *mcp.Server
	opts        Options
	unsubscribe func()
	calls       inflight

	// mu serializes syncs and guards exposed.
	mu      sync.Mutex
	exposed map[string]string // public name → JSON of the registered definition
}

// New returns a Gateway for m that exposes m's current tools and follows its
// changes. m should be connected, or connecting: tools that arrive later are
// added as they come. Call [Gateway.Close] when done.
func New(m *switchboard.Manager, opts *Options) *Gateway {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Implementation == nil {
		o.Implementation = &mcp.Implementation{Name: "switchboard", Version: "dev"}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{
		m:       m,
		opts:    o,
		exposed: make(map[string]string),
		server: mcp.NewServer(o.Implementation, &mcp.ServerOptions{
			Logger:       slog.New(sdkLog{o.Logger.Handler()}),
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		}),
	}
	g.calls.init()
	g.unsubscribe = m.Subscribe(func(ev switchboard.Event) {
		if ev.Kind == switchboard.EventChanged {
			g.Sync()
		}
	})
	g.Sync()
	return g
}

// Server returns the go-sdk server, for transports this package does not
// wrap.
func (g *Gateway) Server() *mcp.Server { return g.server }

// ServeStdio serves one client on stdin and stdout until it disconnects or
// ctx is done.
func (g *Gateway) ServeStdio(ctx context.Context) error {
	return g.server.Run(ctx, &mcp.StdioTransport{})
}

// Handler returns the HTTP face: /mcp (Streamable HTTP), /healthz and
// /readyz.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", g.authorized(g.tracked(mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return g.server },
		&mcp.StreamableHTTPOptions{Stateless: g.opts.Stateless, Logger: g.opts.Logger},
	))))
	mux.HandleFunc("GET /healthz", g.healthz)
	mux.HandleFunc("GET /readyz", g.readyz)
	return mux
}

// Drain waits until no request to /mcp is in progress, or ctx is done. A
// standalone stream (an HTTP GET, which lasts as long as its session) does
// not count; a POST that carries a call lasts until its response is written.
func (g *Gateway) Drain(ctx context.Context) error {
	return g.calls.wait(ctx)
}

// tracked counts the POSTs in progress for Drain. Counting in the tool
// handler would not do: its response is written after it returns.
func (g *Gateway) tracked(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			g.calls.add()
			defer g.calls.done()
		}
		next.ServeHTTP(w, r)
	})
}

// Close stops following the manager and closes every client session. It
// does not close the manager.
func (g *Gateway) Close() error {
	g.unsubscribe()
	var errs []error
	for ss := range g.server.Sessions() {
		errs = append(errs, ss.Close())
	}
	return errors.Join(errs...)
}

// Sync makes the exposed tools match the manager's current view: it adds new
// and changed definitions and removes the rest, so that clients are told
// list_changed only when something did change. The gateway syncs on every
// change event by itself, but events arrive asynchronously: call Sync after
// [switchboard.Manager.Connect] to expose what connected before serving.
func (g *Gateway) Sync() {
	g.mu.Lock()
	defer g.mu.Unlock()
	want := make(map[string]bool)
	for _, t := range g.m.Tools(context.Background(), nil) {
		def, err := exposable(t.Definition())
		if err != nil {
			g.opts.Logger.Warn("tool not exposed", "tool", t.Name, "server", t.Server, "error", err)
			continue
		}
		want[t.Name] = true
		key, err := json.Marshal(def)
		if err != nil || g.exposed[t.Name] == string(key) {
			continue
		}
		if err := g.addTool(def); err != nil {
			g.opts.Logger.Warn("tool not exposed", "tool", t.Name, "server", t.Server, "error", err)
			delete(want, t.Name)
			continue
		}
		g.exposed[t.Name] = string(key)
	}
	var gone []string
	for name := range g.exposed {
		if !want[name] {
			gone = append(gone, name)
			delete(g.exposed, name)
		}
	}
	if len(gone) > 0 {
		g.server.RemoveTools(gone...)
	}
}

// exposable returns def ready for mcp.Server.AddTool, which requires an
// object input schema: a missing schema becomes an empty object schema.
func exposable(def *mcp.Tool) (*mcp.Tool, error) {
	switch schema := def.InputSchema.(type) {
	case nil:
		def.InputSchema = map[string]any{"type": "object", "properties": map[string]any{}}
	case map[string]any:
		if schema["type"] != "object" {
			return nil, fmt.Errorf("input schema type is %v, not object", schema["type"])
		}
	default:
		return nil, fmt.Errorf("input schema is a %T, not a JSON object", schema)
	}
	return def, nil
}

// addTool registers def. The go-sdk panics on definitions it cannot serve;
// one bad tool from one server must not take the gateway down.
func (g *Gateway) addTool(def *mcp.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("rejected by the MCP server library: %v", r)
		}
	}()
	g.server.AddTool(def, g.callTool(def.Name))
	return nil
}

// callTool returns the handler of the tool with the given public name. The
// call goes on with the client's arguments, as sent, and its _meta (a
// progress token, say).
func (g *Gateway) callTool(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := checkArguments(req.Params.Arguments); err != nil {
			where := ""
			if t, ok := g.m.Lookup(name); ok {
				where = fmt.Sprintf("server %q: ", t.Server)
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%scall tool %q: %v", where, name, err)}
		}
		params := &mcp.CallToolParams{Meta: req.Params.Meta, Name: name}
		if len(req.Params.Arguments) > 0 {
			params.Arguments = req.Params.Arguments
		}
		res, err := g.m.CallTool(ctx, nil, params)
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err() // the client went away: nothing to tell it
		}
		if rpcErr, ok := answer(err); ok {
			return nil, rpcErr // the server's own protocol error, unchanged
		}
		return &mcp.CallToolResult{
			IsError: true,
			Content: []mcp.Content{&mcp.TextContent{Text: "switchboard: " + err.Error()}},
		}, nil
	}
}

// codeRejected is the go-sdk's JSON-RPC code for a message its transport
// could not send: never a server's answer.
const codeRejected = -32005

// answer returns the JSON-RPC error that the server answered a call with,
// if that is what err is. A call that found its server down, that may have
// run, or that timed out was not answered, whatever JSON-RPC error its
// cause carries.
func answer(err error) (*jsonrpc.Error, bool) {
	var rpcErr *jsonrpc.Error
	switch {
	case errors.Is(err, switchboard.ErrNotConnected), errors.Is(err, switchboard.ErrReconnecting),
		errors.Is(err, switchboard.ErrCircuitOpen), errors.Is(err, switchboard.ErrClosed),
		errors.Is(err, switchboard.ErrAmbiguous), errors.Is(err, switchboard.ErrTimeout):
		return nil, false
	case errors.As(err, &rpcErr) && rpcErr.Code != codeRejected:
		return rpcErr, true
	}
	return nil, false
}

// checkArguments checks that a tools/call's arguments, which the SDK has
// already read as JSON, are an object or absent.
func checkArguments(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" || raw[0] == '{' {
		return nil
	}
	return fmt.Errorf("%w: arguments must be a JSON object", switchboard.ErrInvalidArguments)
}

// sdkLog is the go-sdk server's log handler. The SDK logs every client
// session's coming and going at info level, and warns, on every list
// change, about each client session that has no stream to receive the
// notification on (many clients never open one, and some go away without
// ending their session). None of it is news for a gateway's operator: it
// is logged at debug level.
type sdkLog struct{ slog.Handler }

func (h sdkLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn || r.Level == slog.LevelWarn && strings.HasPrefix(r.Message, "calling notifications/") {
		if !h.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h sdkLog) WithAttrs(attrs []slog.Attr) slog.Handler { return sdkLog{h.Handler.WithAttrs(attrs)} }

func (h sdkLog) WithGroup(name string) slog.Handler { return sdkLog{h.Handler.WithGroup(name)} }

// inflight counts requests in progress.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0
}

func (c *inflight) init() {
	c.idle = make(chan struct{})
	close(c.idle)
}

func (c *inflight) add() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.idle = make(chan struct{})
	}
	c.n++
}

func (c *inflight) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.n == 0 {
		close(c.idle)
	}
}

func (c *inflight) wait(ctx context.Context) error {
	c.mu.Lock()
	idle := c.idle
	c.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
