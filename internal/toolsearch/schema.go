package toolsearch

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// Bounds on the walk of one input schema, so that a hostile or generated
// schema costs a bounded amount of work and memory.
const (
	maxSchemaDepth = 16
	maxSchemaNodes = 2000
)

// schemaMap returns an input schema as a generic JSON object: a
// map[string]any is used as it is; anything else (json.RawMessage, []byte, a
// *jsonschema.Schema) goes through encoding/json. Nil gives nil.
func schemaMap(schema any) (map[string]any, error) {
	var raw []byte
	switch s := schema.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return s, nil
	case json.RawMessage:
		raw = s
	case []byte:
		raw = s
	default:
		b, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return m, nil
}

// walkSchema calls name for each property name of schema, and text for each
// description, title and string enum value, nested properties too (through
// properties, items, additionalProperties, anyOf, oneOf, allOf, $defs and
// definitions), in a deterministic order.
func walkSchema(schema map[string]any, name, text func(string)) {
	nodes := 0
	var walk func(node any, depth int)
	walk = func(node any, depth int) {
		m, ok := node.(map[string]any)
		if !ok || depth > maxSchemaDepth || nodes >= maxSchemaNodes {
			return
		}
		nodes++
		for _, key := range []string{"title", "description"} {
			if s, ok := m[key].(string); ok {
				text(s)
			}
		}
		if enum, ok := m["enum"].([]any); ok {
			for _, v := range enum {
				if s, ok := v.(string); ok {
					text(s)
				}
			}
		}
		if props, ok := m["properties"].(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(props)) {
				name(k)
				walk(props[k], depth+1)
			}
		}
		for _, key := range []string{"$defs", "definitions"} {
			if defs, ok := m[key].(map[string]any); ok {
				for _, k := range slices.Sorted(maps.Keys(defs)) {
					walk(defs[k], depth+1)
				}
			}
		}
		walk(m["items"], depth+1)
		walk(m["additionalProperties"], depth+1)
		for _, key := range []string{"items", "anyOf", "oneOf", "allOf"} {
			if list, ok := m[key].([]any); ok {
				for _, sub := range list {
					walk(sub, depth+1)
				}
			}
		}
	}
	walk(schema, 0)
}
