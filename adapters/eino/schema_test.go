package einotools

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
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
