package catalog

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// decode decodes a JSON object as a server's schema arrives: numbers as
// float64.
func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return m
}

// decodeNumbers decodes a JSON object as InputSchema's round trip does:
// numbers as json.Number.
func decodeNumbers(t *testing.T, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return m
}

func TestInputSchema(t *testing.T) {
	const empty = `{"type": "object", "properties": {}}`
	tests := []struct {
		name   string
		schema any
		want   string
	}{
		{"nil", nil, empty},
		{"nil map", map[string]any(nil), empty},
		{"empty map", map[string]any{}, empty},
		{"missing properties", map[string]any{"type": "object"}, empty},
		{"null properties", map[string]any{"type": "object", "properties": nil}, empty},
		{"properties not an object", map[string]any{"type": "object", "properties": []any{"q"}}, empty},
		{"missing type", map[string]any{"properties": map[string]any{"q": map[string]any{"type": "string"}}},
			`{"type": "object", "properties": {"q": {"type": "string"}}}`},
		{"wrong type", map[string]any{"type": "array", "properties": map[string]any{}}, empty},
		{"kept as is", map[string]any{
			"type":        "object",
			"description": "d",
			"properties":  map[string]any{"q": map[string]any{"type": "string", "enum": []any{"a", "b"}}},
			"required":    []any{"q"},
		}, `{"type": "object", "description": "d", "properties": {"q": {"type": "string", "enum": ["a", "b"]}}, "required": ["q"]}`},
		{"string", "object", empty},
		{"list", []any{map[string]any{"type": "object"}}, empty},
		{"number", 5, empty},
		{"raw message", json.RawMessage(`{"type": "object", "properties": {"n": {"type": "integer", "maximum": 9007199254740993}}}`),
			`{"type": "object", "properties": {"n": {"type": "integer", "maximum": 9007199254740993}}}`},
		{"raw message without properties", json.RawMessage(`{"type": "object"}`), empty},
		{"raw message list", json.RawMessage(`[1]`), empty},
		{"raw message null", json.RawMessage(`null`), empty},
		{"invalid raw message", json.RawMessage(`{`), empty},
		{"jsonschema", &jsonschema.Schema{
			Type:       "object",
			Properties: map[string]*jsonschema.Schema{"q": {Type: "string"}},
			Required:   []string{"q"},
		}, `{"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}`},
		{"nil jsonschema", (*jsonschema.Schema)(nil), empty},
		{"typed values inside a map", map[string]any{
			"type":       "object",
			"properties": map[string]*jsonschema.Schema{"q": {Type: "string"}},
			"required":   []string{"q"},
		}, `{"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}`},
		{"unmarshalable value inside", map[string]any{"type": "object", "x": make(chan int)},
			`{"type": "object", "properties": {}, "x": null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := InputSchema(&mcp.Tool{InputSchema: tt.schema})
			if diff := cmp.Diff(decodeNumbers(t, tt.want), got); diff != "" {
				t.Errorf("InputSchema mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInputSchemaNilTool(t *testing.T) {
	want := map[string]any{"type": "object", "properties": map[string]any{}}
	if diff := cmp.Diff(want, InputSchema(nil)); diff != "" {
		t.Errorf("InputSchema(nil) mismatch (-want +got):\n%s", diff)
	}
}

func TestInputSchemaDoesNotMutateTool(t *testing.T) {
	tests := []struct {
		name string
		tool func() *mcp.Tool
	}{
		{"rich", func() *mcp.Tool { return richTool("search") }},
		{"no properties", func() *mcp.Tool {
			return &mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object", "required": []any{}}}
		}},
		{"no type", func() *mcp.Tool {
			return &mcp.Tool{Name: "t", InputSchema: map[string]any{"properties": map[string]any{"a": map[string]any{}}}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := tt.tool()
			s := InputSchema(tool)
			if diff := cmp.Diff(tt.tool(), tool); diff != "" {
				t.Fatalf("InputSchema changed the tool (-want +got):\n%s", diff)
			}
			mutateSchema(s)
			if diff := cmp.Diff(tt.tool(), tool); diff != "" {
				t.Errorf("changing the result changed the tool (-want +got):\n%s", diff)
			}
		})
	}
}

// mutateSchema changes every map and list reachable from s.
func mutateSchema(s map[string]any) {
	for k, v := range s {
		switch v := v.(type) {
		case map[string]any:
			mutateSchema(v)
			v["mutated"] = true
		case []any:
			for i, x := range v {
				if m, ok := x.(map[string]any); ok {
					mutateSchema(m)
				}
				v[i] = "mutated"
			}
		default:
			s[k] = "mutated"
		}
	}
	s["added"] = true
}

func TestStrictSchema(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "flat",
			in: `{"type": "object", "required": ["q"], "properties": {
				"q": {"type": "string", "description": "query"},
				"limit": {"type": "integer", "default": 10}
			}}`,
			want: `{"type": "object", "additionalProperties": false, "required": ["limit", "q"], "properties": {
				"q": {"type": "string", "description": "query"},
				"limit": {"type": ["integer", "null"], "default": 10}
			}}`,
		},
		{
			name: "nested objects, arrays, unions and definitions",
			in: `{
				"type": "object",
				"properties": {
					"filter": {
						"type": "object",
						"properties": {
							"tags": {"type": "array", "items": {
								"type": "object",
								"properties": {"name": {"type": "string"}, "weight": {"type": "number"}},
								"required": ["name"]
							}},
							"owner": {"$ref": "#/$defs/User"},
							"reviewer": {"$ref": "#/definitions/User", "description": "who reviews"}
						},
						"required": ["tags", "reviewer"]
					},
					"status": {"type": "string", "enum": ["open", "closed"]},
					"when": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"at": {"type": "integer"}}}]},
					"mode": {"type": "string", "const": "fast"},
					"note": {"type": ["string", "null"]},
					"matrix": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}
				},
				"required": ["filter", "matrix"],
				"$defs": {"User": {"type": "object", "properties": {"id": {"type": "string"}, "email": {"type": ["string", "null"]}}, "required": ["id"]}},
				"definitions": {"User": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}
			}`,
			want: `{
				"type": "object",
				"properties": {
					"filter": {
						"type": "object",
						"properties": {
							"tags": {"type": "array", "items": {
								"type": "object",
								"properties": {"name": {"type": "string"}, "weight": {"type": ["number", "null"]}},
								"required": ["name", "weight"],
								"additionalProperties": false
							}},
							"owner": {"anyOf": [{"$ref": "#/$defs/User"}, {"type": "null"}]},
							"reviewer": {"$ref": "#/definitions/User", "description": "who reviews"}
						},
						"required": ["owner", "reviewer", "tags"],
						"additionalProperties": false
					},
					"status": {"type": ["string", "null"], "enum": ["open", "closed", null]},
					"when": {"anyOf": [
						{"anyOf": [
							{"type": "string"},
							{"type": "object", "properties": {"at": {"type": ["integer", "null"]}}, "required": ["at"], "additionalProperties": false}
						]},
						{"type": "null"}
					]},
					"mode": {"anyOf": [{"type": "string", "const": "fast"}, {"type": "null"}]},
					"note": {"type": ["string", "null"]},
					"matrix": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}
				},
				"required": ["filter", "matrix", "mode", "note", "status", "when"],
				"additionalProperties": false,
				"$defs": {"User": {"type": "object", "properties": {"id": {"type": "string"}, "email": {"type": ["string", "null"]}}, "required": ["email", "id"], "additionalProperties": false}},
				"definitions": {"User": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": false}}
			}`,
		},
		{
			name: "optional object",
			in:   `{"type": "object", "properties": {"o": {"type": "object", "properties": {"a": {"type": "string"}}}}}`,
			want: `{"type": "object", "required": ["o"], "additionalProperties": false, "properties": {
				"o": {"type": ["object", "null"], "properties": {"a": {"type": ["string", "null"]}}, "required": ["a"], "additionalProperties": false}
			}}`,
		},
		{
			name: "already strict",
			in:   `{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false}`,
			want: `{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false}`,
		},
		{
			name: "closed empty object",
			in:   `{"type": "object", "additionalProperties": false}`,
			want: `{"type": "object", "properties": {}, "required": [], "additionalProperties": false}`,
		},
		{
			name: "untyped property",
			in:   `{"type": "object", "properties": {"any": {"description": "anything"}, "e": {"enum": [1, "a"]}}}`,
			want: `{"type": "object", "required": ["any", "e"], "additionalProperties": false, "properties": {
				"any": {"anyOf": [{"description": "anything"}, {"type": "null"}]},
				"e": {"anyOf": [{"enum": [1, "a"]}, {"type": "null"}]}
			}}`,
		},
		{
			name: "enum with null kept",
			in:   `{"type": "object", "properties": {"e": {"type": "string", "enum": ["a", null]}}}`,
			want: `{"type": "object", "required": ["e"], "additionalProperties": false, "properties": {
				"e": {"type": ["string", "null"], "enum": ["a", null]}
			}}`,
		},
		{
			name: "single allOf merged",
			in: `{"type": "object", "required": ["u"], "properties": {
				"u": {"allOf": [{"$ref": "#/$defs/U"}], "description": "the user"},
				"v": {"allOf": [{"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n"], "description": "inner"}], "description": "outer"}
			}, "$defs": {"U": {"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n"]}}}`,
			want: `{"type": "object", "required": ["u", "v"], "additionalProperties": false, "properties": {
				"u": {"$ref": "#/$defs/U", "description": "the user"},
				"v": {"type": ["object", "null"], "properties": {"n": {"type": "string"}}, "required": ["n"], "additionalProperties": false, "description": "outer"}
			}, "$defs": {"U": {"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n"], "additionalProperties": false}}}`,
		},
		{
			name: "escaped and nested refs",
			in: `{"type": "object", "required": ["a", "b"], "properties": {
				"a": {"$ref": "#/$defs/a~1b"},
				"b": {"$ref": "#/$defs/c/properties/d"}
			}, "$defs": {
				"a/b": {"type": "string"},
				"c": {"type": "object", "properties": {"d": {"type": "integer"}}, "required": ["d"]}
			}}`,
			want: `{"type": "object", "required": ["a", "b"], "additionalProperties": false, "properties": {
				"a": {"$ref": "#/$defs/a~1b"},
				"b": {"$ref": "#/$defs/c/properties/d"}
			}, "$defs": {
				"a/b": {"type": "string"},
				"c": {"type": "object", "properties": {"d": {"type": "integer"}}, "required": ["d"], "additionalProperties": false}
			}}`,
		},
		{
			name: "recursive definition",
			in: `{"type": "object", "required": ["root"], "properties": {"root": {"$ref": "#/$defs/Node"}}, "$defs": {
				"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}
			}}`,
			want: `{"type": "object", "required": ["root"], "additionalProperties": false, "properties": {"root": {"$ref": "#/$defs/Node"}}, "$defs": {
				"Node": {"type": "object", "properties": {"children": {"type": ["array", "null"], "items": {"$ref": "#/$defs/Node"}}}, "required": ["children"], "additionalProperties": false}
			}}`,
		},
		{
			name: "other keywords copied",
			in: `{"type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema", "properties": {
				"s": {"type": "string", "minLength": 1, "pattern": "^a", "examples": [{"x": [1]}]},
				"l": {"type": "array", "items": {"type": "string"}, "minItems": 1, "contains": {"const": "a"}}
			}, "required": ["s", "l"]}`,
			want: `{"type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema", "properties": {
				"s": {"type": "string", "minLength": 1, "pattern": "^a", "examples": [{"x": [1]}]},
				"l": {"type": "array", "items": {"type": "string"}, "minItems": 1, "contains": {"const": "a"}}
			}, "required": ["l", "s"], "additionalProperties": false}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := decode(t, tt.in)
			got, ok := StrictSchema(in)
			if !ok {
				_, err := strictSchema(in)
				t.Fatalf("StrictSchema failed: %v", err)
			}
			if diff := cmp.Diff(decode(t, tt.want), got); diff != "" {
				t.Errorf("StrictSchema mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(decode(t, tt.in), in); diff != "" {
				t.Fatalf("StrictSchema changed its input (-want +got):\n%s", diff)
			}
			mutateSchema(got)
			if diff := cmp.Diff(decode(t, tt.in), in); diff != "" {
				t.Errorf("changing the result changed the input (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStrictSchemaGoValues checks schemas built in Go rather than decoded.
func TestStrictSchemaGoValues(t *testing.T) {
	in := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"s": map[string]any{"type": []string{"string"}, "enum": []string{"a"}},
			"n": map[string]any{"type": "integer", "maximum": 5},
		},
		"required": []string{"n"},
	}
	want := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"s": map[string]any{"type": []any{"string", "null"}, "enum": []any{"a", nil}},
			"n": map[string]any{"type": "integer", "maximum": 5},
		},
		"required":             []any{"n", "s"},
		"additionalProperties": false,
	}
	got, ok := StrictSchema(in)
	if !ok {
		t.Fatal("StrictSchema failed")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("StrictSchema mismatch (-want +got):\n%s", diff)
	}
}

