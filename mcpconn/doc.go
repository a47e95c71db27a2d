// Package mcpconn defines what a host sees of its connection to one MCP
// server, in one place for every package of Switchboard: the server's
// [State], the errors a request to it returns ([ServerError],
// [UnavailableError], [AmbiguousError] and the sentinels they wrap), and the
// [Peer] on whose behalf a request is made.
//
// The package switchboard refers to these types by alias, so a host rarely
// imports this package: switchboard.State and mcpconn.State are one type.
// It is a leaf: it imports nothing of Switchboard's.
package mcpconn
