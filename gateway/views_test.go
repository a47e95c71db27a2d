package gateway

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/identity"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestListChangedPerView: with policies, a session is told list_changed
// only when its own view changed: a change to a server it may not see
// spares it, and a reload of the rules (Gateway.FiltersChanged) tells
// the sessions whose rights changed, of each kind of list, and no other.
func TestListChangedPerView(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := func(name string) mcptest.Script {
			return mcptest.Script{
				Prompts:   []mcptest.PromptSpec{{Name: name + "_prompt"}},
				Resources: []mcptest.ResourceSpec{{URI: name + "://doc", Name: name + " doc", Text: name}},
			}
		}
		ups := upstreams{"mem": mcptest.NewServer(script("mem")), "ops": mcptest.NewServer(script("ops"))}
		policies, err := switchboard.NewPolicies(policyRules, nil)
		if err != nil {
			t.Fatal(err)
		}
		mopts := &switchboard.Options{Dial: ups.dial}
		mopts.Filter, mopts.PromptFilter, mopts.ResourceFilter = policies.Filters()
		for _, s := range ups {
			t.Cleanup(func() { s.Close() })
		}
		_, g := start(t, []config.Server{entry("mem", false), entry("ops", false)}, mopts, nil)

		type counts struct{ tools, prompts, resources int }
		var mu sync.Mutex
		got := map[string]*counts{}
		sessions := map[string]*mcp.ClientSession{}
		for _, group := range []string{"eng", "admin"} {
			c := &counts{}
			got[group] = c
			sessions[group] = connectIdentity(t, g, &identity.Identity{Subject: group + "-user", Groups: []string{group}}, &mcp.ClientOptions{
				ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { mu.Lock(); c.tools++; mu.Unlock() },
				PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { mu.Lock(); c.prompts++; mu.Unlock() },
				ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { mu.Lock(); c.resources++; mu.Unlock() },
			}, nil)
		}
		// Each session lists what it sees, as a client does after it is
		// told; what it then has is what it is compared with.
		relist := func() {
			t.Helper()
			mcptest.PassTime(time.Second) // past the go-sdk's debounce
			synctest.Wait()
			for group, cs := range sessions {
				if _, err := cs.ListTools(t.Context(), nil); err != nil {
					t.Fatalf("%s: tools/list: %v", group, err)
				}
				if _, err := cs.ListPrompts(t.Context(), nil); err != nil {
					t.Fatalf("%s: prompts/list: %v", group, err)
				}
				if _, err := cs.ListResources(t.Context(), nil); err != nil {
					t.Fatalf("%s: resources/list: %v", group, err)
				}
			}
			mu.Lock()
			for _, c := range got {
				*c = counts{}
			}
			mu.Unlock()
		}
		check := func(step string, want map[string]counts) {
			t.Helper()
			mcptest.PassTime(time.Second)
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			for group, c := range got {
				if *c != want[group] {
					t.Errorf("%s: the %s session got list_changed %+v, want %+v", step, group, *c, want[group])
				}
			}
			for _, c := range got {
				*c = counts{}
			}
		}

		relist()
		ups["ops"].SetTools([]mcptest.ToolSpec{{Name: "deploy"}})
		ups["ops"].SetPrompts([]mcptest.PromptSpec{{Name: "ops_prompt"}, {Name: "ops_runbook"}})
		check("ops, which eng may not see, changed", map[string]counts{"admin": {tools: 1, prompts: 1}})

		relist()
		ups["mem"].SetTools([]mcptest.ToolSpec{{Name: "recall"}})
		check("mem, which both see, changed", map[string]counts{"eng": {tools: 1}, "admin": {tools: 1}})

		relist()
		g.FiltersChanged()
		check("the rules did not change", nil)

		relist()
		if err := policies.Set(append(policyRules, config.PolicyRule{Servers: []string{"ops"}, When: "'eng' in identity.groups"})); err != nil {
			t.Fatal(err)
		}
		g.FiltersChanged()
		check("eng may now use ops too", map[string]counts{"eng": {tools: 1, prompts: 1, resources: 1}})

		// A change that the session did not list since is still told.
		ups["ops"].SetTools([]mcptest.ToolSpec{{Name: "rollback"}})
		check("ops changed again, not listed since", map[string]counts{"eng": {tools: 1}, "admin": {tools: 1}})
	})
}

// TestNoListChangedBeforeTheHandshake: a session whose client has not
// completed the handshake (serve --stdio with no client yet) is sent no
// list_changed, of a server's change or of a reload's rules.
func TestNoListChangedBeforeTheHandshake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(mcptest.Script{})
		_, g := setup(t, upstreams{"s": srv}, []config.Server{entry("s", false)}, nil)
		st, ct := mcp.NewInMemoryTransports()
		ss, err := g.Server().Connect(t.Context(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := ct.Connect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(); ss.Wait() })
		got := make(chan string, 10)
		go func() {
			for {
				msg, err := conn.Read(t.Context())
				if err != nil {
					return
				}
				if req, ok := msg.(*jsonrpc.Request); ok {
					got <- req.Method
				}
			}
		}()
		srv.SetTools([]mcptest.ToolSpec{{Name: "new"}})
		mcptest.PassTime(time.Second)
		synctest.Wait()
		g.FiltersChanged()
		mcptest.PassTime(time.Second)
		synctest.Wait()
		select {
		case method := <-got:
			t.Errorf("a session without a handshake was sent %s", method)
		default:
		}
	})
}
