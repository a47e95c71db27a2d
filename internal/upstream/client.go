//lint:file-ignore SA1019 Switchboard forwards sampling, elicitation, logging and roots for as long as servers and clients use them.

package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/ratelog"
)

// handlers are what the upstream's client does with what a server sends:
// a list changed or a resource updated goes to the list set; what a server
// sends while serving a request (sampling and elicitation requests, log
// messages, progress) goes to the peer the request was made for (see
// peers), and a log message for none goes to the host's log.
type handlers struct {
	name   string
	impl   *mcp.Implementation
	log    *slog.Logger
	redact func(string) string
	peers  *peers
	notes  *noteCount
	// logs limits the server's log messages (see serverLog), and may be
	// another upstream's (Options.LogSkippedWith).
	logs *ratelog.Log
	// roots, if not nil (even empty), are the roots offered at first:
	// the client then offers roots.
	roots []*mcp.Root

	listChanged     func(List)
	resourceUpdated func(uri string)
}

// routePeer finds the peer that the server's message method, with params,
// is for. A request that finds none is answered with an error that says
// why.
func (h *handlers) routePeer(method string, params mcp.Params) (Peer, error) {
	if params == nil || reflect.ValueOf(params).IsNil() {
		return nil, fmt.Errorf("switchboard: %s without params", method)
	}
	p, _, err := h.peers.route(params.GetMeta())
	if err != nil {
		return nil, fmt.Errorf("switchboard: cannot forward %s from server %q: %w", method, h.name, err)
	}
	return p, nil
}

// noteDone counts a log message or progress notification handled: one
// that came linked to a request (over HTTP), or any (over stdio), as the
// transport counted them (see noteCount). A transport of the host's own
// (Options.Dial) counts none.
func (h *handlers) noteDone(linked bool) {
	if linked || h.notes.lines.Load() {
		h.notes.done()
	}
}

// tell logs the failure to pass a notification on to a peer.
func (h *handlers) tell(err error) {
	if err != nil {
		h.log.Debug("notification not forwarded", "server", h.name, "error", err)
	}
}

// Limits on a server's log messages (notifications/message), wherever
// they go, so that a server that logs without end floods neither a client
// nor the gateway's log: at most serverLogBurst messages per
// serverLogEvery per server (however many processes it runs for client
// sessions), a summary line included, each with at most maxLogData bytes
// of data. The messages over the limit are dropped, and counted in one
// log line per period.
const (
	serverLogEvery = 10 * time.Second
	serverLogBurst = 100
	maxLogData     = 4 << 10
)

// newServerLogLimit returns the limit on the log messages of the server
// called name, whose summary of dropped messages goes to logger, at Warn.
func newServerLogLimit(logger *slog.Logger, name string) *ratelog.Log {
	limit := fmt.Sprintf("%d per %v", serverLogBurst, serverLogEvery)
	return ratelog.New(serverLogEvery, serverLogBurst, func(dropped int, first string) {
		logger.Warn("dropped log messages from the server: over the limit", "server", name, "dropped", dropped, "limit", limit, "first", first)
	})
}

// serverLog passes a log message from the server on to the peer it is for,
// else to the gateway's own log, within the server's limits: a message
// over the rate is dropped, and its data is cut at maxLogData.
func (h *handlers) serverLog(ctx context.Context, params *mcp.LoggingMessageParams) {
	if params == nil {
		return
	}
	p, linked, err := h.peers.route(params.Meta)
	defer h.noteDone(linked)
	if !h.logs.Allow(func() string { return showLine(h.redact, []byte(logText(params.Data))) }) {
		return
	}
	params = cutLogData(params)
	if err == nil {
		h.tell(p.Log(ctx, params))
		return
	}
	h.log.Log(ctx, slogLevel(params.Level), "server log", "server", h.name, "logger", params.Logger, "data", h.redact(fmt.Sprint(params.Data)))
}

// logText returns the data of a log message as text: a string as it is,
// anything else as JSON.
func logText(data any) string {
	if s, ok := data.(string); ok {
		return s
	}
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Sprint(data)
	}
	return string(b)
}

// cutLogData returns params, or, if its data is over maxLogData bytes as
// text (see logText), a copy whose data is the start of that text, cut at
// a character's start, followed by how long it was.
func cutLogData(params *mcp.LoggingMessageParams) *mcp.LoggingMessageParams {
	text := logText(params.Data)
	if len(text) <= maxLogData {
		return params
	}
	cut := maxLogData
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	out := *params
	out.Data = fmt.Sprintf("%s… (cut: %d bytes, over the limit of %d)", text[:cut], len(text), maxLogData)
	return &out
}

// slogLevel maps an MCP log level to slog's.
func slogLevel(l mcp.LoggingLevel) slog.Level {
	switch l {
	case "debug":
		return slog.LevelDebug
	case "info", "notice":
		return slog.LevelInfo
	case "warning":
		return slog.LevelWarn
	}
	return slog.LevelError
}

// capabilities are what the upstream's client offers servers: elicitation
// (sampling comes with its handler), and roots if it has any to offer.
func (h *handlers) capabilities() *mcp.ClientCapabilities {
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
		Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}
	if h.roots != nil {
		caps.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	return caps
}

// newClient returns the client of the upstream's sessions. Its handlers
// are set before the first session, so that no notification is missed,
// even during the first list. What a server sends while serving a request
// goes to the peer the request was made for (see peers).
func (h *handlers) newClient() *mcp.Client {
	client := mcp.NewClient(h.impl, &mcp.ClientOptions{
		Logger: h.log,
		// A result that asks for input (multi round-trip requests, from
		// revision 2026-07-28) goes back to the caller, whose client
		// fulfils it and retries: the go-sdk's own fulfilment would ask
		// the handlers below, which cannot always tell whose call it is.
		MultiRoundTrip:             &mcp.MultiRoundTripOptions{Disabled: true},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { h.listChanged(Tools) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { h.listChanged(Prompts) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { h.listChanged(Resources) },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if req.Params != nil {
				h.resourceUpdated(req.Params.URI)
			}
		},
		Capabilities: h.capabilities(),
		CreateMessageWithToolsHandler: func(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			p, err := h.routePeer("sampling/createMessage", req.Params)
			if err != nil {
				return nil, err
			}
			return p.CreateMessage(ctx, req.Params)
		},
		ElicitationCompleteHandler: func(ctx context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			if p, err := h.routePeer("notifications/elicitation/complete", req.Params); err == nil {
				h.tell(p.NotifyElicitationComplete(ctx, req.Params))
			}
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			h.serverLog(ctx, req.Params)
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			if req.Params == nil {
				return
			}
			_, linked := req.Params.Meta[linkKey]
			delete(req.Params.Meta, linkKey)
			defer h.noteDone(linked)
			if p, params := h.peers.progress(req.Params); p != nil {
				h.tell(p.NotifyProgress(ctx, params))
			}
		},
	})
	if h.roots != nil {
		client.AddRoots(h.roots...)
	}
	// Elicitations skip the go-sdk's own handling, whose checks of the
	// requested schema are stricter than the protocol: the client the
	// request goes to checks it.
	client.AddSendingMiddleware(recordStep)
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "elicitation/create" {
				return next(ctx, method, req)
			}
			params, _ := req.GetParams().(*mcp.ElicitParams)
			p, err := h.routePeer(method, params)
			if err != nil {
				return nil, err
			}
			return p.Elicit(ctx, params)
		}
	})
	return client
}
