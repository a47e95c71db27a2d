// Package config loads, merges and validates config files (JSON or JSONC).
// It resolves ${VAR} at connect time, never at load. It fingerprints the
// unresolved config.
//
// A file holds an object of servers under "mcpServers" (or "servers", as VS
// Code writes it), in the format shared with Claude Desktop, Cursor and VS
// Code. A bad entry is reported as a [Rejected] server and skipped; the others
// load. Values that [Server.Resolve] takes from the environment are collected
// in [Secrets], so that callers can redact them from anything they show.
//
// A project's .mcp.json is code from whoever wrote the repository: [Load]
// uses the one it discovers only once the user has trusted it as it is
// now, in a [TrustStore]; until then it is ignored, with an
// [*UntrustedError] in [Config.Warnings]. Files named in
// [LoadOptions.Paths] and the user's own file need no trust.
//
// A [Chain] (the environment variable [ChainEnv]) tells a Switchboard which
// entries started the Switchboards above it, so that a config that starts
// Switchboard on itself is refused rather than run without end.
package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Transport is the kind of connection to a server.
type Transport string

// The transports a server entry can name in its "type" field.
const (
	Stdio Transport = "stdio"
	HTTP  Transport = "http" // MCP Streamable HTTP; "streamable-http" is an alias.
	SSE   Transport = "sse"  // The legacy HTTP+SSE transport.
)

// DefaultTimeout is the connect timeout and default per-request timeout of a
// server whose entry has no "timeout".
const DefaultTimeout = 30 * time.Second

// EmbeddedSource is the Source of servers that come from the embedded default
// config (see [Default]).
const EmbeddedSource = "<embedded>"

// maxTimeoutMillis is the largest timeout that fits in a time.Duration.
const maxTimeoutMillis = math.MaxInt64 / int64(time.Millisecond)

// ToolFilter selects which of a server's tools are exposed. Both lists hold
// globs in [path.Match] syntax. Allow is applied first, then Deny.
type ToolFilter struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Server is one server entry. Pointer fields distinguish "absent" from the
// zero value.
//
// After [Load] or [Parse], Type is never empty and aliases are normalized, and
// the ${...} templates in Args, Env, URL and Headers are still unresolved: call
// [Server.Resolve] when connecting.
type Server struct {
	Name   string `json:"-"` // The key in the file.
	Source string `json:"-"` // The file it came from, EmbeddedSource, or "" when built in code.

	Type       Transport         `json:"type,omitempty"`
	Command    string            `json:"command,omitempty"`
	Args       []string          `json:"args,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	Cwd        string            `json:"cwd,omitempty"`
	InheritEnv bool              `json:"inheritEnv,omitempty"`
	URL        string            `json:"url,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`

	Enabled           *bool      `json:"enabled,omitempty"`
	Timeout           *int64     `json:"timeout,omitempty"` // In milliseconds; 0 disables it.
	Tools             ToolFilter `json:"tools,omitzero"`
	Prefix            *string    `json:"prefix,omitempty"`
	Required          bool       `json:"required,omitempty"`
	ProtocolVersion   string     `json:"protocolVersion,omitempty"`
	SerializeRequests bool       `json:"serializeRequests,omitempty"`
	// AlwaysLoad keeps the server's tools in the gateway's tools/list when
	// tool search is on, besides search_tools and call_tool.
	AlwaysLoad bool `json:"alwaysLoad,omitempty"`
	// Description says in a sentence what the server is for ("Notes and
	// facts to remember across conversations"): with tool search on, the
	// gateway's search_tools names each server with it, in place of the
	// first sentence of the server's own instructions. At most
	// MaxServerDescription characters.
	Description string `json:"description,omitempty"`

	// AuditPayloads writes the arguments and results of the requests to
	// this server into the gateway's audit log ("gateway.audit"), redacted:
	// values under keys that name secrets, strings that look like
	// credentials, long strings cut. Off, the log holds neither.
	AuditPayloads bool `json:"auditPayloads,omitempty"`

	// Pinning is the server's own tool pinning mode, over the config's
	// top-level "pinning"; "" follows it.
	Pinning PinningMode `json:"pinning,omitempty"`

	// ProcessPerSession gives each gateway client session its own process
	// of this stdio server, started on the session's first request and
	// stopped when it ends, so that what the server asks while serving a
	// request (sampling, elicitation) reaches exactly that client, and it
	// is offered that client's roots. Lists come from one shared process.
	ProcessPerSession bool `json:"processPerSession,omitempty"`

	// MaxInFlight caps the calls in flight to the server; more wait for a
	// slot, bounded by their context. 0 means DefaultMaxInFlight.
	MaxInFlight int `json:"maxInFlight,omitempty"`
	// MaxResponseBytes caps the size of one response from the server. 0
	// means DefaultMaxResponseBytes.
	MaxResponseBytes int64 `json:"maxResponseBytes,omitempty"`
	// OAuth configures the login to an http or sse server that requires one
	// (OAuth 2.1). A server needs it only to name a pre-registered client,
	// its scopes or a fixed callback port: without it, the client registers
	// itself where the server allows, and asks for the scopes the server
	// names.
	OAuth *OAuth `json:"oauth,omitempty"`

	// Retry configures the generic retries of tools/list and tools/call.
	// They never replay a call that may have run, unless the tool says it
	// is idempotent or read-only.
	Retry Retry `json:"retry,omitzero"`
}

