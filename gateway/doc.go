// Package gateway is the MCP server face of Switchboard: it serves what the
// servers of a [switchboard.Manager] offer over stdio or Streamable HTTP,
// through a go-sdk [mcp.Server], with /healthz and /readyz beside /mcp.
//
// [Gateway.Handler] is the HTTP face; [NewHTTPServer] serves it within
// bounds on connections and on clients that send or read nothing, as the
// switchboard command does.
//
// The gateway registers the manager's merged tools and prompts under their
// public names, and its resources and templates under their own URIs, each
// definition as the server gave it but for the name. It routes every
// tools/call, prompts/get, resources/read and completion/complete to the
// owning server, by the original name. It follows the manager's view,
// revision by revision, and registers again only the definitions that
// changed, so its clients get list_changed notifications only when the
// exposed view really changed; a list answered when nothing changed costs
// no more than the list. The config's toolSearch and alwaysLoad come with
// the manager's New and Reconfigure. Its handshake advertises what its servers
// offer and it can forward, no more, and their instructions, labelled by
// server; it waits, briefly, for servers still making their first
// connection, so that what a client sees first is complete.
//
// A request is made on behalf of the client session that sent it (see
// [switchboard.Peer]): what the server sends while serving it (sampling and
// elicitation requests, log messages at the session's level, progress with
// the session's own token) goes back to that session, and its answers go
// back to the server. How that attribution is kept exact, or refused, is
// the upstream package's design. A progress token already in use by a
// request in flight on the session is refused. A multi round-trip result
// (revision 2026-07-28) passes through as it is: a modern client answers
// and retries; for a legacy client the go-sdk asks it with ordinary
// requests.
//
// Resource subscriptions are held per session, and upstream while any
// session wants them: resources/updated reaches exactly the sessions
// subscribed to the URI. logging/setLevel is per session; the servers are
// asked for the most verbose level any session wants.
//
// No client holds up another. The notifications the gateway sends a
// session outside its requests (resources/updated, list_changed) go
// through the session's own queue, sent by a goroutine of its own, never
// by the manager's event dispatcher or the go-sdk's timer, which only
// queue them; each write to a standalone stream has a deadline
// (Options.StreamWriteTimeout). A session that leaves more than
// Options.NotifyQueue unread is closed. Streamable HTTP sessions are at
// most Options.MaxSessions, and expire after Options.SessionTimeout idle.
//
// Each client session has its own view of what is exposed: the gateway
// answers every tools/list itself, from the session's view, paged as the
// go-sdk pages its own. With tool search on (the config's toolSearch, or
// Options.ToolSearch), the view holds search_tools and call_tool (design
// §2), the tools of the servers marked alwaysLoad, and the tools the
// session found, the MaxFoundPerSession found last; every tool stays
// registered, so a direct call works, and call_tool goes the same way as
// one. A search_tools result is small, for a model's context: its text is
// a line per tool (its name, its description's first sentence, the
// arguments it requires), and its structuredContent gives the same
// sentence and the input schema trimmed to what a call must send; the
// tools found join the session's list whole. Its description names the
// servers and what each is for (the config's description, else the first
// sentence of the server's instructions), registered again only when they
// change; its optional server argument ranks that server's tools alone,
// or, with the query "*", lists them all. The go-sdk has one tool list
// for all sessions, and tells
// list_changed to all: the gateway spares it to the sessions whose view did
// not change. Input of search_tools and call_tool that does not fit gets an
// error result naming what is wrong, as the go-sdk answers arguments that
// do not fit a tool's schema; what models often send instead is taken as
// meant: a limit as a string ("3"), a tool's arguments as a string that
// holds a JSON object, and a query over 1 KiB, of which the first words
// are searched.
//
// A call of a tool that no server exposes, directly or through call_tool,
// gets an error that suggests the names the client may have meant:
// unknown tool "read_text_file"; did you mean "filesystem__read_text_file"?
//
// Errors of a tool call become results with isError set, so that a model
// can read them: a server that is down is named, with its state and last
// error, without its URL or address; so is the server of a tool that the
// gateway never listed, whose prefix names a server that never connected.
// A JSON-RPC error that the server answered with passes through unchanged,
// but for an invalid-params one that does not name the tool, which is
// named by its server and tool. A client's cancellation is never turned
// into a result; it cancels the server's request, which is never replayed.
// A request for a method the gateway does not serve gets JSON-RPC error
// -32601 naming it, over Streamable HTTP as over stdio.
package gateway
