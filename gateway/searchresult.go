package gateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/switchboard-mcp/switchboard"
)

// The bounds of what search_tools tells of each tool, to keep a result
// small (design §2: a compact listing, trimmed schemas). The tools it finds
// join the session's tools/list with their whole definitions.
const (
	// maxSentence is the most bytes of the one sentence that the listing
	// gives of a tool's description, or the search_tools description of a
	// server's instructions: a longer one is cut between words, with "…".
	maxSentence = 160
	// maxListedArguments is the most required arguments the listing names
	// of a tool; the rest are counted.
	maxListedArguments = 8
	// maxListedEnum is the most values of an enum the listing gives as an
	// argument's type; a longer enum is given by its type.
	maxListedEnum = 5
)

// A foundTool is one match of search_tools, as its structuredContent gives
// it: of its description, the first sentence (see firstSentence); its
// input schema trimmed (see trimSchema); no field empty but score. Its
// whole definition is in the session's tools/list, which it joins.
type foundTool struct {
	Name        string  `json:"name"`
	Server      string  `json:"server"`
	Title       string  `json:"title,omitempty"`
	Description string  `json:"description,omitempty"`
	InputSchema any     `json:"inputSchema,omitempty"`
	Score       float64 `json:"score"`
}

// newFoundTool is m as search_tools gives it.
func newFoundTool(m switchboard.ToolMatch) foundTool {
	def := m.Definition()
	return foundTool{Name: m.Name, Server: m.Server, Title: def.Title, Description: firstSentence(def.Description, maxSentence),
		InputSchema: trimSchema(def.InputSchema), Score: m.Score}
}

// listing is the text of a search_tools result: a line per tool, its
// public name, the first sentence of its description and the arguments it
// requires, as in
//
//	filesystem__read_file — Read the complete contents of a file. Requires: path (string).
func listing(tools []foundTool) string {
	var b strings.Builder
	for i, t := range tools {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(t.Name)
		about := t.Description
		if about == "" {
			about = firstSentence(t.Title, maxSentence)
		}
		if s := about; s != "" {
			b.WriteString(" — ")
			b.WriteString(s)
		}
		if args := requiredArguments(t.InputSchema); args != "" {
			b.WriteString(" Requires: ")
			b.WriteString(args)
			b.WriteByte('.')
		}
	}
	return b.String()
}

// firstSentence returns the first sentence of text, its spaces and line
// breaks made single spaces, ending with a full stop: up to the first '.',
// '!' or '?' that a space or the end follows, or the first line break; a
// sentence over max bytes is cut between words, with "…". Markdown's
// heading marks at its start are dropped.
func firstSentence(text string, max int) string {
	text = strings.TrimLeft(strings.TrimSpace(text), "# ")
	end := len(text)
	for i, r := range text {
		if r == '\n' || r == '\r' {
			end = i
			break
		}
		if (r == '.' || r == '!' || r == '?') && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n' || text[i+1] == '\r' || text[i+1] == '\t') {
			end = i + 1
			break
		}
	}
	s := strings.Join(strings.Fields(text[:end]), " ")
	if s == "" {
		return ""
	}
	if len(s) > max {
		cut := strings.LastIndexByte(s[:max], ' ')
		if cut < max/2 {
			cut = max
			for !utf8.RuneStart(s[cut]) {
				cut--
			}
		}
		return strings.TrimRightFunc(s[:cut], func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) }) + "…"
	}
	if last, _ := utf8.DecodeLastRuneInString(s); !strings.ContainsRune(".!?…", last) {
		s += "."
	}
	return s
}

// requiredArguments names the arguments that schema, an input schema as
// trimSchema gives it, requires, each with its type: "path (string), mode
// ("a"|"b")"; at most maxListedArguments, the rest counted.
func requiredArguments(schema any) string {
	s, _ := schema.(map[string]any)
	required, _ := s["required"].([]any)
	properties, _ := s["properties"].(map[string]any)
	var args []string
	for _, r := range required {
		name, ok := r.(string)
		if !ok {
			continue
		}
		if len(args) == maxListedArguments {
			args = append(args, fmt.Sprintf("and %d more", len(required)-maxListedArguments))
			break
		}
		if typ := typeOf(properties[name]); typ != "" {
			name += " (" + typ + ")"
		}
		args = append(args, name)
	}
	return strings.Join(args, ", ")
}

