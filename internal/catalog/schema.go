package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxSchemaDepth is how many levels of nested schemas StrictSchema follows.
// A deeper schema stays non-strict, so a hostile server cannot make the
// conversion recurse without bound.
const maxSchemaDepth = 64

// InputSchema returns a deep copy of a tool's input schema ready to hand to a
// model: a JSON object with "type": "object" and a "properties" object ({}
// when missing). A schema that is not a JSON object (nil, a non-map, or a
// value that does not marshal to an object) gives
// {"type":"object","properties":{}}. The tool's own schema is never modified.
//
// The copy holds only the types encoding/json decodes into (with numbers
// that were not Go numbers as [json.Number]), so a schema given as
// json.RawMessage or a *jsonschema.Schema comes out in the same form as one
// received from a server. "type" is always "object", since MCP requires it
// and providers reject any other type for function parameters.
func InputSchema(tool *mcp.Tool) map[string]any {
	var s map[string]any
	if tool != nil {
		s, _ = jsonValue(tool.InputSchema).(map[string]any)
	}
	if s == nil {
		s = make(map[string]any, 2)
	}
	s["type"] = "object"
	if _, ok := s["properties"].(map[string]any); !ok {
		s["properties"] = map[string]any{}
	}
	return s
}

// jsonValue returns a deep copy of v in the generic form of encoding/json. It
// is fast for values that are already in that form, and falls back to a JSON
// round trip for others. A value that cannot be marshaled becomes nil.
func jsonValue(v any) any {
	switch v := v.(type) {
	case nil, string, bool, json.Number, float64, float32,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return v
	case map[string]any:
		if v == nil {
			return nil
		}
		c := make(map[string]any, len(v))
		for k, x := range v {
			c[k] = jsonValue(x)
		}
		return c
	case []any:
		if v == nil {
			return nil
		}
		c := make([]any, len(v))
		for i, x := range v {
			c[i] = jsonValue(x)
		}
		return c
	default:
		return jsonRoundTrip(v)
	}
}

// jsonRoundTrip marshals v and decodes it into the generic form, keeping
// numbers exact.
func jsonRoundTrip(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if dec.Decode(&out) != nil {
		return nil
	}
	return out
}

// StrictSchema converts a schema, as [InputSchema] returns it, for the strict
// structured output of model providers. It is best effort: on success it
// returns a new schema and true; on failure it returns schema itself,
// unchanged, and false, so that no partially converted schema ever escapes.
//
// On a copy, every object gets "additionalProperties": false and all its
// properties become required. A property that was optional is made nullable
// instead, so that the model can still leave it out: its "type" is widened to
// include "null" (and null is added to its "enum"), or, when it has no "type"
// or has a "const", it is wrapped as {"anyOf": [schema, {"type": "null"}]}.
// The conversion recurses through properties, items, anyOf, $defs and
// definitions. An allOf of a single schema is merged into its parent when the
// parent has nothing but annotations beside it.
//
// StrictSchema fails on anything it cannot make strict faithfully:
//   - a root whose "type" is not "object";
//   - an object with no properties that is not already closed with
//     "additionalProperties": false (a free-form object);
//   - "additionalProperties" that is true or a schema;
//   - a "required" name that is not a property;
//   - patternProperties, oneOf, not, if/then/else, prefixItems or tuple items,
//     additionalItems, unevaluatedProperties, unevaluatedItems,
//     dependentSchemas, dependencies, $dynamicRef and $recursiveRef;
//   - any other allOf;
//   - a "$ref" that does not resolve to a schema under "#/$defs/" or
//     "#/definitions/", or that has siblings other than annotations;
//   - a malformed schema, or one nested deeper than 64 levels.
func StrictSchema(schema map[string]any) (map[string]any, bool) {
	out, err := strictSchema(schema)
	if err != nil {
		return schema, false
	}
	return out, true
}

// strictSchema is [StrictSchema] that says why it failed.
func strictSchema(schema map[string]any) (map[string]any, error) {
	if schema["type"] != "object" {
		return nil, errors.New(`root: type is not "object"`)
	}
	c := strictConverter{root: schema}
	return c.schema(schema, 1)
}

// unsupportedKeywords hold subschemas or conditions that strict mode cannot
// express, or that StrictSchema does not walk.
var unsupportedKeywords = map[string]bool{
	"patternProperties": true, "oneOf": true, "not": true, "if": true, "then": true, "else": true,
	"prefixItems": true, "additionalItems": true, "unevaluatedProperties": true, "unevaluatedItems": true,
	"dependentSchemas": true, "dependencies": true, "$dynamicRef": true, "$recursiveRef": true,
}

