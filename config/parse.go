package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tailscale/hujson"
)

// Parse parses the contents of one config file, named file in messages.
//
// A problem with the file as a whole (a syntax error, a top level that is not
// an object, both "mcpServers" and "servers", or servers that are not an
// object) is returned as an [*Error], with a nil Config; syntax errors carry
// the line and column. Problems with an entry never make Parse fail: the
// entry goes to [Config.Rejected] and the others load.
func Parse(file string, data []byte) (*Config, error) {
	parsed, warnings, err := parse(file, data)
	if err != nil {
		return nil, err
	}
	var m merger
	cfg := &Config{Warnings: warnings, Files: []string{file}}
	parsed.mergeInto(&m, cfg)
	m.fill(cfg)
	return cfg, nil
}

// parsedFile is what one file says: its entries in order, duplicates
// included, and its top-level settings.
type parsedFile struct {
	items      []item
	toolSearch *ToolSearch // nil if the file does not set it
	gateway    *Gateway    // nil if the file sets none of "gateway"'s settings
	pinning    *Pinning    // nil if the file does not set it
}

// parse parses one file.
func parse(file string, data []byte) (parsedFile, []error, error) {
	// Editors on Windows may write a byte order mark. Blank it out rather
	// than cut it, so that offsets still match the file.
	if bytes.HasPrefix(data, []byte("\ufeff")) {
		data = append([]byte("   "), data[3:]...)
	}
	// Walking the AST rather than decoding into maps keeps the servers in
	// the order of the file, and needs no comment stripping.
	root, err := hujson.Parse(data)
	if err != nil && len(data) > 0 && data[len(data)-1] != '\n' {
		// hujson ends a line comment only at a newline, even at the end
		// of the file, so try again with one.
		root, err = hujson.Parse(append(data[:len(data):len(data)], '\n'))
	}
	if err != nil {
		e := syntaxError(file, err)
		if lines := bytes.Count(data, []byte("\n")) + 1; e.Line > lines {
			// Past the added newline is the end of the file as written.
			e.Line, e.Column = lines, len(data)-bytes.LastIndexByte(data, '\n')
		}
		return parsedFile{}, nil, e
	}
	top, ok := root.Value.(*hujson.Object)
	if !ok {
		return parsedFile{}, nil, &Error{File: file, Problem: "want a JSON object at the top level"}
	}

	var warnings []error
	var servers *hujson.Value
	var key string
	var ts *ToolSearch
	var gw *Gateway
	var pin *Pinning
	for i := range top.Members {
		m := &top.Members[i]
		switch name := memberName(m); name {
		case "mcpServers", "servers":
			if servers != nil && name != key {
				return parsedFile{}, nil, &Error{File: file, Problem: `both "mcpServers" and "servers" are set; want one`}
			}
			servers, key = &m.Value, name
		case "toolSearch":
			setting, field, err := toolSearch(&m.Value)
			var partial *embeddingsIgnored
			switch {
			case errors.As(err, &partial):
				// A mistake in the endpoint must not turn search off.
				warnings = append(warnings, &Error{File: file, Field: joinField(name, field), Problem: err.Error() + "; tool search runs without embeddings", err: err})
			case err != nil:
				warnings = append(warnings, &Error{File: file, Field: joinField(name, field), Problem: err.Error() + "; ignored", err: err})
				continue
			}
			ts = &setting
		case "pinning":
			p, field, err := pinning(file, &m.Value)
			if err != nil {
				return parsedFile{}, nil, &Error{File: file, Field: joinField(name, field), Problem: err.Error(), err: err}
			}
			pin = &p
		case "gateway":
			g, set, problems, field, err := gateway(&m.Value)
			if err != nil {
				return parsedFile{}, nil, &Error{File: file, Field: joinField(name, field), Problem: err.Error(), err: err}
			}
			for _, p := range problems {
				warnings = append(warnings, &Error{File: file, Field: joinField(name, p.field), Problem: p.problem})
			}
			if set {
				gw = &g
			}
		default:
			warnings = append(warnings, &Error{File: file, Field: name, Problem: "unknown top-level key, ignored"})
		}
	}
	if servers == nil {
		warnings = append(warnings, &Error{File: file, Problem: `no "mcpServers" or "servers" key; no servers defined`})
		return parsedFile{toolSearch: ts, gateway: gw, pinning: pin}, warnings, nil
	}
	obj, ok := servers.Value.(*hujson.Object)
	if !ok {
		return parsedFile{}, nil, &Error{File: file, Field: key, Problem: "want an object with one entry per server"}
	}

	var items []item
	seen := map[string]bool{}
	for i := range obj.Members {
		member := &obj.Members[i]
		d := &entryDecoder{file: file, name: memberName(member), failed: map[string]bool{}}
		items = append(items, d.decode(&member.Value))
		if seen[d.name] {
			d.warn("", "duplicate entry; the last one wins")
		}
		seen[d.name] = true
		warnings = append(warnings, d.warnings...)
	}
	return parsedFile{items: items, toolSearch: ts, gateway: gw, pinning: pin}, warnings, nil
}

