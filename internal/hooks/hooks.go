//lint:file-ignore SA1019 Switchboard forwards logging for as long as servers and clients use it.

// Package hooks hands the gateway what it needs of a manager beyond the
// manager's public API, so that hooks only a gateway uses stay off
// switchboard.Manager: package switchboard provides them, and package
// gateway is their one user.
package hooks

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/mcpconn"
)

// Gateway is what a gateway needs of a manager beyond its public API.
type Gateway interface {
	// Settle waits while servers are making their first connection with
	// nothing to show for it yet, within the startup gate and ctx; the
	// manager's views are then up to date with every change so far. A
	// gateway settles before it answers a handshake or a list.
	Settle(ctx context.Context)
	// PeerRootsChanged tells the processes that p's session has of its own
	// (config processPerSession) that p's roots changed.
	PeerRootsChanged(p mcpconn.Peer)
	// SetLoggingLevel asks every server that logs for level, now and after
	// every reconnect: the level the gateway's clients ask for.
	SetLoggingLevel(ctx context.Context, level mcp.LoggingLevel) error
	// Revision identifies the manager's view of what its servers expose
	// and of the config's settings for gateways (ToolSearch, AlwaysLoad,
	// Description) and the servers' instructions:
	// it changes whenever they may have, and only then, so that a gateway
	// that saw a revision need not look again.
	Revision() uint64
	// ToolSearch is the config's toolSearch, as of New or the last
	// Reconfigure.
	ToolSearch() config.ToolSearch
	// Follow calls f, from the goroutine that tells the manager's
	// subscribers, in order with their events, after each new revision,
	// until stop: f must not block for long (see Manager.Subscribe). The
	// gateway's f brings its registry up to date, which waits for a sync
	// in progress, itself bounded: it never waits for a request.
	Follow(f func()) (stop func())
	// AlwaysLoad reports whether the server's config marks it alwaysLoad:
	// with tool search on, its tools stay listed.
	AlwaysLoad(server string) bool
	// Description is the server's config description: what it is for, in
	// a sentence, or "".
	Description(server string) string
	// ResourceServer names the server that serves uri (a resource, a URI
	// a template matches, or a URI template), whoever asks; "" if none.
	ResourceServer(uri string) string
	// AuditPayloads reports whether the server's config marks it
	// auditPayloads: the gateway's audit log then holds its requests'
	// arguments and results, redacted.
	AuditPayloads(server string) bool
	// ResourceVisible reports whether query (a *switchboard.Query, or
	// nil) may read or subscribe to uri, a resource or a URI a template
	// matches, by the manager's ResourceFilter; false if nothing serves it.
	ResourceVisible(ctx context.Context, query any, uri string) bool
}

// Of returns the hooks of manager, a *switchboard.Manager. Package
// switchboard sets it when it is initialized, before any gateway can hold
// a manager.
var Of func(manager any) Gateway

// unfilteredKey marks a context whose lists are unfiltered.
type unfilteredKey struct{}

// Unfiltered returns ctx marked so that the manager's lists and lookups
// made with it skip Options.Filter, PromptFilter and ResourceFilter: the
// gateway registers every item with its go-sdk server, and decides per
// session who sees and calls what. Only packages of this module can mark
// a context so.
func Unfiltered(ctx context.Context) context.Context {
	return context.WithValue(ctx, unfilteredKey{}, true)
}

// IsUnfiltered reports whether ctx was marked by Unfiltered.
func IsUnfiltered(ctx context.Context) bool {
	v, _ := ctx.Value(unfilteredKey{}).(bool)
	return v
}

// admitKey carries, in a request's context, the gateway's admission of a
// request to its server.
type admitKey struct{}

// WithAdmit returns ctx carrying admit, which the manager calls, with the
// server's name, once it knows that a request made with ctx (a tool call, a
// prompt get, a resource read or subscription, a completion) may reach
// that server (the filters allow it, and it is connected) and before it
// sends it: an error refuses the request, and the manager returns it as
// it is. The gateway's rate limits take their tokens so.
func WithAdmit(ctx context.Context, admit func(server string) error) context.Context {
	return context.WithValue(ctx, admitKey{}, admit)
}

// Admit calls the admission of ctx, if any, for server.
func Admit(ctx context.Context, server string) error {
	if admit, ok := ctx.Value(admitKey{}).(func(string) error); ok {
		return admit(server)
	}
	return nil
}