// annotations are the keywords that never change what a schema accepts, and
// so may stand beside a "$ref" or an allOf.
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "$comment": true,
}

// objectKeywords are written by strictConverter.object, not copied.
var objectKeywords = map[string]bool{
	"properties": true, "required": true, "additionalProperties": true,
}

// strictConverter builds a strict copy of one root schema. It never changes
// the root.
type strictConverter struct {
	root map[string]any // resolves "$ref"s
}

// schema returns a strict copy of v, a schema at the given nesting level
// (the root is level 1).
func (c *strictConverter) schema(v any, level int) (map[string]any, error) {
	if level > maxSchemaDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxSchemaDepth)
	}
	s, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("got %T, want a schema object", v)
	}
	if err := checkKeywords(s); err != nil {
		return nil, err
	}
	if _, ok := s["allOf"]; ok {
		merged, err := mergeAllOf(s)
		if err != nil {
			return nil, fmt.Errorf("allOf: %w", err)
		}
		return c.schema(merged, level+1)
	}
	out := make(map[string]any, len(s)+3)
	for k, v := range s {
		if objectKeywords[k] {
			continue
		}
		conv, err := c.keyword(k, v, level)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = conv
	}
	if isObjectSchema(s) {
		if err := c.object(s, out, level); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkKeywords rejects the keywords that StrictSchema cannot handle.
func checkKeywords(s map[string]any) error {
	_, isRef := s["$ref"]
	for k := range s {
		if unsupportedKeywords[k] {
			return fmt.Errorf("%s is not supported", k)
		}
		if isRef && k != "$ref" && !annotations[k] {
			return fmt.Errorf("$ref: sibling %q is not supported", k)
		}
	}
	return nil
}

// keyword returns a strict copy of the value of keyword k.
func (c *strictConverter) keyword(k string, v any, level int) (any, error) {
	switch k {
	case "items":
		return c.schema(v, level+1)
	case "anyOf":
		return c.schemaList(v, level+1)
	case "$defs", "definitions":
		return c.schemaMap(v, level+1)
	case "$ref":
		return c.ref(v)
	case "type":
		if _, err := typeNames(v); err != nil {
			return nil, err
		}
	}
	return cloneValue(v), nil
}

func (c *strictConverter) schemaList(v any, level int) ([]any, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("got %T of length %d, want a non-empty list", v, len(list))
	}
	out := make([]any, len(list))
	for i, x := range list {
		s, err := c.schema(x, level)
		if err != nil {
			return nil, fmt.Errorf("%d: %w", i, err)
		}
		out[i] = s
	}
	return out, nil
}

func (c *strictConverter) schemaMap(v any, level int) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("got %T, want an object", v)
	}
	out := make(map[string]any, len(m))
	for name, v := range m {
		s, err := c.schema(v, level)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
}

// ref checks a "$ref": it must point into the root's definitions, which are
// converted with the rest of the schema.
func (c *strictConverter) ref(v any) (string, error) {
	ref, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("got %T, want a string", v)
	}
	if !strings.HasPrefix(ref, "#/$defs/") && !strings.HasPrefix(ref, "#/definitions/") {
		return "", fmt.Errorf("%q is not a local definition", ref)
	}
	if _, ok := resolvePointer(c.root, ref[1:]).(map[string]any); !ok {
		return "", fmt.Errorf("%q does not resolve to a schema", ref)
	}
	return ref, nil
}

// pointerUnescaper decodes a JSON pointer token.
var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// resolvePointer returns the value at a JSON pointer in doc, or nil.
func resolvePointer(doc any, ptr string) any {
	for _, tok := range strings.Split(ptr, "/")[1:] {
		tok = pointerUnescaper.Replace(tok)
		switch d := doc.(type) {
		case map[string]any:
			doc = d[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(d) {
				return nil
			}
			doc = d[i]
		default:
			return nil
		}
	}
	return doc
}

// mergeAllOf merges an allOf of one schema into s, which may hold nothing but
// annotations beside it; those of s win.
func mergeAllOf(s map[string]any) (map[string]any, error) {
	list, ok := s["allOf"].([]any)
	if !ok || len(list) != 1 {
		return nil, errors.New("only an allOf of one schema can be merged")
	}
	inner, ok := list[0].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("0: got %T, want a schema object", list[0])
	}
	merged := maps.Clone(inner)
	for _, k := range slices.Sorted(maps.Keys(s)) {
		if k == "allOf" {
			continue
		}
		if !annotations[k] {
			return nil, fmt.Errorf("sibling %q is not supported", k)
		}
		merged[k] = s[k]
	}
	return merged, nil
}