// typeOf says what type schema, a property's schema, asks for: its enum's
// values if they are few, or its type ("string", "array of string",
// "string|null"), or the types it may be one of; "" if it does not say.
func typeOf(schema any) string {
	s, _ := schema.(map[string]any)
	if s == nil {
		return ""
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 && len(enum) <= maxListedEnum {
		values := make([]string, len(enum))
		for i, v := range enum {
			b, err := json.Marshal(v)
			if err != nil {
				return ""
			}
			values[i] = string(b)
		}
		return strings.Join(values, "|")
	}
	var types []string
	switch t := s["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, v := range t {
			if v, ok := v.(string); ok {
				types = append(types, v)
			}
		}
	default:
		for _, key := range []string{"anyOf", "oneOf"} {
			alternatives, _ := s[key].([]any)
			for _, a := range alternatives {
				if typ := typeOf(a); typ != "" && !slices.Contains(types, typ) {
					types = append(types, typ)
				}
			}
		}
	}
	if len(types) == 1 && types[0] == "array" {
		if item := typeOf(s["items"]); item != "" && !strings.Contains(item, "|") {
			return "array of " + item
		}
	}
	return strings.Join(types, "|")
}

// The keys of a JSON schema that trimSchema keeps as they are; it keeps
// the subschemas of schemaKeys and the properties, trimmed.
var (
	keptKeys   = []string{"type", "required", "enum", "const", "$ref"}
	schemaKeys = []string{"items", "additionalProperties", "anyOf", "oneOf", "allOf"}
	schemaMaps = []string{"properties", "$defs", "definitions"}
)

// trimSchema returns schema, an input schema, with only what says what a
// call must send: each (sub)schema's type, required, enum, const and $ref,
// and its properties, items, alternatives and definitions trimmed alike;
// no descriptions, examples, defaults or titles. additionalProperties is
// kept only as a schema; of the definitions ($defs, definitions), only
// those that a $ref reaches (servers made from one API description may
// give every tool all of them). schema itself is not changed. A schema
// that is no JSON object is returned as it is.
func trimSchema(schema any) any {
	trimmed := trimSubschema(schema)
	if s, ok := trimmed.(map[string]any); ok {
		pruneDefinitions(s)
	}
	return trimmed
}

// pruneDefinitions drops from s, a trimmed schema, the definitions that
// no $ref reaches from the rest of it.
func pruneDefinitions(s map[string]any) {
	var defs []string
	for _, key := range []string{"$defs", "definitions"} {
		if _, ok := s[key].(map[string]any); ok {
			defs = append(defs, key)
		}
	}
	if len(defs) == 0 {
		return
	}
	reached := make(map[string]bool) // "#/$defs/name"
	var follow func(v any, top bool)
	follow = func(v any, top bool) {
		switch v := v.(type) {
		case map[string]any:
			for key, sub := range v {
				if top && slices.Contains(defs, key) {
					continue
				}
				if ref, ok := sub.(string); ok && key == "$ref" {
					if reached[ref] {
						continue
					}
					reached[ref] = true
					for _, d := range defs {
						if name, ok := strings.CutPrefix(ref, "#/"+d+"/"); ok {
							follow(s[d].(map[string]any)[name], false)
						}
					}
					continue
				}
				follow(sub, false)
			}
		case []any:
			for _, sub := range v {
				follow(sub, false)
			}
		}
	}
	follow(s, true)
	for _, d := range defs {
		m := s[d].(map[string]any)
		for name := range m {
			if !reached["#/"+d+"/"+name] {
				delete(m, name)
			}
		}
		if len(m) == 0 {
			delete(s, d)
		}
	}
}

// trimSubschema is trimSchema but for the definitions no $ref reaches.
func trimSubschema(schema any) any {
	switch s := schema.(type) {
	case map[string]any:
		out := make(map[string]any, len(keptKeys))
		for _, key := range keptKeys {
			if v, ok := s[key]; ok {
				out[key] = v
			}
		}
		for _, key := range schemaKeys {
			switch v := s[key].(type) {
			case map[string]any:
				out[key] = trimSubschema(v)
			case []any:
				out[key] = trimSubschema(v)
			}
		}
		for _, key := range schemaMaps {
			if m, ok := s[key].(map[string]any); ok {
				trimmed := make(map[string]any, len(m))
				for name, sub := range m {
					trimmed[name] = trimSubschema(sub)
				}
				out[key] = trimmed
			}
		}
		return out
	case []any:
		out := make([]any, len(s))
		for i, sub := range s {
			out[i] = trimSubschema(sub)
		}
		return out
	case nil:
		return nil
	default:
		// Another representation of JSON (json.RawMessage, a struct):
		// trimmed as the JSON it marshals to.
		b, err := json.Marshal(s)
		if err != nil {
			return s
		}
		var v any
		if json.Unmarshal(b, &v) != nil {
			return s
		}
		if _, ok := v.(map[string]any); !ok {
			return s
		}
		return trimSubschema(v)
	}
}
