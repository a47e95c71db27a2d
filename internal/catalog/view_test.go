package catalog

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// richTool returns a tool with every field that holds a reference set.
func richTool(name string) *mcp.Tool {
	yes, no := true, false
	return &mcp.Tool{
		Meta:        mcp.Meta{"vendor": map[string]any{"tags": []any{"a", "b"}}},
		Annotations: &mcp.ToolAnnotations{Title: "T", DestructiveHint: &yes, OpenWorldHint: &no, ReadOnlyHint: true},
		Description: "does " + name,
		Name:        name,
		Title:       "Title of " + name,
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"q":     map[string]any{"type": "string", "enum": []any{"x", "y"}},
				"limit": map[string]any{"type": "integer", "default": float64(10)},
			},
			"required": []any{"q"},
		},
		OutputSchema: map[string]any{"type": "object", "properties": map[string]any{}},
		Icons:        []mcp.Icon{{Source: "https://example.invalid/i.png", Sizes: []string{"48x48"}}},
	}
}

func TestViewLookup(t *testing.T) {
	v := Build([]Source{
		{Server: "docs", Prefix: "docs", Tools: []*mcp.Tool{richTool("search"), richTool("fetch")}},
		{Server: "calendar", Prefix: "cal", Tools: []*mcp.Tool{richTool("search")}},
		{Server: "raw", Prefix: "", Tools: []*mcp.Tool{richTool("ping")}},
	})
	tests := []struct {
		public string
		want   route
		ok     bool
	}{
		{"docs__search", route{"docs__search", "docs", "search"}, true},
		{"docs__fetch", route{"docs__fetch", "docs", "fetch"}, true},
		{"cal__search", route{"cal__search", "calendar", "search"}, true},
		{"ping", route{"ping", "raw", "ping"}, true},
		{"calendar__search", route{}, false},
		{"search", route{}, false},
		{"", route{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.public, func(t *testing.T) {
			got, ok := v.Lookup(tt.public)
			if ok != tt.ok {
				t.Fatalf("Lookup(%q) ok = %v, want %v", tt.public, ok, tt.ok)
			}
			if diff := cmp.Diff(tt.want, route{got.Name, got.Server, got.Original}); diff != "" {
				t.Errorf("Lookup(%q) route mismatch (-want +got):\n%s", tt.public, diff)
			}
			server, original, rok := v.Route(tt.public)
			if rok != tt.ok || server != tt.want.Server || original != tt.want.Original {
				t.Errorf("Route(%q) = %q, %q, %v; want %q, %q, %v", tt.public, server, original, rok, tt.want.Server, tt.want.Original, tt.ok)
			}
			if !ok {
				if got.Tool != nil {
					t.Errorf("Lookup(%q) returned a definition for a missing tool", tt.public)
				}
				return
			}
			want := richTool(tt.want.Original)
			want.Name = tt.public
			if diff := cmp.Diff(want, got.Tool); diff != "" {
				t.Errorf("Lookup(%q) definition mismatch (-want +got):\n%s", tt.public, diff)
			}
		})
	}
	if got, want := v.Len(), 4; got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
}

func TestViewServer(t *testing.T) {
	v := Build([]Source{
		src("b", "z", "a", "m"),
		src("a", "x"),
		{Server: "c", Prefix: "c", Deny: []string{"*"}, Tools: tools("hidden")},
	})
	tests := []struct {
		server string
		want   []route
	}{
		{"b", []route{{"b__a", "b", "a"}, {"b__m", "b", "m"}, {"b__z", "b", "z"}}},
		{"a", []route{{"a__x", "a", "x"}}},
		{"c", []route{}},
		{"unknown", []route{}},
	}
	for _, tt := range tests {
		t.Run(tt.server, func(t *testing.T) {
			got := v.Server(tt.server)
			if diff := cmp.Diff(tt.want, routes(got)); diff != "" {
				t.Errorf("Server(%q) mismatch (-want +got):\n%s", tt.server, diff)
			}
			if got == nil {
				t.Errorf("Server(%q) = nil, want an empty slice", tt.server)
			}
			for _, tool := range got {
				if tool.Tool.Name != tool.Name {
					t.Errorf("Server(%q): definition named %q, want the public name %q", tt.server, tool.Tool.Name, tool.Name)
				}
			}
		})
	}
}

func TestViewToolsSorted(t *testing.T) {
	v := Build([]Source{src("zeta", "b", "a"), src("alpha", "c"), {Server: "raw", Tools: tools("m")}})
	want := []route{
		{"alpha__c", "alpha", "c"},
		{"m", "raw", "m"},
		{"zeta__a", "zeta", "a"},
		{"zeta__b", "zeta", "b"},
	}
	got := v.Tools()
	if diff := cmp.Diff(want, routes(got)); diff != "" {
		t.Errorf("Tools() mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"alpha": 1, "raw": 1, "zeta": 2}, v.Counts()); diff != "" {
		t.Errorf("Counts() mismatch (-want +got):\n%s", diff)
	}
	wantNames := []string{"alpha__c", "m", "zeta__a", "zeta__b"}
	if diff := cmp.Diff(wantNames, v.Names()); diff != "" {
		t.Errorf("Names() mismatch (-want +got):\n%s", diff)
	}
	for _, tool := range got {
		if tool.Tool.Name != tool.Name {
			t.Errorf("tool %q: definition named %q, want the public name", tool.Name, tool.Tool.Name)
		}
	}
}

func TestNilView(t *testing.T) {
	var v *View
	if got := v.Tools(); got == nil || len(got) != 0 {
		t.Errorf("nil View: Tools() = %#v, want an empty non-nil slice", got)
	}
	if got := v.Server("x"); got == nil || len(got) != 0 {
		t.Errorf("nil View: Server() = %#v, want an empty non-nil slice", got)
	}
	if got := v.Len(); got != 0 {
		t.Errorf("nil View: Len() = %d, want 0", got)
	}
	if _, _, ok := v.Route("x"); ok {
		t.Error("nil View: Route() found a tool")
	}
	if got := v.Counts(); got == nil || len(got) != 0 {
		t.Errorf("nil View: Counts() = %#v, want an empty non-nil map", got)
	}
	if got := v.Names(); got == nil || len(got) != 0 {
		t.Errorf("nil View: Names() = %#v, want an empty non-nil slice", got)
	}
	if got, ok := v.Lookup("x"); ok || got != (Tool{}) {
		t.Errorf("nil View: Lookup() = %v, %v, want zero, false", got, ok)
	}
}

func TestBuildEmptyView(t *testing.T) {
	v := Build(nil)
	if v == nil {
		t.Fatal("Build(nil) = nil, want an empty View")
	}
	if got := v.Tools(); got == nil || len(got) != 0 {
		t.Errorf("Build(nil).Tools() = %#v, want an empty non-nil slice", got)
	}
}

func TestBuildSkipsNilAndDuplicateTools(t *testing.T) {
	first := &mcp.Tool{Name: "t", Description: "first"}
	second := &mcp.Tool{Name: "t", Description: "second"}
	v := Build([]Source{{Server: "s", Prefix: "s", Tools: []*mcp.Tool{nil, first, second, nil}}})
	got := v.Tools()
	if diff := cmp.Diff([]route{{"s__t", "s", "t"}}, routes(got)); diff != "" {
		t.Fatalf("Tools() mismatch (-want +got):\n%s", diff)
	}
	if got[0].Tool.Description != "first" {
		t.Errorf("definition %q was used, want the first one", got[0].Tool.Description)
	}
}

// mutate changes every reference reachable from tools.
func mutate(tools []Tool) {
	for i := range tools {
		tt := &tools[i]
		tt.Name, tt.Server, tt.Original = "x", "x", "x"
		d := tt.Tool
		d.Name, d.Description, d.Title = "x", "x", "x"
		d.Meta["vendor"].(map[string]any)["tags"].([]any)[0] = "changed"
		d.Meta["new"] = true
		*d.Annotations.DestructiveHint = false
		*d.Annotations.OpenWorldHint = true
		d.Annotations.Title = "x"
		d.Icons[0].Sizes[0] = "1x1"
		d.Icons[0].Source = "x"
		in := d.InputSchema.(map[string]any)
		props := in["properties"].(map[string]any)
		props["q"].(map[string]any)["enum"].([]any)[0] = "changed"
		props["limit"].(map[string]any)["default"] = float64(99)
		delete(props, "q")
		in["required"].([]any)[0] = "changed"
		d.OutputSchema.(map[string]any)["type"] = "changed"
		tt.Tool = nil
	}
	tools[0] = Tool{}
}

func TestViewSnapshotsAreIsolated(t *testing.T) {
	sources := []Source{
		{Server: "docs", Prefix: "docs", Tools: []*mcp.Tool{richTool("search"), richTool("fetch")}},
		{Server: "raw", Prefix: "", Tools: []*mcp.Tool{richTool("ping")}},
	}
	original := make([]*mcp.Tool, 0, 3)
	for _, s := range sources {
		for _, tool := range s.Tools {
			original = append(original, CloneTool(tool))
		}
	}
	v := Build(sources)
	want := v.Tools()

	tests := []struct {
		name string
		get  func() []Tool
	}{
		{"Tools", v.Tools},
		{"Server", func() []Tool { return v.Server("docs") }},
		{"Lookup", func() []Tool { tool, _ := v.Lookup("docs__search"); return []Tool{tool} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mutate(tt.get())
			if diff := cmp.Diff(want, v.Tools()); diff != "" {
				t.Errorf("view changed after mutating %s (-want +got):\n%s", tt.name, diff)
			}
		})
	}

	var got []*mcp.Tool
	for _, s := range sources {
		got = append(got, s.Tools...)
	}
	if diff := cmp.Diff(original, got); diff != "" {
		t.Errorf("source tools changed (-want +got):\n%s", diff)
	}
}

func TestViewConcurrentReads(t *testing.T) {
	v := Build([]Source{{Server: "docs", Prefix: "docs", Tools: []*mcp.Tool{richTool("search")}}})
	want := v.Tools()
	done := make(chan []Tool)
	for range 4 {
		go func() {
			got := v.Tools()
			mutate(v.Server("docs"))
			done <- got
		}()
	}
	for range 4 {
		if diff := cmp.Diff(want, <-done); diff != "" {
			t.Errorf("concurrent Tools() mismatch (-want +got):\n%s", diff)
		}
	}
}