var hujsonError = regexp.MustCompile(`(?s)^hujson: line (\d+), column (\d+): (.*)$`)

// syntaxError turns an error from hujson.Parse into an *Error with the line
// and column. hujson quotes a bad literal in full; that could be a secret, so
// the problem is described instead, and err is not kept.
func syntaxError(file string, err error) *Error {
	e := &Error{File: file, Problem: "invalid JSON"}
	m := hujsonError.FindStringSubmatch(err.Error())
	if m == nil {
		return e
	}
	e.Line, _ = strconv.Atoi(m[1])
	e.Column, _ = strconv.Atoi(m[2])
	e.Problem = m[3]
	if lit, ok := strings.CutPrefix(m[3], "invalid literal: "); ok {
		if strings.HasPrefix(lit, `"`) {
			e.Problem = "invalid string (unterminated, a bad escape or a control character)"
		} else {
			e.Problem = "invalid value (want an object, array, string, number, true, false or null)"
		}
	}
	return e
}

func memberName(m *hujson.ObjectMember) string {
	return m.Name.Value.(hujson.Literal).String()
}

// item is one entry, valid or not.
type item struct {
	name     string
	server   *Server
	rejected *Rejected
}

// mergeInto adds the file's entries to m, and its settings to cfg: a later
// file's replace an earlier one's.
func (p parsedFile) mergeInto(m *merger, cfg *Config) {
	for _, it := range p.items {
		m.put(it)
	}
	if p.toolSearch != nil {
		cfg.ToolSearch = *p.toolSearch
	}
	if p.pinning != nil {
		cfg.Pinning = *p.pinning
	}
	if p.gateway != nil && p.gateway.Auth != nil {
		cfg.Gateway.Auth = p.gateway.Auth
	}
	if p.gateway != nil && p.gateway.Policies != nil {
		cfg.Gateway.Policies = p.gateway.Policies
	}
	if p.gateway != nil && p.gateway.Audit != nil {
		cfg.Gateway.Audit = p.gateway.Audit
	}
	if p.gateway != nil && p.gateway.Limits != nil {
		cfg.Gateway.Limits = p.gateway.Limits
	}
}

