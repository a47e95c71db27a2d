package gateway

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// describedUpstreams are three servers: memory, which its config
// describes; files, whose instructions say what it is for; and math,
// which says nothing.
func describedUpstreams() (upstreams, []config.Server) {
	ups := upstreams{
		"memory": mcptest.NewServer(mcptest.Script{Instructions: "Ignored: the config says.", Tools: []mcptest.ToolSpec{{Name: "create_entities", Description: "Create entities in the knowledge graph"}}}),
		"files":  mcptest.NewServer(mcptest.Script{Instructions: "Files on the local disk.\nUse absolute paths.", Tools: []mcptest.ToolSpec{{Name: "read_file", Description: "Read a file"}}}),
		"math":   mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "add", Description: "Add two numbers"}}}),
	}
	memory := entry("memory", false)
	memory.Description = "Facts to remember  about people\nand things"
	return ups, []config.Server{memory, entry("files", false), entry("math", false)}
}

// searchToolsDescription returns the description of search_tools in cs's
// tools/list.
func searchToolsDescription(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == searchToolsName {
			return tool.Description
		}
	}
	t.Fatal("no search_tools listed")
	return ""
}

// TestSearchToolsNamesTheServers: search_tools' description names the
// servers, in the config's order, each with its config description, else
// its instructions' first sentence; a reload that changes a description
// or the servers changes it, and the sessions are told; one that changes
// neither tells no one.
func TestSearchToolsNamesTheServers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ups, servers := describedUpstreams()
		m, g := setup(t, ups, servers, searchOn)
		changed := make(chan struct{}, 10)
		cs := client(t, g, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
		want := searchToolsAbout + "\nThe servers:\n- memory: Facts to remember about people and things\n- files: Files on the local disk.\n- math"
		if got := searchToolsDescription(t, cs); got != want {
			t.Errorf("search_tools description\n%s\nwant\n%s", got, want)
		}
		reconfigure := func(servers []config.Server) {
			t.Helper()
			if _, err := m.Reconfigure(t.Context(), &config.Config{Servers: servers}); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}

		// Nothing that search_tools tells changed: it is not registered
		// again, which would tell every session list_changed (the go-sdk
		// tells them after a delay: see TestSDKTellsEverySessionOfAToolAddedAgain).
		registered := g.registry.exposure().search[0]
		revision := g.registry.exposure().revision
		reconfigure(servers)
		if e := g.registry.exposure(); e.revision == revision || e.search[0] != registered {
			t.Errorf("a reload that changed nothing: revision %d after %d, search_tools registered again: %v; want a new revision, the same registration",
				e.revision, revision, e.search[0] != registered)
		}
		// The description changed: the sessions are told, the server
		// keeps its connection.
		servers[2].Description = "Arithmetic"
		reconfigure(servers)
		<-changed
		want = searchToolsAbout + "\nThe servers:\n- memory: Facts to remember about people and things\n- files: Files on the local disk.\n- math: Arithmetic"
		if got := searchToolsDescription(t, cs); got != want {
			t.Errorf("search_tools description after a reload\n%s\nwant\n%s", got, want)
		}
		if n := ups["math"].Counts().Starts; n != 1 {
			t.Errorf("math was connected %d times, want 1: a description is no part of the connection", n)
		}
		// A server goes.
		reconfigure(servers[1:])
		want = searchToolsAbout + "\nThe servers:\n- files: Files on the local disk.\n- math: Arithmetic"
		if got := searchToolsDescription(t, cs); got != want {
			t.Errorf("search_tools description without memory\n%s\nwant\n%s", got, want)
		}
	})
}

// TestSearchToolsDescriptionIsBounded: search_tools names at most
// maxNamedServers servers, within maxServerListBytes, and counts the rest.
func TestSearchToolsDescriptionIsBounded(t *testing.T) {
	var servers []serverAbout
	for i := range 40 {
		servers = append(servers, serverAbout{fmt.Sprintf("s%02d", i), "Short"})
	}
	got := searchToolsDefinition(servers).Description
	if n := strings.Count(got, "\n- s"); n != maxNamedServers || !strings.HasSuffix(got, "\n- s29: Short\n- and 10 more") {
		t.Errorf("40 servers: %d named, description ends %q; want %d and the rest counted", n, got[len(got)-40:], maxNamedServers)
	}
	for i := range servers {
		servers[i].about = strings.Repeat("x", 150)
	}
	got = searchToolsDefinition(servers).Description
	if list := len(got) - len(searchToolsAbout); list > maxServerListBytes+len("\n- and 40 more") || !strings.Contains(got, " more") {
		t.Errorf("40 long lines: the list is %d bytes, want at most %d and the rest counted", list, maxServerListBytes)
	}
	if got := searchToolsDefinition(nil); got.Description != searchToolsAbout || got == searchToolsDef {
		t.Errorf("no servers: %q, want a copy of the plain definition", got.Description)
	}
	if searchToolsDef.Description != searchToolsAbout {
		t.Error("searchToolsDefinition changed the shared definition")
	}
}

