package einotools

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// deepSchema returns an object schema whose property "x" nests n levels
// deep, each level with a keyword of its own and an array of subschemas.
func deepSchema(n int) map[string]any {
	s := map[string]any{"type": "string", "x-leaf": true}
	for i := range n {
		s = map[string]any{
			"type":        "object",
			"description": fmt.Sprint("level ", n-i),
			"x-level":     n - i,
			"properties":  map[string]any{"x": s},
			"anyOf":       []any{map[string]any{"required": []any{"x"}}, true},
		}
	}
	return s
}

func BenchmarkConvertDeep(b *testing.B) {
	for _, n := range []int{100, 400, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := deepSchema(n)
			for b.Loop() {
				if _, err := convertSchema(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A schema nested far deeper than maxDepth converts, marshals back to the
// same JSON, and keeps its structure down to maxDepth, below which it is
// carried as it is. BenchmarkConvertDeep shows the time it takes.
func TestConvertDeep(t *testing.T) {
	in := deepSchema(1000)
	s, err := convertSchema(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(decode(t, want), decode(t, got)); diff != "" {
		t.Errorf("schema (-want +got):\n%s", diff)
	}
	depth := 0
	for s.Properties != nil {
		if len(s.AnyOf) != 2 || s.Description == "" || s.Extras["x-level"] != depth+1 {
			t.Fatalf("level %d not converted: %+v", depth, s)
		}
		s = s.Properties.Value("x")
		depth++
	}
	if depth != maxDepth {
		t.Errorf("structure kept %d levels deep, want %d", depth, maxDepth)
	}
	if _, ok := s.Extras["properties"]; !ok || s.AnyOf != nil {
		t.Errorf("level %d: subschemas not carried in Extras: %+v", depth, s)
	}
}

// A second Tools converts nothing: each tool's schema is reused while the
// manager reports the tool unchanged; a changed tool is converted again
// and a tool that has gone leaves the cache.
func TestToolsReuseConversions(t *testing.T) {
	schemaB := func(prop string) map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{prop: map[string]any{"type": "string"}}}
	}
	m, srv := connect(t, nil, map[string]mcptest.Script{"s": {Tools: []mcptest.ToolSpec{
		{Name: "a", Description: "A."},
		{Name: "b", Description: "B.", InputSchema: schemaB("old")},
		{Name: "c", Description: "C."},
	}}})
	ctx := t.Context()
	c := cacheOf(m)
	converted := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.converted
	}
	if _, err := Tools(ctx, m, nil); err != nil {
		t.Fatal(err)
	}
	if got := converted(); got != 3 {
		t.Fatalf("first Tools converted %d schemas, want 3", got)
	}
	if _, err := Tools(ctx, m, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := EnhancedTools(ctx, m, nil); err != nil {
		t.Fatal(err)
	}
	if got := converted(); got != 3 {
		t.Fatalf("Tools and EnhancedTools again converted %d more schemas, want 0", got-3)
	}

	changed := mcptest.Await(m.Subscribe, func(ev switchboard.Event) bool {
		return ev.Kind == switchboard.EventChanged && slices.Contains(ev.Tools.Removed, "s__c")
	})
	srv["s"].SetTools([]mcptest.ToolSpec{
		{Name: "a", Description: "A."},
		{Name: "b", Description: "B.", InputSchema: schemaB("new")},
	})
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	tools, err := Tools(ctx, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := converted(); got != 4 {
		t.Errorf("after b changed, %d more conversions, want 1", got-3)
	}
	info, err := tools[1].Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	js, err := info.ToJSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "s__b" || js.Properties == nil || js.Properties.Value("new") == nil {
		t.Errorf("%s: schema not the changed one: %+v", info.Name, js.Properties)
	}
	c.mu.Lock()
	n := len(c.entries)
	c.mu.Unlock()
	if n != 2 {
		t.Errorf("cache holds %d entries, want 2 (c has gone)", n)
	}
}

// BenchmarkTools300 is a turn's Tools over 300 tools that have not
// changed since the last turn.
func BenchmarkTools300(b *testing.B) {
	specs := make([]mcptest.ToolSpec, 300)
	for i := range specs {
		specs[i] = mcptest.ToolSpec{Name: fmt.Sprint("t", i), Description: "A tool.", InputSchema: richSchema}
	}
	m, _ := connect(b, nil, map[string]mcptest.Script{"s": {Tools: specs}})
	for b.Loop() {
		if _, err := Tools(b.Context(), m, nil); err != nil {
			b.Fatal(err)
		}
	}
}
