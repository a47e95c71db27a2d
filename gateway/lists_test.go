//lint:file-ignore SA1019 The gateway forwards logging, and advertises it.

package gateway

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestEverythingRoutedToItsOwner: prompts, resources, templates and
// completions pass through, each to the server that owns it; the handshake
// advertises what the servers offer, no more, and their instructions,
// labelled by server; a tool's definition keeps all but its name.
func TestEverythingRoutedToItsOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := mcptest.NewServer(mcptest.Script{
			Instructions: "Use a for letters.",
			Tools:        []mcptest.ToolSpec{{Name: "look", Description: "looks", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "Look"}}},
			Prompts:      []mcptest.PromptSpec{{Name: "greet", Arguments: []string{"who"}}},
			Resources:    []mcptest.ResourceSpec{{URI: "mem://a", Name: "a", Text: "from a"}},
			Templates:    []mcptest.TemplateSpec{{URITemplate: "mem://t/{id}", Name: "t"}},
		})
		b := mcptest.NewServer(mcptest.Script{Instructions: "Use b for numbers."})
		_, g := setup(t, upstreams{"a": a, "b": b}, []config.Server{entry("a", false), entry("b", false)}, nil)
		cs := client(t, g, nil)
		ctx := t.Context()

		init := cs.InitializeResult()
		if want := "## a\nUse a for letters.\n\n## b\nUse b for numbers."; init.Instructions != want {
			t.Errorf("instructions %q, want %q", init.Instructions, want)
		}
		caps := init.Capabilities
		if caps.Prompts == nil || caps.Resources == nil || !caps.Resources.Subscribe || caps.Completions == nil || caps.Logging == nil {
			t.Errorf("capabilities %+v: want prompts, resources with subscribe, completions and logging", caps)
		}

		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var look *mcp.Tool
		for _, tool := range tools.Tools {
			if tool.Name == "a__look" {
				look = tool
			}
		}
		if look == nil || look.Description != "looks" || look.Annotations == nil || !look.Annotations.ReadOnlyHint || look.Annotations.Title != "Look" {
			t.Errorf("a__look = %+v, want the server's definition", look)
		}

		prompts, err := cs.ListPrompts(ctx, nil)
		if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "a__greet" {
			t.Fatalf("prompts/list = %v, %v; want a__greet", prompts, err)
		}
		if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "a__greet", Arguments: map[string]string{"who": "x"}}); err != nil {
			t.Errorf("prompts/get: %v", err)
		}
		resources, err := cs.ListResources(ctx, nil)
		if err != nil || len(resources.Resources) != 1 || resources.Resources[0].URI != "mem://a" {
			t.Errorf("resources/list = %v, %v; want mem://a", resources, err)
		}
		templates, err := cs.ListResourceTemplates(ctx, nil)
		if err != nil || len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate != "mem://t/{id}" {
			t.Errorf("resources/templates/list = %v, %v", templates, err)
		}
		for uri, want := range map[string]string{"mem://a": "from a", "mem://t/7": "template t"} {
			res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != want {
				t.Errorf("resources/read %s = %v, %v; want %q", uri, res, err, want)
			}
		}
		for _, tc := range []struct {
			ref  *mcp.CompleteReference
			want string
		}{
			{&mcp.CompleteReference{Type: "ref/prompt", Name: "a__greet"}, "greet/who=x"},
			{&mcp.CompleteReference{Type: "ref/resource", URI: "mem://t/{id}"}, "mem://t/{id}/who=x"},
		} {
			res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: tc.ref, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "x"}})
			if err != nil {
				t.Errorf("complete %+v: %v", tc.ref, err)
				continue
			}
			if diff := cmp.Diff([]string{tc.want}, res.Completion.Values); diff != "" {
				t.Errorf("complete %+v (-want +got):\n%s", tc.ref, diff)
			}
		}
	})
}

// TestCapabilitiesFollowTheServers: a gateway whose servers offer only
// tools advertises no prompts, resources or completions.
func TestCapabilitiesFollowTheServers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, g := setup(t, upstreams{"b": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("b", false)}, nil)
		caps := client(t, g, nil).InitializeResult().Capabilities
		if caps.Tools == nil || caps.Prompts != nil || caps.Resources != nil || caps.Completions != nil {
			t.Errorf("capabilities %+v: want tools only (and logging)", caps)
		}
	})
}

// TestListChangedOnlyWhenTheViewChanged: a server's list_changed reaches
// every client session, for tools, prompts and resources, only when what
// the gateway exposes changed.
func TestListChangedOnlyWhenTheViewChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(mcptest.Script{
			Prompts:   []mcptest.PromptSpec{{Name: "p"}},
			Resources: []mcptest.ResourceSpec{{URI: "mem://a", Name: "a"}},
		})
		_, g := setup(t, upstreams{"s": srv}, []config.Server{entry("s", false)}, nil)
		type counts struct{ tools, prompts, resources int }
		var mu sync.Mutex
		got := make([]counts, 2)
		for i := range got {
			client(t, g, &mcp.ClientOptions{
				ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { mu.Lock(); got[i].tools++; mu.Unlock() },
				PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { mu.Lock(); got[i].prompts++; mu.Unlock() },
				ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { mu.Lock(); got[i].resources++; mu.Unlock() },
			})
		}
		settle := func() {
			// Fake time, in the bubble: past the go-sdk's debounce of
			// list_changed, and the gateway's of refreshes.
			mcptest.PassTime(time.Second)
			synctest.Wait()
		}
		// The go-sdk tells of the gateway's first registrations, debounced:
		// the sessions connected meanwhile hear of them. Count from here.
		settle()
		mu.Lock()
		base := slices.Clone(got)
		mu.Unlock()
		check := func(step string, want counts) {
			t.Helper()
			settle()
			mu.Lock()
			defer mu.Unlock()
			for i, c := range got {
				c.tools, c.prompts, c.resources = c.tools-base[i].tools, c.prompts-base[i].prompts, c.resources-base[i].resources
				if c != want {
					t.Errorf("%s: session %d got list_changed %+v more, want %+v", step, i, c, want)
				}
			}
		}
		srv.NotifyToolsChanged() // the same tools: nothing to tell
		check("a list_changed with nothing changed", counts{})
		srv.SetPrompts([]mcptest.PromptSpec{{Name: "p"}, {Name: "q"}})
		check("a prompt added", counts{prompts: 1})
		srv.SetResources([]mcptest.ResourceSpec{{URI: "mem://b", Name: "b"}})
		check("resources replaced", counts{prompts: 1, resources: 1})
		srv.SetTools([]mcptest.ToolSpec{{Name: "new"}})
		check("tools replaced", counts{tools: 1, prompts: 1, resources: 1})
	})
}
