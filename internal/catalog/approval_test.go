package catalog

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// approvalTools are the tool names every policy test asks about; "always"
// and "never" check that they are plain tool names in a per-tool map.
var approvalTools = []string{"read", "delete", "always", "never", "other"}

// requirements returns the tools among approvalTools that p requires approval
// for.
func requirements(p *ApprovalRules) []string {
	out := []string{}
	for _, name := range approvalTools {
		if p.Requires(name) {
			out = append(out, name)
		}
	}
	return out
}

func lists(always, never any) map[string]any {
	m := map[string]any{}
	if always != nil {
		m["always"] = map[string]any{"tool_names": always}
	}
	if never != nil {
		m["never"] = map[string]any{"tool_names": never}
	}
	return m
}

func TestParseApproval(t *testing.T) {
	all := approvalTools
	none := []string{}
	tests := []struct {
		name string
		v    any
		want []string
	}{
		{"nil", nil, none},
		{"true", true, all},
		{"false", false, none},
		{"always", "always", all},
		{"never", "never", none},
		{"per tool", map[string]any{"delete": "always", "read": "never", "other": true}, []string{"delete", "other"}},
		{"per tool bools", map[string]any{"delete": true, "read": false}, []string{"delete"}},
		{"per tool empty", map[string]any{}, none},
		{"always and never are tool names", map[string]any{"always": "never", "never": "always"}, []string{"never"}},
		{"always as a tool with a bool", map[string]any{"always": true}, []string{"always"}},
		{"map of strings", map[string]string{"delete": "always", "read": "never"}, []string{"delete"}},
		{"map of bools", map[string]bool{"delete": true, "always": true}, []string{"delete", "always"}},
		{"lists", lists([]any{"delete", "other"}, []any{"read"}), []string{"delete", "other"}},
		{"lists of strings", lists([]string{"delete"}, []string{"read"}), []string{"delete"}},
		{"always list only", lists([]any{"delete", "never"}, nil), []string{"delete", "never"}},
		{"never list only", lists(nil, []any{"delete"}), none},
		{"empty lists", lists([]any{}, []any{}), none},
		{"missing tool_names", map[string]any{"always": map[string]any{}}, none},
		{"duplicate in one list", lists([]any{"delete", "delete"}, []any{"read", "read"}), []string{"delete"}},
		{"typed lists", map[string]any{
			"always": map[string][]string{"tool_names": {"delete"}},
			"never":  map[string][]string{"tool_names": {"read"}},
		}, []string{"delete"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseApproval(tt.v)
			if err != nil {
				t.Fatalf("ParseApproval(%#v): %v", tt.v, err)
			}
			if diff := cmp.Diff(tt.want, requirements(p)); diff != "" {
				t.Errorf("tools requiring approval (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseApprovalRejects ports the reference runtime's invalid
// policies, which must fail at construction rather than let tools run.
func TestParseApprovalRejects(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"typo", "alwyas", `approval policy: "alwyas" is not "always" or "never"`},
		{"empty string", "", `approval policy: "" is not "always" or "never"`},
		{"case matters", "Always", `approval policy: "Always" is not "always" or "never"`},
		{"typo in map", map[string]any{"delete": "alwyas"}, `approval policy: tool "delete": "alwyas" is not "always" or "never"`},
		{"typo in map of strings", map[string]string{"read": "never", "delete": "alwyas"}, `approval policy: tool "delete": "alwyas" is not "always" or "never"`},
		{"number in map", map[string]any{"delete": 1}, `approval policy: tool "delete": got int, want "always", "never" or a bool`},
		{"null in map", map[string]any{"delete": nil}, `approval policy: tool "delete": got <nil>, want "always", "never" or a bool`},
		{"empty tool name", map[string]any{"": true}, `approval policy: tool "": empty tool name`},
		{"overlapping lists", lists([]any{"read", "delete"}, []any{"delete"}), `approval policy: tool "delete" is in both "always" and "never"`},
		{"overlapping typed lists", map[string]any{
			"always": map[string][]string{"tool_names": {"x"}},
			"never":  map[string]any{"tool_names": []any{"x"}},
		}, `approval policy: tool "x" is in both "always" and "never"`},
		{"unknown key in list object", map[string]any{
			"always": map[string]any{"tool_names": []any{"delete"}, "tools": []any{"read"}},
		}, `approval policy: always: unknown key "tools", want only "tool_names"`},
		{"unknown key in typed list object", map[string]any{
			"never": map[string][]string{"tool_names": {"read"}, "names": {"x"}},
		}, `approval policy: never: unknown key "names", want only "tool_names"`},
		{"tool_names not a list", lists("delete", nil), `approval policy: always: tool_names: got string, want a list of strings`},
		{"tool_names null", map[string]any{"always": map[string]any{"tool_names": nil}},
			`approval policy: always: tool_names: got <nil>, want a list of strings`},
		{"non-string tool name", lists(nil, []any{"read", 3}), `approval policy: never: tool_names[1]: got int, want a string`},
		{"empty name in list", lists([]any{""}, nil), `approval policy: always: tool_names[0]: empty tool name`},
		{"list object beside a tool", map[string]any{"always": map[string]any{"tool_names": []any{"x"}}, "delete": "always"},
			`approval policy: tool "always": got map[string]interface {}, want "always", "never" or a bool`},
		{"int", 1, `approval policy: unsupported type int`},
		{"float", 1.5, `approval policy: unsupported type float64`},
		{"slice", []string{"delete"}, `approval policy: unsupported type []string`},
		{"map of ints", map[string]int{"delete": 1}, `approval policy: unsupported type map[string]int`},
		{"struct", struct{}{}, `approval policy: unsupported type struct {}`},
		{"func", func(context.Context, string, *mcp.Tool) (bool, error) { return true, nil },
			`approval policy: unsupported type func(context.Context, string, *mcp.Tool) (bool, error)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseApproval(tt.v)
			if err == nil {
				t.Fatalf("ParseApproval(%#v) = %+v, want an error", tt.v, p)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if p != nil {
				t.Errorf("ParseApproval returned rules with its error")
			}
		})
	}
}

func TestApprovalRulesEmpty(t *testing.T) {
	always, err := ParseApproval("always")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		p    *ApprovalRules
		tool string
		want bool
	}{
		{"nil rules", nil, "delete", false},
		{"zero rules", &ApprovalRules{}, "delete", false},
		{"unlisted tool", &ApprovalRules{tools: map[string]bool{"delete": true}}, "read", false},
		{"listed tool", &ApprovalRules{tools: map[string]bool{"delete": true}}, "delete", true},
		{"all tools", always, "read", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Requires(tt.tool); got != tt.want {
				t.Errorf("Requires(%q) = %v, want %v", tt.tool, got, tt.want)
			}
		})
	}
}
