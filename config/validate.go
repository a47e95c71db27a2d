package config

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Validate reports every problem with s, joined. Each is an [*Error] whose
// File is s.Source. Messages name the field and what is wrong, and never show
// the values of Env or Headers.
func (s *Server) Validate() error {
	ps := s.problems()
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errors.Join(errs...)
}

const emptyNameProblem = "server name must not be empty"

// problems checks everything that can be checked on the Go value. Parse adds
// the checks that need the JSON (types, unknown fields).
func (s *Server) problems() []*Error {
	var ps []*Error
	add := func(field, format string, args ...any) {
		ps = append(ps, &Error{File: s.Source, Server: s.Name, Field: field, Problem: fmt.Sprintf(format, args...), entry: true})
	}

	if s.Name == "" {
		add("", emptyNameProblem)
	}

	typ := s.Type
	switch typ {
	case Stdio, HTTP, SSE:
	case "streamable-http":
		typ = HTTP
	case "":
		switch {
		case s.Command != "" && s.URL != "":
			add("", "command and url are both set; want one, or a type")
		case s.Command != "":
			typ = Stdio
		case s.URL != "":
			typ = HTTP
		default:
			add("", "want a command (stdio) or a url (http, sse)")
		}
	default:
		add("type", "unknown transport %q (want stdio, http or sse)", typ)
		typ = ""
	}

	switch typ {
	case Stdio:
		if s.Command == "" {
			add("command", "required for stdio servers")
		}
		if s.URL != "" {
			add("url", "only for http and sse servers")
		}
		if len(s.Headers) > 0 {
			add("headers", "only for http and sse servers")
		}
		if s.OAuth != nil {
			add("oauth", "only for http and sse servers")
		}
	case HTTP, SSE:
		switch {
		case s.URL == "":
			add("url", "required for %s servers", typ)
		case !strings.Contains(s.URL, "${") && !isHTTPURL(s.URL):
			// A URL with templates is checked by Resolve, once it is known.
			add("url", "want an absolute http or https URL")
		}
		if s.Command != "" {
			add("command", "only for stdio servers")
		}
		if len(s.Args) > 0 {
			add("args", "only for stdio servers")
		}
		if len(s.Env) > 0 {
			add("env", "only for stdio servers")
		}
		if s.Cwd != "" {
			add("cwd", "only for stdio servers")
		}
		if s.InheritEnv {
			add("inheritEnv", "only for stdio servers")
		}
		if s.ProcessPerSession {
			add("processPerSession", "only for stdio servers: an HTTP server ties what it asks to the request that caused it")
		}
	}

	if s.Timeout != nil {
		switch t := *s.Timeout; {
		case t < 0:
			add("timeout", "must not be negative")
		case t > maxTimeoutMillis:
			add("timeout", "too large (at most %d milliseconds)", maxTimeoutMillis)
		}
	}
	for _, list := range []struct {
		field string
		globs []string
	}{{"tools.allow", s.Tools.Allow}, {"tools.deny", s.Tools.Deny}} {
		for i, g := range list.globs {
			if _, err := path.Match(g, ""); err != nil {
				add(fmt.Sprintf("%s[%d]", list.field, i), "bad glob %q: %v", g, err)
			}
		}
	}
	if s.MaxInFlight < 0 {
		add("maxInFlight", "must not be negative (0 means the default, %d)", DefaultMaxInFlight)
	}
	if s.MaxResponseBytes < 0 {
		add("maxResponseBytes", "must not be negative (0 means the default, %d)", DefaultMaxResponseBytes)
	}
	if s.Retry.Max < -1 {
		add("retry.max", "want -1 (no limit), 0 (no retries) or a positive count")
	}
	if s.Retry.BackoffMs != nil && *s.Retry.BackoffMs < 0 {
		add("retry.backoffMs", "must not be negative")
	}
	if s.Retry.MaxBackoffMs < 0 {
		add("retry.maxBackoffMs", "must not be negative")
	}
	if n := utf8.RuneCountInString(s.Description); n > MaxServerDescription {
		add("description", "%d characters long, over the limit of %d: say in a sentence what the server is for", n, MaxServerDescription)
	}
	if v := s.ProtocolVersion; v != "" && !isDate(v) {
		add("protocolVersion", "want a date such as 2025-11-25")
	}

	for i, a := range s.Args {
		if _, err := parseTemplate(a); err != nil {
			add(fmt.Sprintf("args[%d]", i), "%s", err)
		}
	}
	for _, k := range sortedKeys(s.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			add("env", "invalid variable name %q", k)
		}
		if _, err := parseTemplate(s.Env[k]); err != nil {
			add("env."+k, "%s", err)
		}
	}
	if _, err := parseTemplate(s.URL); err != nil {
		add("url", "%s", err)
	}
	if o := s.OAuth; o != nil {
		if o.CallbackPort < 0 || o.CallbackPort > 65535 {
			add("oauth.callbackPort", "want a port from 1 to 65535, or 0 for any free one")
		}
		if o.ClientSecret != "" && o.ClientID == "" {
			add("oauth.clientSecret", "set without oauth.clientId: a secret belongs to a pre-registered client")
		}
		if _, err := parseTemplate(o.ClientSecret); err != nil {
			add("oauth.clientSecret", "%s", err)
		}
		for i, scope := range o.Scopes {
			if scope == "" || strings.ContainsAny(scope, " \t\r\n\"\\") {
				add(fmt.Sprintf("oauth.scopes[%d]", i), "invalid scope %q", scope)
			}
		}
	}
	for _, k := range sortedKeys(s.Headers) {
		if !isToken(k) {
			add("headers", "invalid header name %q", k)
		}
		v := s.Headers[k]
		if strings.ContainsAny(v, "\r\n\x00") {
			add("headers."+k, "value contains a line break or NUL")
		} else if _, err := parseTemplate(v); err != nil {
			add("headers."+k, "%s", err)
		}
	}
	return ps
}

func isHTTPURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func isDate(v string) bool {
	_, err := time.Parse(time.DateOnly, v)
	return err == nil && len(v) == len(time.DateOnly)
}

// isToken reports whether s is an HTTP header field name (RFC 9110 token).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// segment is a piece of a string with templates: literal text, or a
// reference to a variable when name is set.
type segment struct {
	text       string // the literal text, or the default
	name       string
	hasDefault bool
}

// parseTemplate splits s into literal text and ${...} references. Its errors
// never quote s, which may hold a secret.
func parseTemplate(s string) ([]segment, error) {
	var segs []segment
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			if s != "" {
				segs = append(segs, segment{text: s})
			}
			return segs, nil
		}
		if i > 0 {
			segs = append(segs, segment{text: s[:i]})
		}
		s = s[i+2:]
		j := strings.IndexByte(s, '}')
		if j < 0 {
			return nil, errors.New("unterminated ${ (want ${NAME})")
		}
		body := s[:j]
		s = s[j+1:]
		body = strings.TrimPrefix(body, "env:")
		name, def, hasDefault := strings.Cut(body, ":-")
		switch {
		case name == "":
			return nil, errors.New("empty variable name in ${}")
		case !isVarName(name):
			if scheme, _, ok := strings.Cut(name, ":"); ok && isLetters(scheme) {
				return nil, fmt.Errorf("${%s:...} is not supported (want ${NAME}, ${NAME:-default} or ${env:NAME})", scheme)
			}
			return nil, errors.New("invalid variable name in ${...} (want letters, digits and _, not starting with a digit)")
		case strings.Contains(def, "$"):
			// A default is literal text: "${A:-$B}" would not expand $B, so
			// refuse it rather than surprise.
			return nil, errors.New("a default in ${NAME:-default} must not contain $")
		}
		segs = append(segs, segment{text: def, name: name, hasDefault: hasDefault})
	}
}

func isVarName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return s != ""
}
