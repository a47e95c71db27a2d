package catalog

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestBuildPrompts(t *testing.T) {
	p := func(names ...string) []*mcp.Prompt {
		var out []*mcp.Prompt
		for _, n := range names {
			out = append(out, &mcp.Prompt{Name: n, Arguments: []*mcp.PromptArgument{{Name: "x"}}})
		}
		return out
	}
	sources := []PromptSource{
		{Server: "docs", Prefix: "docs", Prompts: p("summarize", "review")},
		{Server: "code", Prefix: "code", Prompts: p("review")},
		{Server: "raw", Prompts: p("plain")},
	}
	v := BuildPrompts(sources)
	want := []string{"code__review", "docs__review", "docs__summarize", "plain"}
	if diff := cmp.Diff(want, v.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	reversed := BuildPrompts([]PromptSource{sources[2], sources[1], sources[0]})
	if diff := cmp.Diff(v.Names(), reversed.Names()); diff != "" {
		t.Errorf("names depend on the order of sources:\n%s", diff)
	}
	server, original, ok := v.Route("code__review")
	if !ok || server != "code" || original != "review" {
		t.Errorf("Route(code__review) = %q, %q, %v", server, original, ok)
	}
	got := v.Prompts()
	got[0].Prompt.Arguments[0].Name = "mutated"
	if v.Prompts()[0].Prompt.Arguments[0].Name != "x" {
		t.Error("mutating a returned prompt changed the view")
	}
	if got[0].Prompt.Name != "code__review" {
		t.Errorf("a returned prompt is named %q, want its public name", got[0].Prompt.Name)
	}
	var nilView *PromptView
	if len(nilView.Prompts()) != 0 || len(nilView.Names()) != 0 {
		t.Error("a nil view is not empty")
	}
	if _, _, ok := nilView.Route("x"); ok {
		t.Error("a nil view routes")
	}
}

func TestBuildResources(t *testing.T) {
	r := func(uris ...string) []*mcp.Resource {
		var out []*mcp.Resource
		for _, u := range uris {
			out = append(out, &mcp.Resource{URI: u, Name: u})
		}
		return out
	}
	v := BuildResources([]ResourceSource{
		{Server: "first", Resources: r("file:///b", "file:///shared")},
		{Server: "second", Resources: r("file:///a", "file:///shared"), Templates: []*mcp.ResourceTemplate{{URITemplate: "mem://notes/{id}", Name: "note"}}},
		{Server: "third", Resources: r("file:///shared")},
	})
	if diff := cmp.Diff([]string{"file:///a", "file:///b", "file:///shared"}, v.URIs()); diff != "" {
		t.Errorf("URIs (-want +got):\n%s", diff)
	}
	for uri, want := range map[string]string{"file:///shared": "first", "file:///a": "second", "mem://notes/42": "second"} {
		if got, ok := v.Route(uri); !ok || got != want {
			t.Errorf("Route(%s) = %q, %v; want %q", uri, got, ok, want)
		}
	}
	if _, ok := v.Route("mem://other/1"); ok {
		t.Error("an unknown URI was routed")
	}
	want := []Collision{{URI: "file:///shared", Winner: "first", Losers: []string{"second", "third"}}}
	if diff := cmp.Diff(want, v.Collisions()); diff != "" {
		t.Errorf("collisions (-want +got):\n%s", diff)
	}
	res := v.Resources()
	res[0].Resource.URI = "mutated"
	if v.Resources()[0].Resource.URI != "file:///a" {
		t.Error("mutating a returned resource changed the view")
	}
	if got := v.Templates(); len(got) != 1 || got[0].Server != "second" {
		t.Errorf("templates = %v", got)
	}
}
