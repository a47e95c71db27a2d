package switchboard_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/identity"
)

// The gateway's policies become a manager's filters: each query carries the
// caller's identity, and sees and calls only what the rules allow it.
func ExampleNewPolicies() {
	cfg, err := config.Parse("mcp.json", []byte(`{
		"mcpServers": {"hello": {"command": "greeter-server"}},
		"gateway": {"policies": [
			{"allow": {"tools": ["hello__*"]}, "when": "'staff' in identity.groups"}
		]}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	policies, err := switchboard.NewPolicies(cfg.Gateway.Policies, nil)
	if err != nil {
		log.Fatal(err)
	}
	tools, prompts, resources := policies.Filters()
	m := connected(`{"mcpServers": {"hello": {"command": "greeter-server"}}}`,
		map[string]*mcp.Server{"hello": greeter()},
		&switchboard.Options{Filter: tools, PromptFilter: prompts, ResourceFilter: resources})
	defer m.Close()

	ctx := context.Background()
	for _, id := range []*identity.Identity{{Subject: "ann", Groups: []string{"staff"}}, {Subject: "bob"}} {
		q := &switchboard.Query{Extra: map[string]any{switchboard.IdentityKey: id}}
		_, err := m.CallTool(ctx, q, &mcp.CallToolParams{Name: "hello__greet", Arguments: map[string]any{"name": id.Subject}})
		fmt.Printf("%s: %d tools, call error: %v\n", id.Subject, len(m.Tools(ctx, q)), err != nil)
	}
	// Output:
	// ann: 1 tools, call error: false
	// bob: 0 tools, call error: true
}

// TestPoliciesFilters: the filters decide by the public name of tools and
// prompts, by the URI of resources, by the tool's annotations, and for the
// identity in the query (none is anonymous).
func TestPoliciesFilters(t *testing.T) {
	cfg := mustParse(t, `{"mcpServers": {}, "gateway": {"policies": [
		{"allow": {"tools": ["hello__*"], "prompts": ["notes__summarize"]}, "when": "identity.subject == 'ann'"},
		{"allow": {"resources": ["notes://*"]}, "when": "identity.subject == 'ann'"},
		{"deny": {}, "when": "annotations.readOnlyHint && identity.client == 'ro-blocked'"}
	]}}`)
	policies, err := switchboard.NewPolicies(cfg.Gateway.Policies, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, prompts, resources := policies.Filters()
	m := switchboard.New(mustParse(t, `{"mcpServers": {"hello": {"command": "x"}, "notes": {"command": "y"}}}`), &switchboard.Options{
		StartupGate: -1,
		Cache:       switchboard.CacheOff,
		Dial:        inProcess(map[string]*mcp.Server{"hello": readOnlyGreeter(), "notes": notebook()}),
		Filter:      tools, PromptFilter: prompts, ResourceFilter: resources,
	})
	defer m.Close()
	listed := resourcesListed(m)
	ctx := context.Background()
	if err := m.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	<-listed

	type view struct{ Tools, Prompts, Resources []string }
	viewOf := func(q *switchboard.Query) view {
		var v view
		for _, x := range m.Tools(ctx, q) {
			v.Tools = append(v.Tools, x.Name)
		}
		for _, x := range m.Prompts(ctx, q) {
			v.Prompts = append(v.Prompts, x.Name)
		}
		for _, x := range m.Resources(ctx, q) {
			v.Resources = append(v.Resources, x.Resource.URI)
		}
		return v
	}
	for _, tc := range []struct {
		name string
		q    *switchboard.Query
		want view
	}{
		{"ann", &switchboard.Query{Extra: map[string]any{switchboard.IdentityKey: &identity.Identity{Subject: "ann"}}},
			view{Tools: []string{"hello__greet"}, Prompts: []string{"notes__summarize"}, Resources: []string{"notes://today"}}},
		{"ann read-only blocked", &switchboard.Query{Extra: map[string]any{switchboard.IdentityKey: &identity.Identity{Subject: "ann", Client: "ro-blocked"}}},
			view{Prompts: []string{"notes__summarize"}, Resources: []string{"notes://today"}}},
		{"bob", &switchboard.Query{Extra: map[string]any{switchboard.IdentityKey: &identity.Identity{Subject: "bob"}}}, view{}},
		{"no identity", nil, view{}},
		{"wrong type", &switchboard.Query{Extra: map[string]any{switchboard.IdentityKey: "ann"}}, view{}},
	} {
		if diff := cmp.Diff(tc.want, viewOf(tc.q)); diff != "" {
			t.Errorf("%s: view (-want +got):\n%s", tc.name, diff)
		}
	}
	bob := &switchboard.Query{Extra: map[string]any{switchboard.IdentityKey: &identity.Identity{Subject: "bob"}}}
	if _, err := m.GetPrompt(ctx, bob, &mcp.GetPromptParams{Name: "notes__summarize"}); err == nil {
		t.Error("bob got the prompt")
	}
	if _, err := m.ReadResource(ctx, bob, &mcp.ReadResourceParams{URI: "notes://today"}); err == nil {
		t.Error("bob read the resource")
	}
}

// readOnlyGreeter is greeter with its tool marked read-only.
func readOnlyGreeter() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "v1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	return server
}

func mustParse(t *testing.T, text string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("mcp.json", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestPoliciesSet: the filters of Policies decide with the rules in force
// at each decision: Set replaces them (a reload), a bad set keeps the old
// ones, and nil Policies or no rules allow everything.
func TestPoliciesSet(t *testing.T) {
	p, err := switchboard.NewPolicies([]config.PolicyRule{{Tools: []string{"hello__*"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, _, _ := p.Filters()
	allowed := func(name string) bool {
		ok, err := tools(t.Context(), switchboard.FilterContext{Server: "s", Name: name}, &mcp.Tool{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !allowed("hello__greet") || allowed("other__x") {
		t.Fatal("the first rules: want hello__* alone")
	}
	if err := p.Set([]config.PolicyRule{{Tools: []string{"other__*"}}}); err != nil {
		t.Fatal(err)
	}
	if allowed("hello__greet") || !allowed("other__x") {
		t.Error("after Set: want other__* alone")
	}
	if err := p.Set([]config.PolicyRule{{When: "identity.nope("}}); !errors.Is(err, config.ErrGatewayPolicy) {
		t.Errorf("Set of a bad rule: %v, want ErrGatewayPolicy", err)
	}
	if allowed("hello__greet") || !allowed("other__x") {
		t.Error("after a bad Set: want the rules before it")
	}
	if err := p.Set(nil); err != nil || !allowed("hello__greet") {
		t.Errorf("Set(nil): %v; want everything allowed", err)
	}
	var none *switchboard.Policies
	if f, _, _ := none.Filters(); f == nil {
		t.Error("nil Policies: no filter")
	} else if ok, _ := f(t.Context(), switchboard.FilterContext{Name: "x"}, &mcp.Tool{Name: "x"}); !ok {
		t.Error("nil Policies denied")
	}
}
