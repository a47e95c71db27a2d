// Package upstream manages one MCP server for its whole life: its config,
// its desired state, its transport and [mcp.ClientSession], its state
// machine, its lists and resource subscriptions.
//
// # Structure
//
// An [Upstream] is a front (upstream.go, lifecycle.go, call.go): its
// methods hand each call to one of four parts, each a type with its own
// files, which [New] wires together. Calls run one way, from the front
// down, and the files below use no name of the files above; a part never
// calls back up into the Upstream, and is given what it needs of another
// part at construction, as a func field it owns.
//
//	                  Upstream, the front
//	       ┌───────────────────┼──────────────────┐
//	       ▼                   │                  ▼
//	  supervisor               │              requester
//	state, commands,           │       calls, probes, retries,
//	owner goroutine,           │           classification
//	attempts, events           │
//	  │         └───────────┐  │
//	  ▼                     ▼  ▼
//	dialer                list set
//	transports, process,  lists, tool index,
//	session, the go-sdk   subscriptions,
//	client                logging level
//
// Each part owns its state, and its lock, if it has one:
//
//   - The supervisor (supervisor.go, commands.go, owner.go, attempt.go,
//     waits.go) takes the commands (start, reconnect, disconnect, a new
//     config, close) and runs the owner goroutine (see Lifecycle). Its lock
//     guards the state, the current session, the attempt that requests wait
//     for and the pending commands. It publishes every Event, under that
//     lock, with a Snapshot that takes the list set's lock inside it: the
//     only order the two locks are ever taken in.
//   - The dialer (dialer.go) opens and closes sessions: it resolves the
//     config, starts a stdio server's process or reaches an http or sse
//     server through a pool of connections, logs in, and initializes the
//     go-sdk session with the upstream's client, whose handlers route what a
//     server sends (client.go, peer.go). Its lock guards only the pool, made
//     on first use.
//   - The list set (lists.go, subscriptions.go) keeps the lists, the tool
//     index that calls check, the resources subscribed to and the logging
//     level, and loads them on the owner's behalf. Its lock guards them for
//     the change only: it publishes after releasing it, through the
//     supervisor.
//   - The requester (requester.go) sends requests on the current session,
//     which it asks the supervisor for, with the recovery rules of
//     [Upstream.CallTool], on behalf of a peer (peer.go) if the request's
//     context carries one. It holds no lock, and a call's path stays within
//     it.
//
// The small helpers (the redactor's URL, the table of requests made for
// peers, the roots offered) each have a lock of their own. No lock is held
// across I/O: a dial, a close, a request, a notification to the server or a
// log line runs after the lock that guarded its change is released. Only
// OnEvent is called under the supervisor's lock, so that events keep their
// order; it must not block.
//
// # Lifecycle
//
// An [Upstream] is created by [New], which does no I/O, and lives until
// [Upstream.Close]. Nothing replaces it: [Upstream.Start],
// [Upstream.Connect], [Upstream.Restart], [Upstream.Disconnect] and
// [Upstream.Reconfigure] are commands to it. A command publishes the state
// it asks for at once (connecting, disconnected, disabled, closed) and
// leaves the work to the owner goroutine, launched by the first Start: the
// only goroutine that connects, closes sessions, and moves the state on its
// own. Every session it drops is closed in the background, joined by Close.
//
//	             Start, Connect, Restart, a new config
//	                          │
//	disconnected ◀────────────┼──────────── Disconnect, from any state
//	                          ▼
//	                     connecting ──ok──▶ connected ◀───────────────┐
//	                          │               │ session lost          │
//	                        error             ▼                       │
//	                          │          reconnecting ── the ladder ──┤ ok
//	                          ▼               │ ladder spent          │
//	                        failed ◀──────────┘                       │
//	                          └───── the schedule, for ever ──────────┤
//	                                                                  │
//	   6 crashes in 30 s ──▶ crash-loop ──── every 5 min, for ever ───┘
//
//	disabled: the config says so          closed: Close, from any state
//
//	needs-auth: an attempt, or a request, met a login that no stored token
//	answers (Options.OAuth); tried when the store's login changes (looked
//	at every 2 s), every 5 min, or on a manual reconnect
//
//	failed, held: the server is a Switchboard that refused to run inside
//	this one (ErrRecursion); tried again only on a manual reconnect or a
//	change of its connection's config
//
// After a failure the next attempt follows a schedule: at once, then after
// 0.5, 1, 2 and 4 s (the ladder), then from 15 s doubling to 5 min, each
// ±20%, for ever. The breaker counts crashes, sessions that were established
// and lost within a minute, not failed attempts: a server that is merely
// down never trips it. Six crashes in 30 s open it (crash-loop): the server
// is then tried every 5 min, any crash keeps it open, and a minute of
// stable connection, a manual reconnect or a new config closes it.
//
// # Requests that wait
//
// Requests such as [Upstream.CallTool] run concurrently on the current
// session. Without one, a request waits for the next attempt, within its
// bounds: while connecting or reconnecting always; while failed only if it
// may have the step's early attempt. Traffic adds to the schedule one
// early attempt per step between two scheduled ones, which the first
// request that waits asks for, and the attempts of checks: while requests
// want a server that is down (one waits, or one found it down within
// 10 s), the owner checks, at most once a second and opening no session,
// whether it is back (see [Check]; an http or sse server by default), and
// attempts at once when it is. Each attempt that a check made and that
// failed doubles the time to the next check, until a check finds the server
// down again; a server in crash-loop or needs-auth is not checked. A
// request to a server in crash-loop, needs-auth, disconnected, disabled or
// closed fails at once, naming the state and the last cause
// ([*UnavailableError]). Whatever the state, the last lists stay, so a
// down server's tools stay listed.
//
// A list is fetched whole, page by page, within limits on its items, its
// bytes and its pages (see maxListItems in pages.go), so that a hostile
// server costs a bounded amount of memory per fetch. A list over a limit
// is dropped with a [*ListTooLargeError] and not retried: the first tool
// list fails the attempt, which is retried on the schedule, each attempt
// bounded the same way; any other keeps the previous list and is reported
// as an EventList with the error.
//
// Every change is published as an [Event], in order, with a [Snapshot] of
// the upstream as of the change, before anyone waiting for it wakes.
//
// # Stdio servers
//
// A stdio server runs without a shell, as the root of a process tree of its
// own (internal/proctree: a process group, or a job object on Windows), with
// a minimal environment plus its configured env, and the chain of
// Switchboards above it (config.ChainEnv): the gateway's own and the
// server's entry. A server that is a Switchboard reads it, and refuses to
// run inside itself: it exits with config.ChainExitCode after a line on
// stderr that says why, which the attempt recognises (ErrRecursion). Its
// exit is seen at once by a goroutine blocked in its own Wait, not inferred
// later from a failed call. Closing it goes in steps: stdin is closed, then
// the tree gets SIGTERM (CTRL_BREAK on Windows), then SIGKILL, so that no
// process of the tree survives. Close's deadline cuts the steps short. What
// it writes to stderr is kept, bounded, for error messages, redacted: the
// last lines, and before them the first few that look like the statement of
// a cause (see tail), which a server that prints its usage after the cause
// would otherwise push out.
//
// Its stdout reaches the go-sdk's transport through a filter that passes
// on only JSON-RPC messages: a line that is not one (a banner, a stray
// print, a logger's JSON line) is skipped, as the official TypeScript and
// Python SDKs skip it, instead of ending the session; it is counted
// (Options.OnSkippedLine) and logged, at most once per 10 s with the count
// since. A line is judged whole, as go-sdk would decode it, up to 64 KiB;
// a longer one is not held, but passed on as it streams if it starts like
// JSON, so that the transport's own size limit applies to large results,
// and skipped as it streams otherwise.
//
// The log lines about skipped lines, and a server's own log messages
// (notifications/message, whether they go to a client or to the host's
// log, on any transport), are bounded the same way, by a ratelog.Log each (see
// noise.go): a few lines per period, the rest counted in one summary line
// at its end; a log message's data is cut at maxLogData besides.
//
// # Requests on behalf of a client
//
// A request whose context carries a [Peer] (see [WithPeer]; in the gateway,
// one downstream session) is made on that client's behalf: what the server
// sends while serving it goes to that client, and the client's answer comes
// back. Attribution must be exact, or a request must be refused; it is
// never guessed:
//
//   - Streamable HTTP: a server sends what a request causes (sampling and
//     elicitation requests, log messages, progress) on the response stream
//     of that request. The go-sdk client merges every stream before its
//     handlers see a message, so the round-tripper tags each message on the
//     stream with the request's token, in its _meta, and the handlers route
//     by the tag and remove it.
//   - Progress carries its own link: the client's progress token is
//     swapped for a token unique to the upstream request on the way out, and
//     back on the way in.
//   - Stdio: nothing on the wire ties a message to a request. It goes to the
//     client only while the requests in flight to the server all come from
//     one session; otherwise a server's request is answered with a JSON-RPC
//     error that says why, and a log message goes to the host's logger. A
//     server with processPerSession runs one process per client session
//     (the manager's business), which makes attribution exact, and is
//     offered that client's roots (see Options.Roots); a shared one is
//     offered none.
//   - From revision 2026-07-28, a server asks for input in its result (multi
//     round-trip requests, SEP-2322). The go-sdk's own fulfilment is off:
//     the result goes back to the caller, whose client answers and retries.
//
// The go-sdk client hands a response to its caller at once but queues
// notifications for its handlers, so a log message or progress sent just
// before a response could reach the client after its request ended. The
// transport counts such notifications as they arrive, and a request made
// for a client waits, briefly, for the handlers to catch up.
//
// # Secrets
//
// The config is resolved (${VAR} substituted) on every connection attempt,
// never earlier. Every substituted value is remembered, and every error this
// package returns or publishes is redacted with them (and their base64 and
// URL-escaped forms); a stdio server's stderr lines, as they are kept. An
// http or sse server's configured headers and token go to the origin of its
// url alone: its round tripper follows redirects within that origin only,
// and sends nothing anywhere else (see origin.go). What a server wrote to
// stderr is for its operator: the gateway gives its clients errors without
// it (WithoutStderr).
package upstream
