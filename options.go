//lint:file-ignore SA1019 Switchboard forwards logging for as long as servers and clients use it.

package switchboard

import (
	"context"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-mcp/switchboard/config"
)

// Options configure a [Manager]. A nil *Options means all defaults; a zero
// field means that field's default.
type Options struct {
	// Client identifies Switchboard to every server. Default: name
	// "switchboard", version "dev".
	Client *mcp.Implementation
	// Logger receives diagnostics. Default: discard.
	Logger *slog.Logger
	// LookupEnv resolves ${VAR} in server configs, at connect time. Default:
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// CloseTimeout bounds Close. Default: DefaultCloseTimeout.
	CloseTimeout time.Duration
	// Dial, if set, opens the transport for a server instead of the one its
	// config asks for: for servers that run in the same process, and tests.
	Dial func(ctx context.Context, srv config.Server) (mcp.Transport, error)

	// Sequential connects the servers one at a time, in configured order,
	// each waited for in full, instead of all at once behind the startup
	// gate.
	Sequential bool
	// Strict makes Connect fail when a server fails: the servers of that
	// call are disconnected again, in reverse order, the ones connected
	// before are left as they were, and the failures are returned. Strict
	// Connect waits for every server, without the startup gate. Strict
	// Reconnect and ReconnectFailed return the failures too, and leave the
	// servers as they are.
	Strict bool
	// KeepFailed keeps failed servers in [Status.Active]; by default they
	// are dropped from it.
	KeepFailed bool
	// StartupGate is how long Connect waits for servers to connect before it
	// returns, in parallel mode. Servers still connecting then go on in the
	// background, exposing the tools they had last time (see CacheDir)
	// until they connect. Default: DefaultStartupGate; negative: wait for
	// every server.
	StartupGate time.Duration
	// WaitFor names the servers the host needs before it goes on: Connect
	// waits for each of them, past the startup gate, until it has connected
	// and listed its tools, prompts and resources, or failed, within its
	// timeout and Connect's context. The other servers keep to the gate. A
	// name that no enabled server has is logged and ignored.
	WaitFor []string
	// CacheDir is the directory of the persistent tool cache. Default: the
	// user cache directory (see os.UserCacheDir), under switchboard/tools.
	// Tool search's vectors, when the config names an embedding endpoint,
	// are kept beside it, in switchboard/vectors by default, or in
	// CacheDir's vectors subdirectory when CacheDir is set: a file per
	// endpoint and model, so that a restart embeds only new tool texts.
	CacheDir string
	// Cache says whether each server's tool list, and tool search's
	// vectors, are kept on disk: CacheOnDisk (the default) or CacheOff,
	// which reads and writes neither.
	Cache CacheMode
	// OAuthDir is the directory of the OAuth tokens of the http and sse
	// servers that require a login, which `switchboard login` writes.
	// Default: switchboard/oauth under the user's state directory
	// ($XDG_STATE_HOME, else ~/.local/state).
	OAuthDir string
	// Login says what becomes of an http or sse server that answers 401
	// with no stored token to answer it: LoginWait (the default) or
	// LoginRefused.
	Login LoginMode

	// Filter, if set, decides per query which tools Tools returns, and
	// CallTool refuses the tools it hides. PromptFilter and ResourceFilter
	// do the same for prompts and resources.
	Filter         DynamicFilter
	PromptFilter   PromptFilter
	ResourceFilter ResourceFilter
	// Approval says which tools need a human's approval; see
	// [Tool.RequiresApproval]. Build it with [NewApprovalPolicy].
	Approval *ApprovalPolicy
	// StrictSchemas converts the input schemas Tools returns for providers'
	// strict structured output, where it can; a schema it cannot convert is
	// returned unchanged.
	StrictSchemas bool
	// FormatError, if set, turns an error of CallTool into a result for the
	// model (see DefaultErrorFormatter). If it is nil, or returns nil, the
	// error is returned.
	FormatError ErrorFormatter
	// LoggingLevel, if set, asks every server that logs to send its log
	// messages at that level and above, from its first session on. They
	// reach the peer whose request caused them (see [Peer]), else Logger.
	// The gateway changes it as its clients ask.
	LoggingLevel mcp.LoggingLevel

	// Pinning is tool pinning's default: the mode of the servers whose
	// config sets none, and the pins file. A config's top-level "pinning"
	// overrides each, and a server's own "pinning" its mode. The zero value
	// is off; the file, when pinning is on, defaults to one per config
	// under the user's state directory (see [config.Config.PinsFile]).
	//
	// Under pinning, the tools a server first lists are pinned (trust on
	// first use). Under enforce, a tool whose definition differs from its
	// pin, or that is new on a pinned server, is held: it is in no Tools,
	// no search, and a call of it fails with a [*HeldToolError] until
	// [Manager.ApprovePins] pins it as it is, or it changes back. Under
	// warn, it stays exposed, and is logged once and shown in Status. In
	// either mode, a call is replayed after an ambiguous failure only if
	// both the pinned and the listed annotations allow it.
	Pinning config.Pinning

	// Observer, if set, hears of calls, for metrics and logs. Changes are
	// heard through [Manager.Subscribe].
	Observer *Observer

	// TracerProvider makes an OpenTelemetry span, of kind CLIENT, for each
	// attempt of a request to a server (CallTool, GetPrompt, ReadResource,
	// Complete, Subscribe), under the span of the caller's context: a call
	// replayed on a new session, or retried, shows as two attempts, the
	// first saying why it failed and what followed. The attempt's W3C trace
	// context goes to the server in the request's _meta (traceparent,
	// tracestate) and, to an http server, in its headers. Span names and
	// attributes follow OpenTelemetry's semantic conventions for MCP.
	// Default: otel.GetTracerProvider(), which records nothing unless the
	// host sets one; the trace context of the caller's span, if any, still
	// goes to the server.
	TracerProvider trace.TracerProvider
}

// CacheMode says whether a manager keeps the persistent tool cache. A
// value other than those below means the default.
type CacheMode int

const (
	// CacheOnDisk keeps each server's last tool list in Options.CacheDir,
	// so that the server's tools are exposed from the start, while it
	// connects. The default.
	CacheOnDisk CacheMode = iota
	// CacheOff keeps nothing on disk: a server's tools are exposed once it
	// has listed them.
	CacheOff
)

// LoginMode says what becomes of a server that asks for an OAuth login. A
// value other than those below means the default.
type LoginMode int

const (
	// LoginWait keeps the server in the needs-auth state, waiting for the
	// token that `switchboard login NAME` (or [Login]) stores in
	// Options.OAuthDir: it connects once there is one. The default.
	LoginWait LoginMode = iota
	// LoginRefused fails the server instead: for hosts with no one to log
	// in.
	LoginRefused
)
