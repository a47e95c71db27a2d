package catalog

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// customSchema is a schema type that cloneValue does not know.
type customSchema struct {
	Type       string                   `json:"type"`
	Properties map[string]*customSchema `json:"properties,omitempty"`
}

// noJSON cannot be marshaled.
type noJSON struct {
	C chan int
}

func TestCloneTool(t *testing.T) {
	tests := []struct {
		name string
		tool *mcp.Tool
	}{
		{"nil", nil},
		{"zero", &mcp.Tool{}},
		{"rich", richTool("search")},
		{"empty collections", &mcp.Tool{
			Meta:        mcp.Meta{},
			Icons:       []mcp.Icon{},
			InputSchema: map[string]any{"properties": map[string]any{}, "required": []any{}},
		}},
		{"typed nils", &mcp.Tool{InputSchema: map[string]any(nil), OutputSchema: []any(nil)}},
		{"raw message", &mcp.Tool{InputSchema: json.RawMessage(`{"type":"object"}`)}},
		{"json number and ints", &mcp.Tool{InputSchema: map[string]any{"a": json.Number("1.5"), "b": 3, "c": int64(4)}}},
		{"string slice and map", &mcp.Tool{InputSchema: map[string]any{"required": []string{"a"}, "x": map[string]string{"k": "v"}}}},
		{"jsonschema", &mcp.Tool{InputSchema: &jsonschema.Schema{
			Type:       "object",
			Properties: map[string]*jsonschema.Schema{"q": {Type: "string", Enum: []any{"a", "b"}}},
			Required:   []string{"q"},
		}}},
		{"custom struct", &mcp.Tool{InputSchema: customSchema{Type: "object", Properties: map[string]*customSchema{"q": {Type: "string"}}}}},
		{"custom pointer", &mcp.Tool{InputSchema: &customSchema{Type: "object", Properties: map[string]*customSchema{"q": {Type: "string"}}}}},
		{"nested unknown", &mcp.Tool{InputSchema: map[string]any{"p": &customSchema{Type: "string"}}}},
		{"typed nil pointer", &mcp.Tool{InputSchema: (*jsonschema.Schema)(nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CloneTool(tt.tool)
			if diff := cmp.Diff(tt.tool, got); diff != "" {
				t.Errorf("CloneTool mismatch (-want +got):\n%s", diff)
			}
			if tt.tool != nil && got == tt.tool {
				t.Errorf("CloneTool returned its argument")
			}
		})
	}
}

func TestCloneToolIsDeep(t *testing.T) {
	tests := []struct {
		name   string
		tool   func() *mcp.Tool
		mutate func(*mcp.Tool)
	}{
		{
			name:   "everything",
			tool:   func() *mcp.Tool { return richTool("search") },
			mutate: func(c *mcp.Tool) { mutate([]Tool{{Tool: c}}) },
		},
		{
			name: "raw message",
			tool: func() *mcp.Tool { return &mcp.Tool{InputSchema: json.RawMessage(`{"type":"object"}`)} },
			mutate: func(c *mcp.Tool) {
				c.InputSchema.(json.RawMessage)[2] = 'X'
			},
		},
		{
			name: "string slice and map",
			tool: func() *mcp.Tool {
				return &mcp.Tool{InputSchema: map[string]any{"required": []string{"a"}, "x": map[string]string{"k": "v"}}}
			},
			mutate: func(c *mcp.Tool) {
				s := c.InputSchema.(map[string]any)
				s["required"].([]string)[0] = "changed"
				s["x"].(map[string]string)["k"] = "changed"
			},
		},
		{
			name: "jsonschema",
			tool: func() *mcp.Tool {
				return &mcp.Tool{InputSchema: &jsonschema.Schema{
					Type:       "object",
					Properties: map[string]*jsonschema.Schema{"q": {Type: "string", Enum: []any{"a"}}},
				}}
			},
			mutate: func(c *mcp.Tool) {
				s := c.InputSchema.(*jsonschema.Schema)
				s.Type = "changed"
				s.Properties["q"].Enum[0] = "changed"
				s.Properties["q"].Type = "changed"
			},
		},
		{
			name: "custom struct",
			tool: func() *mcp.Tool {
				return &mcp.Tool{InputSchema: customSchema{Type: "object", Properties: map[string]*customSchema{"q": {Type: "string"}}}}
			},
			mutate: func(c *mcp.Tool) {
				c.InputSchema.(customSchema).Properties["q"].Type = "changed"
			},
		},
		{
			name: "nested unknown",
			tool: func() *mcp.Tool {
				return &mcp.Tool{InputSchema: map[string]any{"p": &customSchema{Type: "string"}}}
			},
			mutate: func(c *mcp.Tool) {
				c.InputSchema.(map[string]any)["p"].(*customSchema).Type = "changed"
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := tt.tool()
			c := CloneTool(orig)
			tt.mutate(c)
			if diff := cmp.Diff(tt.tool(), orig); diff != "" {
				t.Errorf("original changed after mutating the clone (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCloneValueFallbacks(t *testing.T) {
	ch := noJSON{C: make(chan int)}
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"named string kept", mcp.IconTheme("dark"), mcp.IconTheme("dark")},
		{"unmarshalable shared", ch, ch},
		{"generic form when the type cannot take its own JSON", badRoundTrip{N: 1}, map[string]any{"n": float64(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cloneValue(tt.in)
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b chan int) bool { return a == b })); diff != "" {
				t.Errorf("cloneValue(%v) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// badRoundTrip marshals to JSON that it refuses to unmarshal.
type badRoundTrip struct {
	N int `json:"n"`
}

func (*badRoundTrip) UnmarshalJSON([]byte) error { return fmt.Errorf("no") }

// benchTool returns a tool as a real server lists it: 20 properties decoded
// from JSON, with nested objects, arrays and enums.
func benchTool(tb testing.TB) *mcp.Tool {
	props := map[string]any{}
	for i := range 20 {
		var p map[string]any
		switch i % 4 {
		case 0:
			p = map[string]any{"type": "string", "description": fmt.Sprintf("Field %d of the request.", i), "minLength": 1}
		case 1:
			p = map[string]any{"type": "integer", "minimum": 0, "maximum": 100, "default": 10}
		case 2:
			p = map[string]any{"type": "string", "enum": []string{"open", "closed", "all"}}
		case 3:
			p = map[string]any{"type": "array", "items": map[string]any{
				"type":       "object",
				"properties": map[string]any{"name": map[string]any{"type": "string"}, "value": map[string]any{"type": "number"}},
				"required":   []string{"name"},
			}}
		}
		props[fmt.Sprintf("field_%02d", i)] = p
	}
	data, err := json.Marshal(map[string]any{
		"name":        "create_issue",
		"description": "Create a new issue in a repository.",
		"inputSchema": map[string]any{"type": "object", "properties": props, "required": []string{"field_00", "field_01"}},
		"annotations": map[string]any{"title": "Create issue", "destructiveHint": false},
		"_meta":       map[string]any{"vendor/version": "1"},
	})
	if err != nil {
		tb.Fatal(err)
	}
	var tool mcp.Tool
	if err := json.Unmarshal(data, &tool); err != nil {
		tb.Fatal(err)
	}
	return &tool
}

func TestBenchToolIsJSONDecoded(t *testing.T) {
	tool := benchTool(t)
	if _, ok := tool.InputSchema.(map[string]any); !ok {
		t.Fatalf("InputSchema is %T, want map[string]any", tool.InputSchema)
	}
	if diff := cmp.Diff(tool, CloneTool(tool)); diff != "" {
		t.Errorf("CloneTool mismatch (-want +got):\n%s", diff)
	}
}

func BenchmarkCloneTool(b *testing.B) {
	tool := benchTool(b)
	b.ReportAllocs()
	for b.Loop() {
		CloneTool(tool)
	}
}

// TestCloneListsAreDeep: a copy of a prompt, a resource or a template is
// equal to its original, and changing anything it holds, down to an
// annotation's audience or an icon's sizes, leaves the original as it was.
func TestCloneListsAreDeep(t *testing.T) {
	icons := func() []mcp.Icon { return []mcp.Icon{{Source: "https://x/i.png", Sizes: []string{"16x16"}}} }
	annotations := func() *mcp.Annotations { return &mcp.Annotations{Audience: []mcp.Role{"user"}, Priority: 0.5} }
	meta := func() mcp.Meta { return mcp.Meta{"k": map[string]any{"v": 1.0}} }
	prompt := func() *mcp.Prompt {
		return &mcp.Prompt{Name: "p", Arguments: []*mcp.PromptArgument{{Name: "a"}}, Icons: icons(), Meta: meta()}
	}
	resource := func() *mcp.Resource {
		return &mcp.Resource{URI: "mem://a", Name: "a", Annotations: annotations(), Icons: icons(), Meta: meta()}
	}
	template := func() *mcp.ResourceTemplate {
		return &mcp.ResourceTemplate{URITemplate: "mem://{x}", Name: "t", Annotations: annotations(), Icons: icons(), Meta: meta()}
	}
	mutate := func(icons []mcp.Icon, a *mcp.Annotations, m mcp.Meta) {
		icons[0].Sizes[0] = "mutated"
		if a != nil {
			a.Audience[0] = "mutated"
		}
		m["k"].(map[string]any)["v"] = "mutated"
	}

	p := prompt()
	cp := ClonePrompt(p)
	if diff := cmp.Diff(p, cp); diff != "" {
		t.Errorf("ClonePrompt mismatch (-want +got):\n%s", diff)
	}
	cp.Arguments[0].Name = "mutated"
	mutate(cp.Icons, nil, cp.Meta)
	if diff := cmp.Diff(prompt(), p); diff != "" {
		t.Errorf("changing a prompt's copy changed it (-want +got):\n%s", diff)
	}

	r := resource()
	cr := CloneResource(r)
	if diff := cmp.Diff(r, cr); diff != "" {
		t.Errorf("CloneResource mismatch (-want +got):\n%s", diff)
	}
	mutate(cr.Icons, cr.Annotations, cr.Meta)
	if diff := cmp.Diff(resource(), r); diff != "" {
		t.Errorf("changing a resource's copy changed it (-want +got):\n%s", diff)
	}

	tm := template()
	ct := CloneTemplate(tm)
	if diff := cmp.Diff(tm, ct); diff != "" {
		t.Errorf("CloneTemplate mismatch (-want +got):\n%s", diff)
	}
	mutate(ct.Icons, ct.Annotations, ct.Meta)
	if diff := cmp.Diff(template(), tm); diff != "" {
		t.Errorf("changing a template's copy changed it (-want +got):\n%s", diff)
	}

	if ClonePrompt(nil) != nil || CloneResource(nil) != nil || CloneTemplate(nil) != nil {
		t.Error("the copy of nil is not nil")
	}
}
