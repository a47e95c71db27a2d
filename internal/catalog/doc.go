// Package catalog turns the raw tool lists of many MCP servers into one
// merged, sorted view with public names, and routes each public name back to
// its server and original tool name.
//
// Everything here is a pure function over snapshots: there is no I/O, no
// goroutine and no lock. A [View] is immutable once [Build] returns it, so it
// is safe for concurrent use, and every value it hands out is a fresh copy
// that callers may change freely.
//
// # Public names
//
// The public name of a tool is <prefix>__<tool>, or the tool name alone when
// the prefix is "". Each part is sanitized with [Sanitize] and the whole name
// is at most 64 characters. A name that is too long, or that two or more
// (server, tool) pairs would share, gets a hash suffix derived from the
// configured server name and the original tool name:
//
//	docs__search                         unique, kept bare
//	foo__create_issue_b2b06633           shared by servers "foo" and "foo!"
//
// Names are allocated in sorted order of (candidate, server, tool), so the
// result never depends on the order in which servers answered.
//
// # Per query
//
// A [View] holds what every caller may see. [Filter] narrows a list with a
// predicate that the manager makes of a caller's query, and
// [ApprovalRules] say which tools need a human first. A predicate that
// errors or panics hides its item ([Guard]): filters fail closed. [InputSchema]
// and [StrictSchema] prepare a tool's schema for a model without ever
// changing the tool.
package catalog