// MaxServerDescription is the most characters a server's description
// may have: a sentence, which every search_tools description repeats.
const MaxServerDescription = 200

// DefaultMaxInFlight is the cap on calls in flight to one server when
// MaxInFlight is 0.
const DefaultMaxInFlight = 64

// DefaultMaxResponseBytes is the cap on one response when MaxResponseBytes is
// 0.
const DefaultMaxResponseBytes = 16 << 20

// DefaultRetryBackoff is the first delay between generic retries when
// Retry.BackoffMs is unset.
const DefaultRetryBackoff = time.Second

// Retry configures generic retries. The zero value retries nothing.
type Retry struct {
	// Max is how many retries a request may take: 0 (the default) none, -1
	// no limit. A retry on a fresh session costs 2.
	Max int `json:"max,omitempty"`
	// BackoffMs is the first delay, in milliseconds; each later one doubles.
	// Unset means 1000.
	BackoffMs *int64 `json:"backoffMs,omitempty"`
	// MaxBackoffMs caps the delay; 0 means no cap.
	MaxBackoffMs int64 `json:"maxBackoffMs,omitempty"`
}

// OAuth is a server's "oauth" object.
type OAuth struct {
	// ClientID is a client registered with the authorization server
	// beforehand; empty, the client registers itself.
	ClientID string `json:"clientId,omitempty"`
	// ClientSecret is that client's secret, if it has one. It may hold
	// ${VAR} templates, and is redacted like every secret.
	ClientSecret string `json:"clientSecret,omitempty"`
	// Scopes, if set, are the scopes to ask for, instead of those the
	// server names.
	Scopes []string `json:"scopes,omitempty"`
	// CallbackPort is the loopback port of the login's redirect, for a
	// client registered with a fixed redirect URI; 0 picks a free one.
	CallbackPort int `json:"callbackPort,omitempty"`
}

// InFlightLimit returns MaxInFlight, or DefaultMaxInFlight when it is 0.
func (s *Server) InFlightLimit() int {
	if s.MaxInFlight <= 0 {
		return DefaultMaxInFlight
	}
	return s.MaxInFlight
}

// ResponseLimit returns MaxResponseBytes, or DefaultMaxResponseBytes when it
// is 0.
func (s *Server) ResponseLimit() int64 {
	if s.MaxResponseBytes <= 0 {
		return DefaultMaxResponseBytes
	}
	return s.MaxResponseBytes
}

// Backoff returns the first retry delay.
func (r Retry) Backoff() time.Duration {
	if r.BackoffMs == nil || *r.BackoffMs < 0 {
		return DefaultRetryBackoff
	}
	return time.Duration(*r.BackoffMs) * time.Millisecond
}

// MaxBackoff returns the cap on retry delays, or 0 for none.
func (r Retry) MaxBackoff() time.Duration {
	return time.Duration(max(r.MaxBackoffMs, 0)) * time.Millisecond
}

// IsEnabled reports whether the server should be connected: Enabled is unset
// or true.
func (s *Server) IsEnabled() bool { return s.Enabled == nil || *s.Enabled }