// toolSearch reads a top-level "toolSearch": a string ParseToolSearch
// takes, or an object {"mode": that string, "embeddings": {...}}. On error
// field is the dotted path of the bad part below "toolSearch" ("" for the
// whole).
func toolSearch(v *hujson.Value) (_ ToolSearch, field string, _ error) {
	if lit, ok := literal(v); ok && lit.Kind() == '"' {
		ts, err := ParseToolSearch(lit.String())
		return ts, "", err
	}
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return ToolSearch{}, "", fmt.Errorf("%w, or an object with \"mode\" and \"embeddings\"", ErrToolSearchMode)
	}
	var ts ToolSearch
	hasMode := false
	var embErr error
	var embField string
	for i := range obj.Members {
		m := &obj.Members[i]
		switch name := memberName(m); name {
		case "mode":
			lit, ok := literal(&m.Value)
			if !ok || lit.Kind() != '"' {
				return ToolSearch{}, name, ErrToolSearchMode
			}
			mode, err := ParseToolSearch(lit.String())
			if err != nil {
				return ToolSearch{}, name, err
			}
			ts.Mode, ts.Threshold, hasMode = mode.Mode, mode.Threshold, true
		case "embeddings":
			e, sub, err := embeddings(&m.Value)
			if err != nil {
				embErr, embField = err, joinField(name, sub)
				continue
			}
			ts.Embeddings = e
		default:
			return ToolSearch{}, name, fmt.Errorf("%w: unknown field; want \"mode\" or \"embeddings\"", ErrToolSearchField)
		}
	}
	if !hasMode {
		return ToolSearch{}, "mode", fmt.Errorf("%w: missing", ErrToolSearchMode)
	}
	if embErr != nil {
		return ts, embField, &embeddingsIgnored{embErr}
	}
	return ts, "", nil
}

// embeddingsIgnored is toolSearch's error for an object whose mode is
// good and whose "embeddings" is not: the setting it returns holds the
// mode, without embeddings.
type embeddingsIgnored struct{ err error }

func (e *embeddingsIgnored) Error() string { return e.err.Error() }
func (e *embeddingsIgnored) Unwrap() error { return e.err }

// embeddings reads toolSearch's "embeddings": {"url", "model", "apiKeyEnv"}.
func embeddings(v *hujson.Value) (_ Embeddings, field string, _ error) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return Embeddings{}, "", fmt.Errorf("%w: want an object with \"url\" and \"model\"", ErrToolSearchField)
	}
	var e Embeddings
	if field, err := readStrings(obj, ErrToolSearchField,
		stringField{"url", &e.URL}, stringField{"model", &e.Model}, stringField{"apiKeyEnv", &e.APIKeyEnv}); err != nil {
		return Embeddings{}, field, err
	}
	if field, err := e.validate(); err != nil {
		return Embeddings{}, field, err
	}
	return e, "", nil
}

// stringField is a member of an object of strings, and where its value
// goes.
type stringField struct {
	name string
	dst  *string
}

// readStrings reads the members of obj into fields: each must be one of
// them, and a string. An error wraps sentinel and comes with the member's
// name.
func readStrings(obj *hujson.Object, sentinel error, fields ...stringField) (field string, _ error) {
	for i := range obj.Members {
		m := &obj.Members[i]
		name := memberName(m)
		j := slices.IndexFunc(fields, func(f stringField) bool { return f.name == name })
		if j < 0 {
			names := make([]string, len(fields))
			for k, f := range fields {
				names[k] = strconv.Quote(f.name)
			}
			want := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
			return name, fmt.Errorf("%w: unknown field; want %s", sentinel, want)
		}
		lit, ok := literal(&m.Value)
		if !ok || lit.Kind() != '"' {
			return name, fmt.Errorf("%w: want a string", sentinel)
		}
		*fields[j].dst = lit.String()
	}
	return "", nil
}

// joinField joins a field and its sub-field with a dot.
func joinField(field, sub string) string {
	if sub == "" {
		return field
	}
	return field + "." + sub
}

// merger keeps entries by name in first-seen order; a later entry with the
// same name replaces the earlier one in its place.
type merger struct {
	items []item
	index map[string]int
}

// put adds it, or replaces the entry of the same name.
func (m *merger) put(it item) {
	if i, ok := m.index[it.name]; ok {
		m.items[i] = it
		return
	}
	if m.index == nil {
		m.index = map[string]int{}
	}
	m.index[it.name] = len(m.items)
	m.items = append(m.items, it)
}

