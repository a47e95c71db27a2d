package toolcache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// redactTools returns the JSON values of tools with redact applied to every
// string in them, object keys included. Nil tools are dropped. A nil redact
// leaves strings unchanged.
//
// Each tool is marshaled, decoded into plain JSON values and walked, so that
// redaction sees whole strings, never raw JSON bytes with escapes in them.
// Numbers are kept as [json.Number], so they are written back unchanged.
func redactTools(tools []*mcp.Tool, redact func(string) string) ([]any, error) {
	out := make([]any, 0, len(tools))
	for _, t := range tools {
		if t == nil {
			continue
		}
		b, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("marshal tool %q: %w", redactString(t.Name, redact), err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("decode tool %q: %w", redactString(t.Name, redact), err)
		}
		out = append(out, redactValue(v, redact))
	}
	return out, nil
}

// redactValue applies redact to every string in the JSON value v, object keys
// included, and returns the result. It reuses v's slices; maps are rebuilt
// because their keys may change. If two keys of one object redact to the same
// string, one of them is kept.
func redactValue(v any, redact func(string) string) any {
	if redact == nil {
		return v
	}
	switch v := v.(type) {
	case string:
		return redact(v)
	case []any:
		for i, e := range v {
			v[i] = redactValue(e, redact)
		}
		return v
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[redact(k)] = redactValue(e, redact)
		}
		return m
	default: // nil, bool, json.Number
		return v
	}
}

// redactString applies redact to s, if redact is not nil.
func redactString(s string, redact func(string) string) string {
	if redact == nil {
		return s
	}
	return redact(s)
}

// redactAbout returns about cut to its bounds (see [About]), with redact,
// which may be nil, applied to each of its strings. Icons are dropped.
func redactAbout(about About, redact func(string) string) About {
	about = boundAbout(about)
	out := About{Instructions: redactString(about.Instructions, redact)}
	if i := about.ServerInfo; i != nil {
		out.ServerInfo = &mcp.Implementation{
			Name:        redactString(i.Name, redact),
			Title:       redactString(i.Title, redact),
			Description: redactString(i.Description, redact),
			Version:     redactString(i.Version, redact),
			WebsiteURL:  redactString(i.WebsiteURL, redact),
		}
	}
	return out
}

// boundAbout returns a copy of about, without icons, with its instructions
// cut to MaxInstructions and each string of its serverInfo to
// MaxInfoField.
func boundAbout(about About) About {
	out := About{Instructions: cutWords(about.Instructions, MaxInstructions)}
	if i := about.ServerInfo; i != nil {
		out.ServerInfo = &mcp.Implementation{
			Name:        cutWords(i.Name, MaxInfoField),
			Title:       cutWords(i.Title, MaxInfoField),
			Description: cutWords(i.Description, MaxInfoField),
			Version:     cutWords(i.Version, MaxInfoField),
			WebsiteURL:  cutWords(i.WebsiteURL, MaxInfoField),
		}
	}
	return out
}

// cutWords returns s if it has at most max bytes, else its longest prefix
// of at most max bytes that ends before a space, without trailing space; a
// first word longer than max is cut at a rune boundary.
func cutWords(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if sp := strings.LastIndexFunc(s[:cut+1], unicode.IsSpace); sp > 0 {
		if t := strings.TrimRightFunc(s[:sp], unicode.IsSpace); t != "" {
			return t
		}
	}
	return s[:cut]
}