func TestStrictSchemaFailures(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{"free-form root", `{"type": "object"}`, `free-form object: no properties`},
		{"free-form root with empty properties", `{"type": "object", "properties": {}}`, `free-form object: no properties`},
		{"free-form nested object",
			`{"type": "object", "properties": {"a": {"type": "string"}, "meta": {"type": "object", "description": "anything"}}}`,
			`properties: meta: free-form object: no properties`},
		{"free-form object in array",
			`{"type": "object", "properties": {"l": {"type": "array", "items": {"type": "object"}}}}`,
			`properties: l: items: free-form object: no properties`},
		{"additionalProperties true",
			`{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": true}`,
			`additionalProperties: only false is supported`},
		{"additionalProperties schema",
			`{"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}, "additionalProperties": {"type": "string"}}}}`,
			`properties: a: additionalProperties: only false is supported`},
		{"patternProperties",
			`{"type": "object", "properties": {"a": {"type": "string"}}, "patternProperties": {"^x": {"type": "string"}}}`,
			`patternProperties is not supported`},
		{"oneOf", `{"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}`,
			`properties: a: oneOf is not supported`},
		{"not", `{"type": "object", "properties": {"a": {"type": "string", "not": {"const": "x"}}}}`,
			`properties: a: not is not supported`},
		{"if", `{"type": "object", "properties": {"a": {"type": "string"}}, "if": {"required": ["a"]}}`,
			`if is not supported`},
		{"prefixItems", `{"type": "object", "properties": {"a": {"type": "array", "prefixItems": [{"type": "string"}]}}}`,
			`properties: a: prefixItems is not supported`},
		{"tuple items", `{"type": "object", "properties": {"a": {"type": "array", "items": [{"type": "string"}]}}}`,
			`properties: a: items: got []interface {}, want a schema object`},
		{"allOf of two",
			`{"type": "object", "properties": {"a": {"allOf": [{"type": "string"}, {"minLength": 1}]}}}`,
			`properties: a: allOf: only an allOf of one schema can be merged`},
		{"allOf beside a constraint",
			`{"type": "object", "properties": {"a": {"type": "string", "allOf": [{"minLength": 1}]}}}`,
			`properties: a: allOf: sibling "type" is not supported`},
		{"allOf of a non-schema", `{"type": "object", "properties": {"a": {"allOf": [true]}}}`,
			`properties: a: allOf: 0: got bool, want a schema object`},
		{"external ref", `{"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}`,
			`properties: a: $ref: "https://example.com/s.json" is not a local definition`},
		{"ref to a property", `{"type": "object", "properties": {"a": {"type": "string"}, "b": {"$ref": "#/properties/a"}}}`,
			`properties: b: $ref: "#/properties/a" is not a local definition`},
		{"ref to the root", `{"type": "object", "properties": {"a": {"$ref": "#"}}}`,
			`properties: a: $ref: "#" is not a local definition`},
		{"dangling ref", `{"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}, "$defs": {}}`,
			`properties: a: $ref: "#/$defs/Missing" does not resolve to a schema`},
		{"ref to a non-schema", `{"type": "object", "properties": {"a": {"$ref": "#/$defs/A/required"}}, "$defs": {"A": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}}}`,
			`properties: a: $ref: "#/$defs/A/required" does not resolve to a schema`},
		{"ref with a constraint", `{"type": "object", "properties": {"a": {"$ref": "#/$defs/A", "type": "string"}}, "$defs": {"A": {"type": "string"}}}`,
			`properties: a: $ref: sibling "type" is not supported`},
		{"non-string ref", `{"type": "object", "properties": {"a": {"$ref": 1}}}`,
			`properties: a: $ref: got float64, want a string`},
		{"bad definition", `{"type": "object", "properties": {"a": {"type": "string"}}, "$defs": {"Open": {"type": "object"}}}`,
			`$defs: Open: free-form object: no properties`},
		{"required but not a property", `{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]}`,
			`required: "b" is not a property`},
		{"required not a list", `{"type": "object", "properties": {"a": {"type": "string"}}, "required": "a"}`,
			`required: got string, want a list of strings`},
		{"root not an object", `{"type": "string"}`, `root: type is not "object"`},
		{"root without type", `{"properties": {"a": {"type": "string"}}}`, `root: type is not "object"`},
		{"root nullable", `{"type": ["object", "null"], "properties": {"a": {"type": "string"}}}`, `root: type is not "object"`},
		{"properties not an object", `{"type": "object", "properties": ["a"]}`, `properties: got []interface {}, want an object`},
		{"boolean property schema", `{"type": "object", "properties": {"a": true}}`, `properties: a: got bool, want a schema object`},
		{"bad type", `{"type": "object", "properties": {"a": {"type": 5}}}`,
			`properties: a: type: got 5, want a string or a non-empty list of strings`},
		{"empty type list", `{"type": "object", "properties": {"a": {"type": []}}}`,
			`properties: a: type: got [], want a string or a non-empty list of strings`},
		{"empty anyOf", `{"type": "object", "properties": {"a": {"anyOf": []}}}`,
			`properties: a: anyOf: got []interface {} of length 0, want a non-empty list`},
		{"bad anyOf branch", `{"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "object"}]}}}`,
			`properties: a: anyOf: 1: free-form object: no properties`},
		{"enum not a list", `{"type": "object", "properties": {"a": {"type": "string", "enum": "x"}}}`,
			`properties: a: enum: got string, want a list`},
		{"$defs not an object", `{"type": "object", "properties": {"a": {"type": "string"}}, "$defs": []}`,
			`$defs: got []interface {}, want an object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := decode(t, tt.in)
			got, ok := StrictSchema(in)
			if ok {
				t.Fatalf("StrictSchema succeeded with %v, want failure", got)
			}
			if reflect.ValueOf(got).Pointer() != reflect.ValueOf(in).Pointer() {
				t.Errorf("StrictSchema returned a different map, want its input")
			}
			if diff := cmp.Diff(decode(t, tt.in), got); diff != "" {
				t.Errorf("StrictSchema changed its input (-want +got):\n%s", diff)
			}
			_, err := strictSchema(in)
			if err == nil {
				t.Fatal("strictSchema returned no error")
			}
			if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
				t.Errorf("reason mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStrictSchemaNil(t *testing.T) {
	got, ok := StrictSchema(nil)
	if ok || got != nil {
		t.Errorf("StrictSchema(nil) = %v, %v; want nil, false", got, ok)
	}
}

// nested returns a schema of levels nested schemas: objects with one
// required property, or arrays, down to a string.
func nested(levels int, array bool) map[string]any {
	s := map[string]any{"type": "string"}
	for range levels - 1 {
		if array {
			s = map[string]any{"type": "array", "items": s}
		} else {
			s = map[string]any{"type": "object", "properties": map[string]any{"a": s}, "required": []any{"a"}}
		}
	}
	if array {
		return map[string]any{"type": "object", "properties": map[string]any{"a": s}, "required": []any{"a"}}
	}
	return s
}

func TestStrictSchemaDepth(t *testing.T) {
	tests := []struct {
		name   string
		schema map[string]any
		ok     bool
	}{
		{"objects at the limit", nested(maxSchemaDepth, false), true},
		{"objects past the limit", nested(maxSchemaDepth+1, false), false},
		{"arrays at the limit", nested(maxSchemaDepth-1, true), true},
		{"arrays past the limit", nested(maxSchemaDepth, true), false},
		{"far past the limit", nested(10000, false), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := StrictSchema(tt.schema)
			if ok != tt.ok {
				_, err := strictSchema(tt.schema)
				t.Fatalf("StrictSchema ok = %v, want %v (%v)", ok, tt.ok, err)
			}
			if ok {
				// Already strict: every level is closed and fully required.
				want := cloneMap(tt.schema)
				closeAll(want)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("StrictSchema mismatch (-want +got):\n%s", diff)
				}
				return
			}
			if reflect.ValueOf(got).Pointer() != reflect.ValueOf(tt.schema).Pointer() {
				t.Errorf("StrictSchema returned a different map, want its input")
			}
			if _, err := strictSchema(tt.schema); err == nil || !strings.Contains(err.Error(), "nested deeper than 64 levels") {
				t.Errorf("strictSchema error = %v, want one about nesting", err)
			}
		})
	}
}

// closeAll adds "additionalProperties": false to every object in a schema
// made by nested.
func closeAll(s map[string]any) {
	if s["type"] == "object" {
		s["additionalProperties"] = false
		closeAll(s["properties"].(map[string]any)["a"].(map[string]any))
	}
	if items, ok := s["items"].(map[string]any); ok {
		closeAll(items)
	}
}

// TestStrictInputSchema checks the pipeline a host runs: a tool's schema is
// copied, then made strict, and the tool never changes.
func TestStrictInputSchema(t *testing.T) {
	tool := richTool("search")
	got, ok := StrictSchema(InputSchema(tool))
	if !ok {
		t.Fatal("StrictSchema failed")
	}
	want := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"q":     map[string]any{"type": "string", "enum": []any{"x", "y"}},
			"limit": map[string]any{"type": []any{"integer", "null"}, "default": float64(10)},
		},
		"required":             []any{"limit", "q"},
		"additionalProperties": false,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("strict schema mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(richTool("search"), tool); diff != "" {
		t.Errorf("tool changed (-want +got):\n%s", diff)
	}
}

func BenchmarkStrictSchema(b *testing.B) {
	s := InputSchema(benchTool(b))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := StrictSchema(s); !ok {
			b.Fatal("StrictSchema failed")
		}
	}
}