func (m *merger) fill(c *Config) {
	c.Servers, c.Rejected = nil, nil
	for _, it := range m.items {
		if it.server != nil {
			c.Servers = append(c.Servers, *it.server)
		} else {
			c.Rejected = append(c.Rejected, *it.rejected)
		}
	}
}

// entryDecoder decodes one server entry, collecting its problems.
type entryDecoder struct {
	file, name string
	s          Server
	errs       []error
	failed     map[string]bool // fields with a problem found while decoding
	warnings   []error
}

func (d *entryDecoder) fail(field, problem string) {
	d.errs = append(d.errs, &Error{File: d.file, Server: d.name, Field: field, Problem: problem, entry: true})
	d.failed[field] = true
}

func (d *entryDecoder) warn(field, problem string) {
	d.warnings = append(d.warnings, &Error{File: d.file, Server: d.name, Field: field, Problem: problem, entry: true})
}

func (d *entryDecoder) decode(v *hujson.Value) item {
	d.s = Server{Name: d.name, Source: d.file}
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		d.fail("", "want an object")
	} else {
		d.fields(obj)
	}

	// Validate runs on what decoded; leave out what it would say again
	// about fields that are already reported as the wrong type.
	for _, p := range d.s.problems() {
		if p.Problem == emptyNameProblem || !d.covered(p.Field) {
			d.errs = append(d.errs, p)
		}
	}
	if len(d.errs) > 0 {
		return item{name: d.name, rejected: &Rejected{Name: d.name, Source: d.file, Required: d.s.Required, Err: errors.Join(d.errs...)}}
	}
	d.s.Type = d.s.TransportType()
	return item{name: d.name, server: &d.s}
}

// covered reports whether a problem with field follows from one found
// while decoding.
func (d *entryDecoder) covered(field string) bool {
	if field == "" {
		// The problems without a field are about the transport.
		return d.failed["type"] || d.failed["command"] || d.failed["url"] || d.failed[""]
	}
	for f := range d.failed {
		if field == f || strings.HasPrefix(field, f+".") || strings.HasPrefix(field, f+"[") {
			return true
		}
	}
	return false
}

func (d *entryDecoder) fields(obj *hujson.Object) {
	seen := map[string]bool{}
	for i := range obj.Members {
		field := memberName(&obj.Members[i])
		v := &obj.Members[i].Value
		if seen[field] {
			d.warn(field, "duplicate field; the last one wins")
		}
		seen[field] = true
		if isNull(v) && knownField(field) {
			continue // as encoding/json does: null leaves the field absent
		}
		switch field {
		case "type":
			d.s.Type = Transport(d.str(field, v))
		case "command":
			d.s.Command = d.str(field, v)
		case "args":
			d.s.Args = d.strings(field, v)
		case "env":
			d.s.Env = d.strMap(field, v)
		case "cwd":
			d.s.Cwd = d.str(field, v)
		case "inheritEnv":
			d.s.InheritEnv = d.boolean(field, v)
		case "url":
			d.s.URL = d.str(field, v)
		case "headers":
			d.s.Headers = d.strMap(field, v)
		case "enabled":
			if b, ok := d.boolOK(field, v); ok {
				d.s.Enabled = &b
			}
		case "timeout":
			d.s.Timeout = d.millis(field, v)
		case "tools":
			d.tools(field, v)
		case "prefix":
			if s, ok := d.strOK(field, v); ok {
				d.s.Prefix = &s
			}
		case "required":
			d.s.Required = d.boolean(field, v)
		case "protocolVersion":
			d.s.ProtocolVersion = d.str(field, v)
		case "serializeRequests":
			d.s.SerializeRequests = d.boolean(field, v)
		case "alwaysLoad":
			d.s.AlwaysLoad = d.boolean(field, v)
		case "description":
			d.s.Description = d.str(field, v)
		case "processPerSession":
			d.s.ProcessPerSession = d.boolean(field, v)
		case "auditPayloads":
			d.s.AuditPayloads = d.boolean(field, v)
		case "pinning":
			if s, ok := d.strOK(field, v); ok {
				mode, err := ParsePinningMode(s)
				if err != nil {
					d.fail(field, fmt.Sprintf(`%q: want "off", "warn" or "enforce"`, s))
				}
				d.s.Pinning = mode
			}
		case "maxInFlight":
			if n, ok := d.whole(field, v); ok {
				d.s.MaxInFlight = int(min(n, math.MaxInt32))
			}
		case "maxResponseBytes":
			d.s.MaxResponseBytes, _ = d.whole(field, v)
		case "retry":
			d.retry(field, v)
		case "oauth":
			d.oauth(field, v)
		default:
			d.warn(field, "unknown field, ignored")
		}
	}
}

