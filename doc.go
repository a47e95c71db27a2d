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
//	                        (Subscribe, Reconnect and Disconnect at any time)
//
// [New] does no I/O. [Manager.Connect] starts every enabled server at once,
// each on its own goroutine, and returns when all have settled or when the
// startup gate ([DefaultStartupGate], see [Options].StartupGate) has passed,
// whichever comes first. A server still connecting then exposes the tools
// it had last time, from a persistent cache, and a call to one of them waits
// for it; with nothing cached, its tools arrive later with an
// [EventChanged]. A server that fails is recorded, shown by
// [Manager.Status], and left out; the others go on, unless [Options].Strict
// is set. [Manager.Reconnect] retries failed servers, or all;
// [Manager.Disconnect] takes one away. [Manager.Close] closes the servers in
// reverse configured order, within [Options].CloseTimeout, carries on past
// failures and returns them joined, and ends every stdio server's process
// group. Connect, Reconnect, Disconnect and Close are serialized.
//
// # Views and events
//
// [Manager.Tools], [Manager.Prompts] and [Manager.Resources] are served from
// views that are rebuilt only when a server's state or lists change. A
// server's list_changed notifications are gathered and its lists fetched
// again off the receive loop; [Manager.Subscribe] hears of the change, with
// what was added and removed, after the views are updated.
//
// # Snapshots
//
// Everything the manager returns is a copy: mutating a returned tool, schema
// or status never changes the manager.
//
// # Errors
//
// Errors name the server and the operation. Branch on them with errors.Is
// and the sentinels of this package ([ErrUnknownTool], [ErrNotConnected],
// [ErrReconnecting], [ErrCircuitOpen], [ErrAmbiguous],
// [ErrInvalidArguments], [ErrTimeout], [ErrClosed]), or errors.As with
// [*ServerError] and [*AmbiguousError]. No error carries a value
// substituted from the environment.
//
// # Recovery
//
// A server whose connection is lost (its process exits, its HTTP session is
// gone) is reconnected at once, then after 0.5, 1, 2 and 4 s, then quietly
// from 15 s, doubling to 5 min; meanwhile its tools stay listed and calls to
// them wait for the connection, within their timeout. A server that needs
// more than six connection attempts in 30 s is left in the crash-loop state.
// A call that was never delivered is replayed once on a new session; a call
// that may have run is replayed only if its tool is read-only or idempotent.
package switchboard
