package genkittools

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/xeipuuv/gojsonschema"
)

// sanitizeSchema returns a deep copy of an MCP tool's input schema, which
// comes from an untrusted server, that Genkit can check arguments against
// safely. Genkit validates each call's arguments with gojsonschema, which
// fetches a "$ref" to an http(s) URL at every call and reads a "$ref" to a
// file:// URL from the local disk, and fails the whole generation on a
// "pattern" that Go's regexp cannot compile (a lookahead is valid in
// JavaScript). So the copy drops every "$ref" that is not a local JSON
// pointer (starting with "#"), every "pattern" that Go cannot compile, and
// every "patternProperties" entry whose key Go cannot compile; it leaves
// everything else as it is. Values of data keywords ("enum", "const",
// "default", "examples") are copied as they are.
func sanitizeSchema(schema map[string]any) map[string]any {
	if schema == nil {
		return nil
	}
	return sanitizeObject(schema)
}

// sanitizeObject sanitizes a schema object.
func sanitizeObject(s map[string]any) map[string]any {
	out := make(map[string]any, len(s))
	for k, v := range s {
		switch k {
		case "$ref":
			if ref, ok := v.(string); ok && !strings.HasPrefix(ref, "#") {
				continue
			}
			out[k] = deepCopy(v)
		case "pattern":
			if p, ok := v.(string); ok && !compiles(p) {
				continue
			}
			out[k] = deepCopy(v)
		case "enum", "const", "default", "examples":
			out[k] = deepCopy(v)
		case "properties", "patternProperties", "definitions", "$defs", "dependencies", "dependentSchemas":
			named, ok := v.(map[string]any)
			if !ok {
				out[k] = sanitizeValue(v)
				continue
			}
			m := make(map[string]any, len(named))
			for name, sub := range named {
				if k == "patternProperties" && !compiles(name) {
					continue
				}
				m[name] = sanitizeValue(sub)
			}
			out[k] = m
		default:
			out[k] = sanitizeValue(v)
		}
	}
	return out
}

// sanitizeValue sanitizes a value that holds schemas: a schema object, a
// list of them, or anything else, which it copies.
func sanitizeValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return sanitizeObject(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = sanitizeValue(e)
		}
		return out
	}
	return deepCopy(v)
}

// deepCopy copies a JSON value.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// compiles reports whether Go's regexp, which gojsonschema uses, accepts p.
func compiles(p string) bool {
	_, err := regexp.Compile(p)
	return err == nil
}

// compileSchema compiles schema as Genkit v1.4.0 does before it checks a
// tool's arguments (internal/base.ValidateRaw: gojsonschema with a bytes
// loader), and returns the error that would end every generation.
func compileSchema(schema map[string]any) error {
	if schema == nil {
		return nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return err
	}
	_, err = gojsonschema.NewSchema(gojsonschema.NewBytesLoader(b))
	return err
}
