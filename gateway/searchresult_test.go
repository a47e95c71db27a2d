package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// readFileSchema is an input schema as servers write them: described,
// with examples, defaults and titles, nested properties, items, an enum,
// and definitions of which one is used.
func readFileSchema() map[string]any {
	return map[string]any{
		"type":    "object",
		"title":   "ReadFileArgs",
		"$schema": "http://json-schema.org/draft-07/schema#",
		"properties": map[string]any{
			"path":     map[string]any{"type": "string", "description": "The file to read", "examples": []any{"/etc/hosts"}},
			"encoding": map[string]any{"type": "string", "enum": []any{"utf-8", "latin1"}, "default": "utf-8", "description": "How the file is encoded"},
			"lines": map[string]any{"type": "object", "description": "Which lines", "properties": map[string]any{
				"from": map[string]any{"type": "integer", "minimum": 1, "description": "The first"},
			}},
			"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string", "description": "A tag"}, "description": "Tags"},
			"owner": map[string]any{"$ref": "#/$defs/user"},
		},
		"required":             []any{"path", "encoding", "tags"},
		"additionalProperties": false,
		"$defs": map[string]any{
			"user":   map[string]any{"type": "object", "description": "A user", "properties": map[string]any{"group": map[string]any{"$ref": "#/$defs/group"}}},
			"group":  map[string]any{"type": "string", "description": "A group"},
			"unused": map[string]any{"type": "object", "description": "Used by another tool"},
		},
	}
}

// TestSearchToolsResultIsCompact: the text of a search_tools result is a
// line per tool (its name, its description's first sentence, the arguments
// it requires); structuredContent has no empty field, the description's
// first sentence, and the input schema trimmed of what a call need not
// know; the tool joins the session's tools/list with its whole definition.
func TestSearchToolsResultIsCompact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		description := "Read the complete contents of a file. Use it for text; binary files come back as base64.\n\nExamples: read /etc/hosts."
		ups := upstreams{"filesystem": mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{
			{Name: "read_file", Description: description, InputSchema: readFileSchema()},
			{Name: "list_directory", Description: "List a directory"},
		}})}
		_, g := setup(t, ups, []config.Server{entry("filesystem", false)}, searchOn)
		cs := client(t, g, nil)
		res := call(t, cs, searchToolsName, map[string]any{"query": "read the contents of a file", "limit": 1})
		want := `filesystem__read_file — Read the complete contents of a file. Requires: path (string), encoding ("utf-8"|"latin1"), tags (array of string).`
		if res.IsError || mcptest.Text(res) != want {
			t.Errorf("text %q (isError %v), want %q", mcptest.Text(res), res.IsError, want)
		}
		data, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		var got any
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		score := got.(map[string]any)["tools"].([]any)[0].(map[string]any)["score"]
		wantStructured := map[string]any{"tools": []any{map[string]any{
			"name": "filesystem__read_file", "server": "filesystem", "description": "Read the complete contents of a file.", "score": score,
			"inputSchema": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"path":     map[string]any{"type": "string"},
					"encoding": map[string]any{"type": "string", "enum": []any{"utf-8", "latin1"}},
					"lines":    map[string]any{"type": "object", "properties": map[string]any{"from": map[string]any{"type": "integer"}}},
					"tags":     map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
					"owner":    map[string]any{"$ref": "#/$defs/user"},
				},
				"required": []any{"path", "encoding", "tags"},
				"$defs": map[string]any{
					"user":  map[string]any{"type": "object", "properties": map[string]any{"group": map[string]any{"$ref": "#/$defs/group"}}},
					"group": map[string]any{"type": "string"},
				},
			},
		}}}
		if diff := cmp.Diff(wantStructured, got); diff != "" {
			t.Errorf("structuredContent (-want +got):\n%s", diff)
		}
		if s, ok := score.(float64); !ok || s <= 0 {
			t.Errorf("score %v, want a positive number", score)
		}
		list, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var listed *mcp.Tool
		for _, tool := range list.Tools {
			if tool.Name == "filesystem__read_file" {
				listed = tool
			}
		}
		if listed == nil || listed.Description != description || !strings.Contains(mustJSON(t, listed.InputSchema), `"examples":["/etc/hosts"]`) ||
			!strings.Contains(mustJSON(t, listed.InputSchema), `"unused"`) {
			t.Errorf("tools/list after the search has %+v, want read_file's whole definition", listed)
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSearchToolsFindsNothing: a search that finds no tool says so in
// words, and its structuredContent holds no tool.
func TestSearchToolsFindsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, g := setup(t, searchUpstreams(), searchServers(), searchOn)
		cs := client(t, g, nil)
		res := call(t, cs, searchToolsName, map[string]any{"query": "quantum chromodynamics"})
		if res.IsError || mcptest.Text(res) != noMatch {
			t.Errorf("text %q (isError %v), want %q", mcptest.Text(res), res.IsError, noMatch)
		}
		if got := mustJSON(t, res.StructuredContent); got != `{"tools":[]}` {
			t.Errorf("structuredContent %s, want no tools", got)
		}
	})
}

