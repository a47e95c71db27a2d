package catalog

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAllowed(t *testing.T) {
	tests := []struct {
		name        string
		tool        string
		allow, deny []string
		want        bool
	}{
		{"no filters", "x", nil, nil, true},
		{"empty lists", "x", []string{}, []string{}, true},
		{"allowed exactly", "x", []string{"x"}, nil, true},
		{"not allowed", "y", []string{"x"}, nil, false},
		{"denied", "x", nil, []string{"x"}, false},
		{"deny after allow", "x", []string{"x"}, []string{"x"}, false},
		{"allow glob", "issue_create", []string{"issue_*"}, nil, true},
		{"allow glob miss", "pr_create", []string{"issue_*"}, nil, false},
		{"deny glob", "issue_delete", []string{"issue_*"}, []string{"*_delete"}, false},
		{"deny glob miss", "issue_list", []string{"issue_*"}, []string{"*_delete"}, true},
		{"question mark", "tool1", []string{"tool?"}, nil, true},
		{"class", "tool2", []string{"tool[12]"}, nil, true},
		{"class miss", "tool3", []string{"tool[12]"}, nil, false},
		{"matches original name", "a.b", []string{"a.b"}, nil, true},
		{"malformed allow matches nothing", "x", []string{"["}, nil, false},
		{"malformed deny matches nothing", "x", nil, []string{"[", "x["}, true},
		{"malformed next to a good one", "x", []string{"[", "x"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Allowed(tt.tool, tt.allow, tt.deny); got != tt.want {
				t.Errorf("Allowed(%q, %q, %q) = %v, want %v", tt.tool, tt.allow, tt.deny, got, tt.want)
			}
		})
	}
}

// TestBuildStaticFilters ports the allow and deny vectors of the reference
// runtime's static filter test.
func TestBuildStaticFilters(t *testing.T) {
	tests := []struct {
		name        string
		allow, deny []string
		want        []string
	}{
		{"allow two", []string{"tool1", "tool2"}, nil, []string{"tool1", "tool2"}},
		{"deny two", nil, []string{"tool3", "tool4"}, []string{"tool1", "tool2"}},
		{"allow three deny one", []string{"tool1", "tool2", "tool3"}, []string{"tool3"}, []string{"tool1", "tool2"}},
		{"none", nil, nil, []string{"tool1", "tool2", "tool3", "tool4"}},
		{"allow two deny one", []string{"tool1", "tool2"}, []string{"tool2"}, []string{"tool1"}},
		{"globs", []string{"tool*"}, []string{"*[34]"}, []string{"tool1", "tool2"}},
		{"deny all", nil, []string{"*"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Build([]Source{{
				Server: "s",
				Allow:  tt.allow,
				Deny:   tt.deny,
				Tools:  tools("tool1", "tool2", "tool3", "tool4"),
			}})
			got := []string{}
			for _, tool := range v.Tools() {
				got = append(got, tool.Original)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("exposed tools mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildFilteredToolsTakeNoNames(t *testing.T) {
	tests := []struct {
		name    string
		sources []Source
		want    []route
	}{
		{
			name: "denied twin frees the bare name",
			sources: []Source{
				{Server: "a", Prefix: "p", Tools: tools("t")},
				{Server: "b", Prefix: "p", Tools: tools("t"), Deny: []string{"t"}},
			},
			want: []route{{"p__t", "a", "t"}},
		},
		{
			name: "not allowed twin frees the bare name",
			sources: []Source{
				{Server: "a", Prefix: "p", Tools: tools("t", "u"), Allow: []string{"u"}},
				{Server: "b", Prefix: "p", Tools: tools("t")},
			},
			want: []route{{"p__t", "b", "t"}, {"p__u", "a", "u"}},
		},
		{
			name: "filters match the original name, not the public one",
			sources: []Source{
				{Server: "a", Prefix: "p", Tools: tools("t"), Deny: []string{"p__t"}},
			},
			want: []route{{"p__t", "a", "t"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := routes(Build(tt.sources).Tools())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Build names mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