func knownField(f string) bool {
	switch f {
	case "type", "command", "args", "env", "cwd", "inheritEnv", "url", "headers",
		"enabled", "timeout", "tools", "prefix", "required", "protocolVersion", "serializeRequests", "alwaysLoad", "description", "processPerSession",
		"auditPayloads", "pinning", "maxInFlight", "maxResponseBytes", "retry", "oauth":
		return true
	}
	return false
}

func literal(v *hujson.Value) (hujson.Literal, bool) {
	lit, ok := v.Value.(hujson.Literal)
	return lit, ok
}

func isNull(v *hujson.Value) bool {
	lit, ok := literal(v)
	return ok && lit.Kind() == 'n'
}

func (d *entryDecoder) strOK(field string, v *hujson.Value) (string, bool) {
	if lit, ok := literal(v); ok && lit.Kind() == '"' {
		return lit.String(), true
	}
	d.fail(field, "want a string")
	return "", false
}

func (d *entryDecoder) str(field string, v *hujson.Value) string {
	s, _ := d.strOK(field, v)
	return s
}

func (d *entryDecoder) boolOK(field string, v *hujson.Value) (bool, bool) {
	if lit, ok := literal(v); ok && (lit.Kind() == 't' || lit.Kind() == 'f') {
		return lit.Bool(), true
	}
	d.fail(field, "want true or false")
	return false, false
}

func (d *entryDecoder) boolean(field string, v *hujson.Value) bool {
	b, _ := d.boolOK(field, v)
	return b
}

// strings decodes an array of strings. A bad element leaves "" in its place,
// so that later messages keep the right indexes.
func (d *entryDecoder) strings(field string, v *hujson.Value) []string {
	arr, ok := v.Value.(*hujson.Array)
	if !ok {
		d.fail(field, "want an array of strings")
		return nil
	}
	var out []string
	for i := range arr.Elements {
		out = append(out, d.str(fmt.Sprintf("%s[%d]", field, i), &arr.Elements[i]))
	}
	return out
}

// strMap decodes an object of strings. A null value is ignored, as some
// clients write it for "unset".
func (d *entryDecoder) strMap(field string, v *hujson.Value) map[string]string {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		d.fail(field, "want an object of strings")
		return nil
	}
	var out map[string]string
	for i := range obj.Members {
		key := memberName(&obj.Members[i])
		sub := field + "." + key
		if isNull(&obj.Members[i].Value) {
			d.warn(sub, "null value, ignored")
			continue
		}
		if s, ok := d.strOK(sub, &obj.Members[i].Value); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[key] = s
		}
	}
	return out
}

