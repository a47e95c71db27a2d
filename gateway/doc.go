// Package gateway is the MCP server face of Switchboard: it serves the tools
// of a [switchboard.Manager] over stdio or Streamable HTTP, through a go-sdk
// [mcp.Server], with /healthz and /readyz beside /mcp.
//
// The gateway registers the manager's merged tools under their public names
// and routes every tools/call to the manager, which calls the owning server
// by the tool's original name. It follows the manager's change events, so
// its clients get notifications/tools/list_changed only when the exposed view
// really changed.
//
// Errors become tool results with isError set, so that a model can read
// them: a server that is down is named, with its state and last error. A
// JSON-RPC error that the server answered a call with passes through
// unchanged, and a client's cancellation is never turned into a result. A
// call's arguments and _meta (a progress token, say) go to the server as
// the client sent them.
package gateway