// isObjectSchema reports whether s describes an object.
func isObjectSchema(s map[string]any) bool {
	types, _ := typeNames(s["type"])
	if slices.Contains(types, "object") {
		return true
	}
	for k := range objectKeywords {
		if _, ok := s[k]; ok {
			return true
		}
	}
	return false
}

// object writes the strict properties, required and additionalProperties
// of s, an object schema, into out.
func (c *strictConverter) object(s, out map[string]any, level int) error {
	closed := false
	if ap, ok := s["additionalProperties"]; ok {
		if ap != false {
			return errors.New("additionalProperties: only false is supported")
		}
		closed = true
	}
	props := map[string]any{}
	if v, ok := s["properties"]; ok {
		if props, ok = v.(map[string]any); !ok {
			return fmt.Errorf("properties: got %T, want an object", v)
		}
	}
	if len(props) == 0 && !closed {
		return errors.New("free-form object: no properties")
	}
	required, err := requiredSet(s["required"], props)
	if err != nil {
		return fmt.Errorf("required: %w", err)
	}
	names := slices.Sorted(maps.Keys(props))
	strict := make(map[string]any, len(props))
	for _, name := range names {
		p, err := c.schema(props[name], level+1)
		if err == nil && !required[name] {
			p, err = nullable(p)
		}
		if err != nil {
			return fmt.Errorf("properties: %s: %w", name, err)
		}
		strict[name] = p
	}
	all := make([]any, len(names))
	for i, n := range names {
		all[i] = n
	}
	out["properties"] = strict
	out["required"] = all
	out["additionalProperties"] = false
	return nil
}

// requiredSet returns the names in a "required" list, each of which must be
// one of props.
func requiredSet(v any, props map[string]any) (map[string]bool, error) {
	if v == nil {
		return nil, nil
	}
	names, ok := stringList(v)
	if !ok {
		return nil, fmt.Errorf("got %T, want a list of strings", v)
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		if _, ok := props[n]; !ok {
			return nil, fmt.Errorf("%q is not a property", n)
		}
		set[n] = true
	}
	return set, nil
}

// nullable returns p, a strict copy of an optional property, changed to also
// accept null.
func nullable(p map[string]any) (map[string]any, error) {
	_, hasConst := p["const"]
	if _, hasType := p["type"]; !hasType || hasConst {
		return map[string]any{"anyOf": []any{p, map[string]any{"type": "null"}}}, nil
	}
	types, _ := typeNames(p["type"]) // valid: keyword checked it
	if slices.Contains(types, "null") {
		return p, nil
	}
	widened := make([]any, 0, len(types)+1)
	for _, t := range types {
		widened = append(widened, t)
	}
	p["type"] = append(widened, "null")
	if e, ok := p["enum"]; ok {
		enum, err := withNull(e)
		if err != nil {
			return nil, fmt.Errorf("enum: %w", err)
		}
		p["enum"] = enum
	}
	return p, nil
}

// withNull returns an enum list that includes null.
func withNull(v any) ([]any, error) {
	var list []any
	switch e := v.(type) {
	case []any:
		list = e
	case []string:
		for _, s := range e {
			list = append(list, s)
		}
	default:
		return nil, fmt.Errorf("got %T, want a list", v)
	}
	for _, x := range list {
		if x == nil {
			return list, nil
		}
	}
	return append(list, nil), nil
}

// typeNames reads a "type": a string or a non-empty list of strings. A
// missing type gives no names.
func typeNames(v any) ([]string, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []string{t}, nil
	}
	names, ok := stringList(v)
	if !ok || len(names) == 0 {
		return nil, fmt.Errorf("got %v, want a string or a non-empty list of strings", v)
	}
	return names, nil
}

// stringList reads a []string, or a []any of strings.
func stringList(v any) ([]string, bool) {
	switch l := v.(type) {
	case []string:
		return l, true
	case []any:
		out := make([]string, len(l))
		for i, x := range l {
			s, ok := x.(string)
			if !ok {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}
