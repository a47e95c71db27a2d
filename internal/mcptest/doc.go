// Package mcptest is a scriptable MCP server for tests, which can inject
// faults. Only tests import it: the demo server of `switchboard
// demo-server` is package demo.
//
// A [Script] says how a server behaves. The server is a real go-sdk
// mcp.Server: the faults are injected by its middleware, and JSON-RPC and
// the transports are the SDK's own. One Script runs in three forms:
//
//	NewServer(script)           in process
//	  .ConnectInMemory(ctx)     net.Pipe transports; works under testing/synctest
//	  .Handler()                Streamable HTTP, stateful sessions (httptest.NewServer)
//	  .SSEHandler()             2024-11-05 HTTP+SSE
//	StartHTTP(server)           a real listener that can Stop and Start again
//	StdioCommand(script)        a child process: the test binary re-executed;
//	                            TestMain calls RunIfChild, which runs ServeStdio
//	StartHTTPProcess(script)    the same child serving HTTP, as StartHTTP does:
//	                            for tests that measure their own process
//
// # Knobs
//
// Tools: Script.Tools (default [DefaultTools]) with a [Behavior] each: [Echo],
// [Fail], [Sleep], [Big], [Add], [Increment], [Hang]. PageSize paginates
// tools/list. [Server.SetTools] changes the list at run time (clients get a
// debounced list_changed) and [Server.NotifyToolsChanged] sends list_changed
// at once, for storms.
//
// Slowness and hangs: StartDelay delays the handshake and CallDelay every
// call; HangOnInitialize and HangOnListTools never answer. Every wait
// selects on the request context and on the session and server closing, so
// cancellation, [Server.Close] and a closing session release it; waits use
// timers, so synctest can drive them.
//
// Exits: ExitAfterInitialize, ExitAfterListTools, ExitOnCall (before the
// tool runs) and CrashAfterCall (after it ran, before its answer is
// written: the outcome a client cannot know). What "exit" means depends on
// the form:
//
//	form          after a written answer        ExitOnCall (nothing answered)
//	command       os.Exit(0)                    os.Exit(0)
//	in memory     the connection is dropped     the connection is dropped
//	HTTP          the session is closed         Restart: every session is lost,
//	                                            requests in flight are aborted
//
// Protocol eras: the go-sdk client tries server/discover (revision 2026-07-28,
// stateless) before initialize. LegacyOnly answers server/discover with
// "method not found", as older servers do, so that clients fall back to
// initialize. The Streamable HTTP handler serves stateful sessions, which
// always end up in the legacy era.
//
// Liveness: Script.Ping answers ping normally, never ([PingHang]), with
// "method not found" ([PingMethodNotFound]: alive) or with an error
// ([PingFail]).
//
// Overload: [Server.RejectPOSTs] answers the next POSTs with a status such
// as 429 or 503, with Retry-After, without processing them.
//
// Stale sessions: [Server.Restart] (or [HTTPServer.Stop] and Start) forgets
// every HTTP session; [Server.SetUnknownSession] then chooses between the
// go-sdk's 404 and the 400 that popular TypeScript servers answer.
//
// Stdio misbehaviour: GarbageOnStart and GarbageOnCall write lines that are
// not JSON-RPC to stdout (a banner, a stray print), by default not JSON;
// Garbage and GarbageBytes choose the line (a logger's JSON line, a
// megabyte of garbage).
//
// # Counting
//
// [Server.Counts] reports handshakes, tools/list requests and calls, in total
// and per tool. A command-form server records the same events, plus its
// process starts, under Script.StateDir, one line per event appended with
// O_APPEND so that several processes can share it; [ReadCounts] totals them.
//
// # Goroutines
//
// Every goroutine a [Server] starts is owned by it: [Server.Close] closes
// every session, releases every wait and returns only when all of them have
// ended. [HTTPServer.Stop] and [HTTPServer.Close] wait for their handlers.
package mcptest
