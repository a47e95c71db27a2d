// Package upstream manages the connection to one MCP server: its transport,
// its [mcp.ClientSession], its state machine and its raw tool list.
//
// # Lifecycle
//
// An [Upstream] is created by [New], which does no I/O. [Upstream.Start]
// launches its owner goroutine, the only goroutine that ever connects,
// disconnects or changes the session. Requests such as [Upstream.CallTool]
// run concurrently on the current session, which they read under a lock;
// they never wait behind a connection attempt.
//
//	        Start
//	          │
//	          ▼
//	     connecting ───ok───▶ connected ───session lost───▶ failed
//	          │
//	          └────error────▶ failed
//
//	Close, from any state ───▶ closed
//
// Every transition is published as an [Event], in order, with a timestamp and
// a redacted cause.
//
// # Stdio servers
//
// A stdio server runs without a shell, in its own process group, with a
// minimal environment plus its configured env. Its exit is seen at once by a
// goroutine blocked in its own Wait, not inferred later from a failed call.
// Close ends it in steps: stdin is closed, then the group gets SIGTERM, then
// SIGKILL, so that no process of the group survives. The last lines of its
// stderr are kept, redacted, for error messages.
//
// # Secrets
//
// The config is resolved (${VAR} substituted) on every connection attempt,
// never earlier. Every substituted value is remembered, and every error this
// package returns or publishes is redacted with them.
package upstream