// TimeoutDuration returns the connect timeout, which is also the default
// per-request timeout. It is [DefaultTimeout] when Timeout is unset, and 0,
// meaning no timeout, when Timeout is 0. An invalid negative Timeout gives the
// default.
func (s *Server) TimeoutDuration() time.Duration {
	switch {
	case s.Timeout == nil || *s.Timeout < 0:
		return DefaultTimeout
	case *s.Timeout > maxTimeoutMillis:
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(*s.Timeout) * time.Millisecond
}

// PublicPrefix returns the prefix of the server's public tool names: its Name
// unless Prefix is set. An empty Prefix means no prefix.
func (s *Server) PublicPrefix() string {
	if s.Prefix == nil {
		return s.Name
	}
	return *s.Prefix
}

// TransportType returns Type, with the alias "streamable-http" normalized to
// [HTTP]. When Type is empty, as it may be for a Server built in code, it is
// inferred: [Stdio] if Command is set, else [HTTP] if URL is set, else "".
func (s *Server) TransportType() Transport {
	switch {
	case s.Type == "streamable-http":
		return HTTP
	case s.Type != "":
		return s.Type
	case s.Command != "":
		return Stdio
	case s.URL != "":
		return HTTP
	}
	return ""
}

// LogsIn reports whether the server may log in with OAuth: it is an http
// or sse server whose headers do not set Authorization themselves.
func (s *Server) LogsIn() bool {
	if t := s.TransportType(); t != HTTP && t != SSE {
		return false
	}
	for name := range s.Headers {
		if strings.EqualFold(name, "Authorization") {
			return false
		}
	}
	return true
}

// DisplayURL returns the server's URL without userinfo, query or fragment,
// for logs and status. See [RedactURL].
func (s *Server) DisplayURL() string { return RedactURL(s.URL) }

// Clone returns a deep copy of s.
func (s *Server) Clone() Server {
	c := *s
	c.Args = slices.Clone(s.Args)
	c.Env = maps.Clone(s.Env)
	c.Headers = maps.Clone(s.Headers)
	c.Tools.Allow = slices.Clone(s.Tools.Allow)
	c.Tools.Deny = slices.Clone(s.Tools.Deny)
	c.Enabled = clonePtr(s.Enabled)
	c.Retry.BackoffMs = clonePtr(s.Retry.BackoffMs)
	c.Timeout = clonePtr(s.Timeout)
	c.Prefix = clonePtr(s.Prefix)
	if s.OAuth != nil {
		o := *s.OAuth
		o.Scopes = slices.Clone(s.OAuth.Scopes)
		c.OAuth = &o
	}
	return c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Fingerprint returns the hex SHA-256 of a canonical JSON encoding of the
// unresolved entry, without Name, Source and Pinning. It does not depend on the key
// order or layout of the file, nor on the environment, and any change to a
// field changes it. It keys caches of what a server offers.
func (s *Server) Fingerprint() string {
	c := s.Clone()
	c.Type = s.TransportType()
	c.Pinning = "" // what the server offers does not depend on it
	// Empty and absent collections mean the same; encode them the same.
	if len(c.Args) == 0 {
		c.Args = nil
	}
	if len(c.Env) == 0 {
		c.Env = nil
	}
	if len(c.Headers) == 0 {
		c.Headers = nil
	}
	if len(c.Tools.Allow) == 0 {
		c.Tools.Allow = nil
	}
	if len(c.Tools.Deny) == 0 {
		c.Tools.Deny = nil
	}
	// Struct fields encode in declaration order and map keys sorted, so the
	// encoding is canonical. It cannot fail: every field is a plain value.
	b, err := json.Marshal(&c)
	if err != nil {
		panic("config: fingerprint: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// RedactURL returns raw without userinfo, query or fragment:
// "https://user:pw@h/p?token=x#f" gives "https://h/p". A URL that does not
// parse, or has no scheme or host, gives "<invalid-url>", since it cannot be
// shown safely.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "<invalid-url>"
	}
	clean := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return clean.String()
}

// Error is one problem in a config file.
type Error struct {
	File         string
	Line, Column int    // 1-based; set for syntax errors only.
	Server       string // "" for file-level problems.
	Field        string // A dotted path, such as "headers.Authorization", "args[2]" or "tools.allow[0]".
	Problem      string

	entry bool  // about an entry, even one whose name is ""
	err   error // the cause, if any
}

// Error formats e as "FILE:LINE:COLUMN: PROBLEM" for syntax errors,
// `FILE: server "NAME": FIELD: PROBLEM` for entries, and "FILE: PROBLEM" for
// other problems with the file. Parts that are not set are left out.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
		}
		b.WriteString(": ")
	}
	if e.Server != "" || e.entry {
		fmt.Fprintf(&b, "server %q: ", e.Server)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}

// Unwrap returns the cause of e, such as the error from reading the file, or
// nil.
func (e *Error) Unwrap() error { return e.err }

// Rejected is an entry that did not validate. It is skipped, but kept so that
// callers can show it as failed.
type Rejected struct {
	Name     string
	Source   string
	Required bool  // Best effort: true if the entry had "required": true.
	Err      error // All its problems, joined *Error values.
}

// Config is the result of loading one or more config files.
type Config struct {
	Servers  []Server   // Valid entries in configured order, disabled ones included.
	Rejected []Rejected // Invalid entries in configured order.
	// ToolSearch is the top-level "toolSearch" of the file of highest
	// precedence that sets it; off by default.
	ToolSearch ToolSearch
	// Gateway is the top-level "gateway"; its Auth and its Policies each
	// come whole from the file of highest precedence that sets them.
	Gateway Gateway
	// Pinning is the top-level "pinning" of the file of highest precedence
	// that sets it: tool pinning's mode and pins file.
	Pinning  Pinning
	Warnings []error  // Unknown fields, ignored values and the like.
	Files    []string // The files read, lowest precedence first; EmbeddedSource for the default.
}

// Lookup returns a copy of the valid server called name.
func (c *Config) Lookup(name string) (Server, bool) {
	for i := range c.Servers {
		if c.Servers[i].Name == name {
			return c.Servers[i].Clone(), true
		}
	}
	return Server{}, false
}