// millis decodes a whole, non-negative number of milliseconds. JSON allows
// 1e3 or 1000.0 for a whole number, so those are accepted too.
func (d *entryDecoder) millis(field string, v *hujson.Value) *int64 {
	lit, ok := literal(v)
	if !ok || lit.Kind() != '0' {
		d.fail(field, "want a whole number of milliseconds")
		return nil
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	if err != nil {
		f, err := strconv.ParseFloat(string(lit), 64)
		switch {
		case f < 0:
			d.fail(field, "must not be negative")
			return nil
		case err != nil || f > float64(maxTimeoutMillis):
			d.fail(field, fmt.Sprintf("too large (at most %d milliseconds)", maxTimeoutMillis))
			return nil
		case f != math.Trunc(f):
			d.fail(field, "want a whole number of milliseconds, not a fraction")
			return nil
		}
		n = int64(f)
	}
	return &n
}

// whole decodes a whole number, which may be negative; Validate checks its
// range.
func (d *entryDecoder) whole(field string, v *hujson.Value) (int64, bool) {
	lit, ok := literal(v)
	if ok && lit.Kind() == '0' {
		if n, err := strconv.ParseInt(string(lit), 10, 64); err == nil {
			return n, true
		}
		if f, err := strconv.ParseFloat(string(lit), 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f), true
		}
	}
	d.fail(field, "want a whole number")
	return 0, false
}

// int is whole for an int field, clamped to 32 bits: a value out of its
// range stays out of it on every platform, for Validate to refuse.
func (d *entryDecoder) int(field string, v *hujson.Value) (int, bool) {
	n, ok := d.whole(field, v)
	return int(max(min(n, math.MaxInt32), math.MinInt32)), ok
}

func (d *entryDecoder) retry(field string, v *hujson.Value) {
	d.members(field, `want an object such as {"max": 3, "backoffMs": 1000}`, v, func(key, sub string, ev *hujson.Value) {
		switch key {
		case "max":
			if n, ok := d.int(sub, ev); ok {
				d.s.Retry.Max = n
			}
		case "backoffMs":
			d.s.Retry.BackoffMs = d.millis(sub, ev)
		case "maxBackoffMs":
			if ms := d.millis(sub, ev); ms != nil {
				d.s.Retry.MaxBackoffMs = *ms
			}
		default:
			d.warn(sub, "unknown field, ignored")
		}
	})
}

// members calls each with every member of the object v that is not null,
// and its field name; if v is not an object, it fails field with want.
func (d *entryDecoder) members(field, want string, v *hujson.Value, each func(key, sub string, ev *hujson.Value)) bool {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		d.fail(field, want)
		return false
	}
	for i := range obj.Members {
		key := memberName(&obj.Members[i])
		if ev := &obj.Members[i].Value; !isNull(ev) {
			each(key, field+"."+key, ev)
		}
	}
	return true
}

func (d *entryDecoder) oauth(field string, v *hujson.Value) {
	o := &OAuth{}
	ok := d.members(field, `want an object such as {"clientId": "...", "scopes": ["read"]}`, v, func(key, sub string, ev *hujson.Value) {
		switch key {
		case "clientId":
			o.ClientID = d.str(sub, ev)
		case "clientSecret":
			o.ClientSecret = d.str(sub, ev)
		case "scopes":
			o.Scopes = d.strings(sub, ev)
		case "callbackPort":
			if n, ok := d.int(sub, ev); ok {
				o.CallbackPort = n
			}
		default:
			d.warn(sub, "unknown field, ignored")
		}
	})
	if ok {
		d.s.OAuth = o
	}
}

func (d *entryDecoder) tools(field string, v *hujson.Value) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		d.fail(field, `want an object with "allow" and "deny" lists`)
		return
	}
	for i := range obj.Members {
		key := memberName(&obj.Members[i])
		sub := field + "." + key
		ev := &obj.Members[i].Value
		switch {
		case key != "allow" && key != "deny":
			d.warn(sub, "unknown field, ignored")
		case isNull(ev):
		case key == "allow":
			d.s.Tools.Allow = d.strings(sub, ev)
		default:
			d.s.Tools.Deny = d.strings(sub, ev)
		}
	}
}