func TestFirstSentence(t *testing.T) {
	long := strings.Repeat("word ", 50)
	for text, want := range map[string]string{
		"Read a file. Then more.":                     "Read a file.",
		"  Read a file\nfrom disk. More":              "Read a file.",
		"\n    Lists projects on CircleCI.\n    More": "Lists projects on CircleCI.",
		"Use v1.2 of the API! Or not":                 "Use v1.2 of the API!",
		"Is it there? Yes":                            "Is it there?",
		"## Memory\nKeeps facts":                      "Memory.",
		"no full stop":                                "no full stop.",
		"":                                            "",
		"   ":                                         "",
		long:                                          strings.TrimSpace(strings.Repeat("word ", 32)) + "…",
		strings.Repeat("é", 100):                      strings.Repeat("é", 80) + "…",
	} {
		if got := firstSentence(text, maxSentence); got != want {
			t.Errorf("firstSentence(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestRequiredArguments(t *testing.T) {
	prop := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"a": prop("type", "string"),
			"b": prop("type", []any{"string", "null"}),
			"c": prop("anyOf", []any{prop("type", "object"), prop("type", "string")}),
			"d": prop("enum", []any{1.0, 2.0}),
			"e": prop("enum", []any{"1", "2", "3", "4", "5", "6"}, "type", "string"),
			"f": prop("type", "array", "items", prop("type", "integer")),
			"g": prop("description", "anything"),
		},
		"required": []any{"a", "b", "c", "d", "e", "f", "g", "h", 7.0},
	}
	want := `a (string), b (string|null), c (object|string), d (1|2), e (string), f (array of integer), g, h`
	if got := requiredArguments(schema); got != want {
		t.Errorf("requiredArguments = %q, want %q", got, want)
	}
	var many []any
	for _, name := range strings.Split("a b c d e f g h i j", " ") {
		many = append(many, name)
	}
	want = "a, b, c, d, e, f, g, h, and 2 more"
	if got := requiredArguments(map[string]any{"required": many}); got != want {
		t.Errorf("requiredArguments of 10 = %q, want %q", got, want)
	}
	for _, s := range []any{nil, "x", map[string]any{}, map[string]any{"required": "a"}} {
		if got := requiredArguments(s); got != "" {
			t.Errorf("requiredArguments(%v) = %q, want none", s, got)
		}
	}
}

// TestTrimSchemaLeavesTheDefinitionAlone: trimming makes a new schema;
// the tool's own keeps all it had.
func TestTrimSchemaLeavesTheDefinitionAlone(t *testing.T) {
	schema := readFileSchema()
	before := mustJSON(t, schema)
	trimSchema(schema)
	if after := mustJSON(t, schema); after != before {
		t.Errorf("trimSchema changed the schema:\n%s\nwas\n%s", after, before)
	}
	raw := json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","description":"x"}}}`)
	if got := mustJSON(t, trimSchema(raw)); got != `{"properties":{"a":{"type":"string"}},"type":"object"}` {
		t.Errorf("trimSchema of raw JSON = %s", got)
	}
	if got := trimSchema(json.RawMessage(`[1]`)); mustJSON(t, got) != `[1]` {
		t.Errorf("trimSchema of a JSON array = %s, want it as it is", mustJSON(t, got))
	}
}