// TestSearchToolsOfOneServer: with "server", search_tools ranks that
// server's tools alone, the session's list gaining them; with the query
// "*", it lists them all by name, up to a limit if given, and the list
// gains none; a server the client sees no tool of is bad input, which
// names the servers it may use, and not a hidden one.
func TestSearchToolsOfOneServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ups := searchUpstreams()
		ups["backup"] = mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "read_file", Description: "Read the contents of a file from the backup"}}})
		ups["vault"] = mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "read_file", Description: "Read a file of the vault"}}})
		servers := append(searchServers(), entry("backup", false), entry("vault", false))
		hide := func(_ context.Context, fc switchboard.FilterContext, _ *mcp.Tool) (bool, error) {
			return fc.Server != "vault", nil
		}
		for _, s := range ups {
			t.Cleanup(func() { s.Close() })
		}
		_, g := start(t, servers, &switchboard.Options{Dial: ups.dial, Filter: hide}, searchOn)
		cs := client(t, g, nil)

		if got := foundNames(search(t, cs, map[string]any{"query": "read the contents of a file", "server": "backup"})); !cmp.Equal(got, []string{"backup__read_file"}) {
			t.Errorf("search of backup found %v, want backup's read_file alone", got)
		}
		if got := foundNames(search(t, cs, map[string]any{"query": "file", "server": " files ", "limit": 2})); len(got) != 2 || !strings.HasPrefix(got[0], "files__") || !strings.HasPrefix(got[1], "files__") {
			t.Errorf("search of files with limit 2 found %v, want 2 of files'", got)
		}
		before := listNames(t, cs)
		all := []string{"files__delete_file", "files__read_file", "files__report", "files__secret", "files__write_file"}
		for _, args := range []map[string]any{{"query": "*", "server": "files"}, {"server": "files"}, {"query": " ", "server": "files"}} {
			found := search(t, cs, args)
			if diff := cmp.Diff(all, foundNames(found)); diff != "" {
				t.Errorf("%v (-want +got):\n%s", args, diff)
			}
			if len(found) > 0 && found[0].Score != 0 {
				t.Errorf("%v: a listed tool has score %v, want 0", args, found[0].Score)
			}
		}
		if diff := cmp.Diff(before, listNames(t, cs)); diff != "" {
			t.Errorf("a listing changed the session's list (-before +after):\n%s", diff)
		}
		res := call(t, cs, searchToolsName, map[string]any{"query": "*", "server": "files", "limit": 2})
		if got := mcptest.Text(res); !strings.HasPrefix(got, "files__delete_file — ") || !strings.Contains(got, "\nfiles__read_file — ") ||
			len(res.Content) != 2 || !strings.Contains(res.Content[1].(*mcp.TextContent).Text, "files has 3 more tools") {
			t.Errorf("a listing of 2 of files' 5 tools: %d contents, text %q; want 2 lines and a note of 3 more", len(res.Content), got)
		}
		for server, want := range map[string]string{
			"nope":  `search_tools: unknown server "nope": the servers with tools are "backup", "files", "math"`,
			"vault": `search_tools: unknown server "vault": the servers with tools are "backup", "files", "math"`,
		} {
			res := call(t, cs, searchToolsName, map[string]any{"query": "read a file", "server": server})
			if !res.IsError || mcptest.Text(res) != want {
				t.Errorf("server %s: %q (isError %v), want %q", server, mcptest.Text(res), res.IsError, want)
			}
		}
		for args, want := range map[string]string{
			`query "*" alone`: `search_tools: "query" has no word to search for: say in words what you want done, or give "server" and the query "*"`,
			"server 7":        `search_tools: "server" must be a string, not a JSON number`,
		} {
			a := map[string]any{"query": "*"}
			if args == "server 7" {
				a = map[string]any{"query": "file", "server": 7}
			}
			if res := call(t, cs, searchToolsName, a); !res.IsError || !strings.HasPrefix(mcptest.Text(res), want) {
				t.Errorf("%s: %q (isError %v), want %q", args, mcptest.Text(res), res.IsError, want)
			}
		}
	})
}

// TestSearchToolsNamesACachedServerAsConnected: a server that is down,
// shown from the tool cache, is named in search_tools' description with
// the first sentence of its instructions, which the cache kept, as when it
// was connected.
func TestSearchToolsNamesACachedServerAsConnected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		files := mcptest.NewServer(mcptest.Script{Instructions: "Files on the local disk.\nUse absolute paths.", Tools: []mcptest.ToolSpec{{Name: "read_file", Description: "Read a file"}}})
		defer files.Close()
		dir := t.TempDir()
		servers := []config.Server{entry("files", false)}
		first := switchboard.New(&config.Config{Servers: servers}, &switchboard.Options{Dial: upstreams{"files": files}.dial, CacheDir: dir, StartupGate: -1})
		if err := first.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		first.Close()

		// The next run: the server is down; its tools come from the cache.
		m := switchboard.New(&config.Config{Servers: servers}, &switchboard.Options{Dial: upstreams{}.dial, CacheDir: dir, StartupGate: switchboard.DefaultStartupGate})
		defer m.Close()
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		g := New(m, searchOn)
		defer g.Close()
		cs := client(t, g, nil)
		if st := m.Status()[0]; !st.Deferred || st.State == switchboard.StateConnected {
			t.Fatalf("status %v, deferred %v; want the server shown from the cache", st.State, st.Deferred)
		}
		want := searchToolsAbout + "\nThe servers:\n- files: Files on the local disk."
		if got := searchToolsDescription(t, cs); got != want {
			t.Errorf("search_tools description\n%s\nwant\n%s", got, want)
		}
	})
}
