package gateway

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestRegistryRegistersOnlyWhatChanged: a tool whose server changed its
// description is registered again, and its sessions told and shown the new
// definition; the tools beside it keep the definitions registered before,
// and a list with nothing changed leaves the exposure as it was.
func TestRegistryRegistersOnlyWhatChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "a", Description: "A"}, {Name: "b", Description: "B"}}})
		_, g := setup(t, upstreams{"s": srv}, []config.Server{entry("s", false)}, nil)
		changed := make(chan struct{}, 10)
		cs := client(t, g, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
		listNames(t, cs)
		before := g.registry.exposure()
		listNames(t, cs)
		if after := g.registry.exposure(); after != before {
			t.Errorf("a list with nothing changed made a new exposure (revision %d, was %d)", after.revision, before.revision)
		}
		oldA, _ := before.tool("s__a")
		oldB, _ := before.tool("s__b")

		srv.SetTools([]mcptest.ToolSpec{{Name: "a", Description: "A"}, {Name: "b", Description: "B, now better"}})
		<-changed
		descriptions := make(map[string]string)
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			descriptions[tool.Name] = tool.Description
		}
		if diff := cmp.Diff(map[string]string{"s__a": "A", "s__b": "B, now better"}, descriptions); diff != "" {
			t.Errorf("listed after the change (-want +got):\n%s", diff)
		}
		e := g.registry.exposure()
		newA, _ := e.tool("s__a")
		newB, _ := e.tool("s__b")
		if newA.def != oldA.def {
			t.Error("the unchanged tool s__a was registered again")
		}
		if newB.def == oldB.def {
			t.Error("the changed tool s__b kept its old definition")
		}
	})
}

// TestToolsListIsPaged: the gateway answers tools/list itself, a page of
// mcp.DefaultPageSize at a time as the go-sdk would, and a client that
// follows the cursors gets every tool once; a cursor it never gave is
// invalid params that says so.
func TestToolsListIsPaged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		specs := make([]mcptest.ToolSpec, mcp.DefaultPageSize+1)
		for i := range specs {
			specs[i] = mcptest.ToolSpec{Name: fmt.Sprintf("t%04d", i)}
		}
		_, g := setup(t, upstreams{"s": mcptest.NewServer(mcptest.Script{Tools: specs})}, []config.Server{entry("s", false)}, nil)
		cs := client(t, g, nil)
		first, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if first.CacheScope != "public" {
			t.Errorf("cacheScope %q, want public: every session sees the same list", first.CacheScope)
		}
		if len(first.Tools) != mcp.DefaultPageSize || first.NextCursor == "" {
			t.Fatalf("first page: %d tools, cursor %q; want %d and a cursor", len(first.Tools), first.NextCursor, mcp.DefaultPageSize)
		}
		second, err := cs.ListTools(t.Context(), &mcp.ListToolsParams{Cursor: first.NextCursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(second.Tools) != 1 || second.Tools[0].Name != "s__t1000" || second.NextCursor != "" {
			t.Errorf("second page: %d tools (%+v), cursor %q; want s__t1000 alone, and no cursor", len(second.Tools), second.Tools, second.NextCursor)
		}
		_, err = cs.ListTools(t.Context(), &mcp.ListToolsParams{Cursor: "not a cursor!"})
		wantRPCError(t, "a cursor the gateway never gave", err, jsonrpc.CodeInvalidParams, "is not one this gateway gave")
	})
}

// TestToolSearchFromTheConfig: a host that embeds the gateway gets the
// config's toolSearch with the manager, no option needed; Options.ToolSearch
// overrides it, as `serve --tool-search` does.
func TestToolSearchFromTheConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ups := searchUpstreams()
		for _, s := range ups {
			t.Cleanup(func() { s.Close() })
		}
		m := switchboard.New(&config.Config{Servers: searchServers(), ToolSearch: config.ToolSearch{Mode: config.ToolSearchOn}},
			&switchboard.Options{Dial: ups.dial, StartupGate: -1})
		t.Cleanup(func() { m.Close() })
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			opts *Options
			want []string
		}{
			{"the config's", nil, []string{"search_tools", "call_tool", "math__add"}},
			{"overridden", &Options{ToolSearch: &config.ToolSearch{}}, []string{"files__delete_file", "files__read_file", "files__report", "files__secret", "files__write_file", "math__add"}},
		} {
			g := New(m, tc.opts)
			if diff := cmp.Diff(tc.want, listNames(t, client(t, g, nil))); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.name, diff)
			}
			t.Cleanup(func() { g.Close() })
		}
	})
}

// TestListWaitsForASyncInProgress: a session's tools/list made while the
// registry registers a change waits for it, and gets the new exposure: the
// list_changed that the go-sdk sends meanwhile, which the session is then
// spared, would otherwise leave it with the old list.
func TestListWaitsForASyncInProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, g := setup(t, searchUpstreams(), searchServers(), searchOn)
		cs := client(t, g, nil)
		listNames(t, cs)
		var st *session
		for ss := range g.Server().Sessions() {
			st = g.sessions.of(ss)
		}
		r := g.registry
		r.mu.Lock() // a sync, registering a change
		listed, started := make(chan *exposure, 1), make(chan struct{})
		go func() {
			close(started)
			_, e := st.list(r)
			listed <- e
		}()
		<-started
		next := *r.exposure()
		next.revision++
		r.cur.Store(&next)
		r.mu.Unlock()
		if e := <-listed; e != &next {
			t.Errorf("the list made during the sync got revision %d, want the sync's %d", e.revision, next.revision)
		}
	})
}
