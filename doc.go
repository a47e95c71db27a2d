// Package switchboard keeps an agent connected to all of its MCP servers.
//
// A [Manager] reads the servers from a [config.Config], connects to them in
// parallel, and exposes their tools under public names (see [Tool]), merged
// and sorted. It routes each call to the server that owns the tool, by the
// tool's original name, and tells subscribers when anything changes.
//
// # Lifecycle
//
//	New ──▶ Connect ──▶ Tools / CallTool / Prompts / Resources / Status ──▶ Close
//	          (Subscribe, Reconnect, ReconnectFailed and Disconnect at any time)
//
// [New] does no I/O. Each configured server is one upstream for the
// manager's whole life: connecting, reconnecting, disconnecting and a failed
// start all reuse it, so what it owns, its resource subscriptions above
// all, survives them. [Manager.Connect] starts every enabled server at
// once, and returns when all have settled or when the startup gate
// ([DefaultStartupGate], see [Options].StartupGate) has passed, whichever
// comes first. A server still connecting then exposes the tools it had last
// time, from a persistent cache, and a call to one of them waits for it;
// with nothing cached, its tools arrive later with an [EventChanged], and a
// call to one of them, known by its prefix, waits for it meanwhile. The
// servers a host needs before it goes on, named in [Options].WaitFor, are
// waited for past the gate, until they have listed their tools, prompts and
// resources, or failed. A server that fails is recorded, shown by [Manager.Status], and retried on
// its schedule; the others go on, unless [Options].Strict is set.
// [Manager.Reconnect] and [Manager.ReconnectFailed] give servers a fresh
// connection at once; [Manager.Disconnect] stops one until Connect, or a
// Reconnect that names it. [Manager.Close] closes
// the servers in reverse configured order, within [Options].CloseTimeout,
// carries on past failures and returns them joined, and ends every stdio
// server's process tree. Connect, Reconnect, ReconnectFailed, Disconnect,
// Reconfigure and Close are serialized, and all but Close return once every
// subscriber has been told of what they changed (at the startup gate,
// Connect's subscribers have been told of the starts; what settles later
// follows as events).
//
// # Views and events
//
// The manager only combines its upstreams. Their events are applied, in
// order, by one goroutine, which swaps in a new immutable view: the merged
// tools, prompts and resources, and every server's status. [Manager.Tools],
// [Manager.CallTool] and the other queries read the current view with one
// atomic load and take no lock. A server's list_changed notifications are
// gathered and its lists fetched again off the receive loop;
// [Manager.Subscribe] hears of the change, with what was added and removed,
// after the view is updated, and of states, list fetches and failed
// attempts. Every event names its server. An [Observer] hears of calls, for
// metrics and logs.
//
// # Tool pinning
//
// With [Options].Pinning (or a config's "pinning") on, the manager keeps
// the pin of each tool's definition in a pins file, pinning a server's
// tools as it first lists them, and checks every list against it: a tool
// that changed or is new is logged once and shown in [ServerStatus]
// (warn), or held out of every list and call until [Manager.ApprovePins]
// pins it or it changes back (enforce), with an [EventHeld] either way.
// Prompts and resources are not pinned.
//
// # Queries
//
// Queries and calls take the caller's [*Query]: [Options].Filter,
// PromptFilter and ResourceFilter decide per query what is exposed, and a
// call, get or read of what they hide is refused as unknown.
//
// # Snapshots
//
// Everything the manager returns is a copy: mutating a returned tool, schema
// or status never changes the manager. A [Tool] copies its definition only
// when asked ([Tool.Definition]), so that listing tools stays cheap.
//
// # Errors
//
// Errors name the server and the operation. Branch on them with errors.Is
// and the sentinels of this package ([ErrUnknownTool], [ErrNotConnected],
// [ErrReconnecting], [ErrCircuitOpen], [ErrAmbiguous],
// [ErrInvalidArguments], [ErrTimeout], [ErrClosed]), or errors.As with
// [*ServerError], [*UnavailableError], [*AmbiguousError] and
// [*UnknownToolError], which names the tools the caller may have meant
// (read_text_file: filesystem__read_text_file). No error carries a value
// substituted from the environment.
//
// # Recovery
//
// A server whose connection is lost (its process exits, its HTTP session is
// gone) is reconnected at once, then after 0.5, 1, 2 and 4 s, then from
// 15 s, doubling to 5 min, for ever; a server that fails to start follows
// the same schedule. Its tools stay listed whatever its state. A call to a
// server that is connecting or reconnecting waits for its next attempt,
// within its timeout; one to a server that failed asks for one early
// attempt (at most one between two scheduled ones, however many calls there
// are) or fails at once, naming the server, its state and its last error.
// While calls want an http or sse server that is down, a check that opens
// no session (a TCP connect, or a HEAD request where a proxy answers for
// the server) finds out every second whether it is back, and the next
// attempt comes at once when it is.
// A server whose sessions keep dying within a minute (six times in 30 s) is
// in crash-loop: it is tried every 5 min, and a stable minute, a manual
// reconnect or a new config ends the loop. An http or sse server that asks
// for an OAuth login that no stored token answers is in needs-auth until
// `switchboard login NAME`, or [Login], stores one (see Options.OAuthDir);
// its calls fail at once with [ErrLoginRequired]. A stdio server that is a
// Switchboard started on a config that starts it again refuses to run (see
// config.Chain): it is failed with [ErrRecursion], and tried again only on a
// manual reconnect or a change of its config. A call that was never
// delivered is replayed once on a new session; a call that may have run is
// replayed only if its tool is read-only or idempotent.
package switchboard
