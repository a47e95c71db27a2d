package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// searchUpstreams are a files server, whose tools are found by search, and
// a math server, marked alwaysLoad in searchServers.
func searchUpstreams() upstreams {
	return upstreams{
		"files": mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{
			{Name: "read_file", Description: "Read the contents of a file from disk", InputSchema: map[string]any{
				"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"}}},
			{Name: "write_file", Description: "Write text to a file on disk"},
			{Name: "secret", Description: "Read the secret keys of a file vault"},
			{Name: "report", Description: "Report the progress of a long file copy", Behavior: mcptest.Progress},
			{Name: "delete_file", Description: "Delete a file from disk"},
		}}),
		"math": mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "add", Description: "Add two numbers", Behavior: mcptest.Add}}}),
	}
}

func searchServers() []config.Server {
	math := entry("math", false)
	math.AlwaysLoad = true
	return []config.Server{entry("files", false), math}
}

var searchOn = &Options{ToolSearch: &config.ToolSearch{Mode: config.ToolSearchOn}}

// call calls tool with args, failing the test on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// search calls search_tools and returns the tools it found.
func search(t *testing.T, cs *mcp.ClientSession, args map[string]any) []foundTool {
	t.Helper()
	res := call(t, cs, searchToolsName, args)
	if res.IsError {
		t.Fatalf("search_tools %v: error %q", args, mcptest.Text(res))
	}
	var structured struct{ Tools []foundTool }
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &structured); err != nil {
		t.Fatal(err)
	}
	// The text is a line per tool, in the same order, starting with its name.
	lines := strings.Split(mcptest.Text(res), "\n")
	if len(structured.Tools) == 0 {
		lines = nil
	}
	if len(lines) != len(structured.Tools) {
		t.Fatalf("search_tools: %d lines of text for %d tools: %q", len(lines), len(structured.Tools), mcptest.Text(res))
	}
	for i, tool := range structured.Tools {
		if !strings.HasPrefix(lines[i], tool.Name+" — ") && lines[i] != tool.Name {
			t.Errorf("search_tools: line %d %q, want tool %s", i, lines[i], tool.Name)
		}
	}
	return structured.Tools
}

func foundNames(tools []foundTool) []string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return names
}

// TestToolSearchLists: with search on, tools/list holds search_tools and
// call_tool, with design §2's schemas, and the alwaysLoad server's tools;
// the instructions say how to use them.
func TestToolSearchLists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, g := setup(t, searchUpstreams(), searchServers(), searchOn)
		cs := client(t, g, nil)
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		schemas := make(map[string]any)
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			schemas[tool.Name] = tool.InputSchema
		}
		if diff := cmp.Diff([]string{"search_tools", "call_tool", "math__add"}, names); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		wantSchemas := map[string]any{
			"search_tools": map[string]any{"type": "object", "required": []any{"query"}, "properties": map[string]any{
				"query":  map[string]any{"type": "string", "minLength": 1.0, "description": `What you want done, in words; with "server", "*" lists all its tools`},
				"limit":  map[string]any{"type": "integer", "minimum": 1.0, "maximum": 50.0, "default": 5.0, "description": "How many tools to return"},
				"server": map[string]any{"type": "string", "description": "Search only this server's tools"},
			}},
			"call_tool": map[string]any{"type": "object", "required": []any{"name"}, "properties": map[string]any{
				"name":      map[string]any{"type": "string", "description": "The tool's name, as search_tools gave it"},
				"arguments": map[string]any{"type": "object", "description": "The tool's arguments, as its input schema asks"},
			}},
		}
		for name, want := range wantSchemas {
			if diff := cmp.Diff(want, schemas[name]); diff != "" {
				t.Errorf("%s input schema (-want +got):\n%s", name, diff)
			}
		}
		if text := cs.InitializeResult().Instructions; !strings.Contains(text, "search_tools") || !strings.Contains(text, "call_tool") {
			t.Errorf("instructions %q do not tell of search_tools and call_tool", text)
		}
		if res := call(t, cs, "math__add", map[string]any{"a": 1, "b": 2}); mcptest.Text(res) != "3" {
			t.Errorf("math__add = %q, want 3", mcptest.Text(res))
		}
	})
}

// TestToolSearchFindsAndCalls: search_tools ranks the tools by the request,
// and call_tool calls the one found, with its result unchanged.
func TestToolSearchFindsAndCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ups := searchUpstreams()
		_, g := setup(t, ups, searchServers(), searchOn)
		cs := client(t, g, nil)
		found := search(t, cs, map[string]any{"query": "read the contents of a file", "limit": 2})
		if len(found) != 2 || found[0].Name != "files__read_file" || found[0].Server != "files" || found[0].Score <= 0 ||
			found[0].Description != "Read the contents of a file from disk." || found[0].InputSchema == nil || found[1].Score > found[0].Score {
			t.Fatalf("found %+v, want files__read_file first of 2, with its server, description, schema and score", found)
		}
		if got := len(search(t, cs, map[string]any{"query": "file"})); got != switchboard.DefaultSearchLimit {
			t.Errorf("search_tools without a limit found %d, want %d", got, switchboard.DefaultSearchLimit)
		}
		res := call(t, cs, callToolName, map[string]any{"name": "files__read_file", "arguments": map[string]any{"path": "/a"}})
		if res.IsError || mcptest.Text(res) != `{"path":"/a"}` {
			t.Errorf("call_tool files__read_file = %q (isError %v), want the echo", mcptest.Text(res), res.IsError)
		}
		if got := ups["files"].Counts().ByTool["read_file"]; got != 1 {
			t.Errorf("read_file ran %d times, want 1", got)
		}
		// The same validation as a direct call: a required argument.
		direct, derr := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "files__read_file", Arguments: map[string]any{}})
		through, terr := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": "files__read_file", "arguments": map[string]any{}}})
		if fmt.Sprint(derr) != fmt.Sprint(terr) || derr == nil && (mcptest.Text(direct) != mcptest.Text(through) || direct.IsError != through.IsError) {
			t.Errorf("missing argument: call_tool gave %v %q, a direct call %v %q", terr, text(through), derr, text(direct))
		}
		if got := ups["files"].Counts().ByTool["read_file"]; got != 1 {
			t.Errorf("read_file ran %d times, want 1: a call without its required argument is refused", got)
		}
	})
}

func text(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	return mcptest.Text(res)
}

// TestCallToolProgressAndCancel: call_tool passes its progress token on to
// the tool's server, and its cancellation.
func TestCallToolProgressAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ups := searchUpstreams()
		_, g := setup(t, ups, searchServers(), searchOn)
		progress := make(chan *mcp.ProgressNotificationParams, 10)
		cs := client(t, g, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params
		}})
		ctx, cancel := context.WithCancel(t.Context())
		params := &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": "files__report", "arguments": map[string]any{"steps": 1, "hang": true}}}
		params.SetProgressToken("tok")
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, params)
			done <- err
		}()
		if p := <-progress; p.ProgressToken != "tok" || p.Progress != 1 {
			t.Errorf("progress: token %v, progress %v; want tok, 1", p.ProgressToken, p.Progress)
		}
		cancel()
		if err := <-done; err == nil {
			t.Error("a cancelled call_tool returned no error")
		}
		synctest.Wait()
		if got := ups["files"].Counts().Cancelled; got != 1 {
			t.Errorf("the server saw %d cancellations, want 1", got)
		}
	})
}

// TestFoundToolsJoinTheSessionsList: the tools a session found join its own
// tools/list, with list_changed, and no other session's; a direct call of
// one works.
func TestFoundToolsJoinTheSessionsList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, g := setup(t, searchUpstreams(), searchServers(), searchOn)
		changed := [2]chan struct{}{make(chan struct{}, 10), make(chan struct{}, 10)}
		var cs [2]*mcp.ClientSession
		for i := range cs {
			cs[i] = client(t, g, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed[i] <- struct{}{} }})
		}
		for _, cs := range cs {
			listNames(t, cs) // as a client does first
		}
		search(t, cs[0], map[string]any{"query": "write text to a file", "limit": 1})
		<-changed[0]
		synctest.Wait()
		if len(changed[1]) != 0 {
			t.Error("the other session was told list_changed")
		}
		if diff := cmp.Diff([]string{"search_tools", "call_tool", "math__add", "files__write_file"}, listNames(t, cs[0])); diff != "" {
			t.Errorf("the searching session's tools (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"search_tools", "call_tool", "math__add"}, listNames(t, cs[1])); diff != "" {
			t.Errorf("the other session's tools (-want +got):\n%s", diff)
		}
		if res := call(t, cs[0], "files__write_file", map[string]any{"text": "hi"}); res.IsError || mcptest.Text(res) != `{"text":"hi"}` {
			t.Errorf("files__write_file called directly = %q (isError %v)", mcptest.Text(res), res.IsError)
		}
		// Found again: the list does not change, and no one is told.
		search(t, cs[0], map[string]any{"query": "write text to a file", "limit": 1})
		synctest.Wait()
		if len(changed[0])+len(changed[1]) != 0 {
			t.Error("a session was told list_changed, with no change")
		}
	})
}

// TestFoundToolsAreCapped: a session's list holds at most
// MaxFoundPerSession tools it found, the most recent.
func TestFoundToolsAreCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tools []mcptest.ToolSpec
		for i := range MaxFoundPerSession + 8 {
			tools = append(tools, mcptest.ToolSpec{Name: fmt.Sprintf("widget_%02d", i), Description: "Polish a widget"})
		}
		ups := upstreams{"w": mcptest.NewServer(mcptest.Script{Tools: tools})}
		_, g := setup(t, ups, []config.Server{entry("w", false)}, searchOn)
		cs := client(t, g, nil)
		all := search(t, cs, map[string]any{"query": "polish widget", "limit": 50})
		if len(all) != len(tools) {
			t.Fatalf("found %d, want %d", len(all), len(tools))
		}
		extra := len(all) - MaxFoundPerSession
		want := append([]string{"search_tools", "call_tool"}, foundNames(all[extra:])...)
		if diff := cmp.Diff(want, listNames(t, cs)); diff != "" {
			t.Errorf("after a search that found %d (-want +got):\n%s", len(all), diff)
		}
		// Found again, the best is the most recent: the oldest goes.
		search(t, cs, map[string]any{"query": "polish widget", "limit": 1})
		want = append([]string{"search_tools", "call_tool"}, foundNames(all[extra+1:])...)
		want = append(want, all[0].Name)
		if diff := cmp.Diff(want, listNames(t, cs)); diff != "" {
			t.Errorf("after the best was found again (-want +got):\n%s", diff)
		}
	})
}

// TestToolSearchAuto: auto:N turns search on while more than N tools are
// exposed, and off again; each switch is logged, and /status tells.
func TestToolSearchAuto(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		three := []mcptest.ToolSpec{{Name: "a"}, {Name: "b"}, {Name: "c"}}
		ups := upstreams{"s": mcptest.NewServer(mcptest.Script{Tools: three})}
		logs := &syncBuffer{written: make(chan struct{}, 1)}
		auto := config.ToolSearch{Mode: config.ToolSearchAuto, Threshold: 3}
		_, g := setup(t, ups, []config.Server{entry("s", false)}, &Options{ToolSearch: &auto, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		changed := make(chan struct{}, 10)
		cs := client(t, g, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
		if diff := cmp.Diff([]string{"s__a", "s__b", "s__c"}, listNames(t, cs)); diff != "" {
			t.Errorf("3 tools (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(ToolSearchRow{Setting: "auto:3", On: false, Tools: 3}, g.endpoints.statusReport().ToolSearch); diff != "" {
			t.Errorf("/status with 3 tools (-want +got):\n%s", diff)
		}
		ups["s"].SetTools(append(three, mcptest.ToolSpec{Name: "d"}))
		<-changed
		if diff := cmp.Diff([]string{"search_tools", "call_tool"}, listNames(t, cs)); diff != "" {
			t.Errorf("4 tools (-want +got):\n%s", diff)
		}
		logs.waitFor(`msg="tool search on: tools are behind search_tools" setting=auto:3 tools=4`)
		if diff := cmp.Diff(ToolSearchRow{Setting: "auto:3", On: true, Tools: 4}, g.endpoints.statusReport().ToolSearch); diff != "" {
			t.Errorf("/status with 4 tools (-want +got):\n%s", diff)
		}
		ups["s"].SetTools(three)
		<-changed
		if diff := cmp.Diff([]string{"s__a", "s__b", "s__c"}, listNames(t, cs)); diff != "" {
			t.Errorf("3 tools again (-want +got):\n%s", diff)
		}
		logs.waitFor(`msg="tool search off: every tool is listed" setting=auto:3 tools=3`)
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: searchToolsName, Arguments: map[string]any{"query": "a"}}); err == nil {
			t.Error("search_tools answered with search off")
		}
	})
}

// TestToolSearchBadInput: every input search_tools and call_tool cannot
// take gets an error result naming what is wrong, and the session goes on.
func TestToolSearchBadInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, g := setup(t, searchUpstreams(), searchServers(), searchOn)
		cs := client(t, g, nil)
		for _, tc := range []struct {
			tool string
			args any
			want string
		}{
			{searchToolsName, map[string]any{}, `search_tools: "query" is required`},
			{searchToolsName, map[string]any{"query": ""}, `search_tools: "query" has no word`},
			{searchToolsName, map[string]any{"query": "   \t"}, `search_tools: "query" has no word`},
			{searchToolsName, map[string]any{"query": "the of and"}, `search_tools: "query" has no word`},
			{searchToolsName, map[string]any{"query": 7}, `search_tools: "query" must be a string, not a JSON number`},
			{searchToolsName, map[string]any{"query": "file", "limit": 0}, `search_tools: "limit" is 0: want a whole number from 1 to 50`},
			{searchToolsName, map[string]any{"query": "file", "limit": -1}, `search_tools: "limit" is -1: want a whole number from 1 to 50`},
			{searchToolsName, map[string]any{"query": "file", "limit": 10000}, `search_tools: "limit" is 10000: want a whole number from 1 to 50`},
			{searchToolsName, map[string]any{"query": "file", "limit": 51}, `search_tools: "limit" is 51: want a whole number from 1 to 50`},
			{searchToolsName, map[string]any{"query": "file", "limit": 2.5}, `search_tools: "limit" is 2.5: want a whole number`},
			{searchToolsName, map[string]any{"query": "file", "limit": "three"}, `search_tools: "limit" is "three": want a whole number`},
			{searchToolsName, map[string]any{"query": "file", "limit": "2.5"}, `search_tools: "limit" is "2.5": want a whole number`},
			{searchToolsName, map[string]any{"query": "file", "limit": "0"}, `search_tools: "limit" is "0": want a whole number from 1 to 50`},
			{searchToolsName, map[string]any{"query": "file", "limit": ""}, `search_tools: "limit" is "": want a whole number`},
			{searchToolsName, map[string]any{"query": "file", "limit": []any{3}}, `search_tools: "limit" is [3]: want a whole number`},
			{callToolName, map[string]any{}, `call_tool: "name" is required`},
			{callToolName, map[string]any{"name": " "}, `call_tool: "name" is required`},
			{callToolName, map[string]any{"name": 7}, `call_tool: "name" must be a string, not a JSON number`},
			{callToolName, map[string]any{"name": "files__nope"}, `call_tool: unknown tool "files__nope": search_tools finds tools`},
			{callToolName, map[string]any{"name": "nope"}, `call_tool: unknown tool "nope": search_tools finds tools`},
			{callToolName, map[string]any{"name": "files__read_file", "arguments": []any{1}}, `call_tool: "arguments" of tool "files__read_file" must be a JSON object`},
			{callToolName, map[string]any{"name": "files__read_file", "arguments": "path=/a"}, `call_tool: "arguments" of tool "files__read_file" must be a JSON object`},
			{callToolName, map[string]any{"name": "files__read_file", "arguments": `["/a"]`}, `call_tool: "arguments" of tool "files__read_file" must be a JSON object`},
			{callToolName, map[string]any{"name": "files__read_file", "arguments": `{"path": `}, `call_tool: "arguments" of tool "files__read_file" must be a JSON object`},
			{callToolName, map[string]any{"name": "files__read_file", "arguments": "null"}, `call_tool: "arguments" of tool "files__read_file" must be a JSON object`},
			{callToolName, map[string]any{"name": "files__read_file", "arguments": ""}, `call_tool: "arguments" of tool "files__read_file" must be a JSON object`},
		} {
			res := call(t, cs, tc.tool, tc.args)
			if !res.IsError || !strings.HasPrefix(mcptest.Text(res), tc.want) {
				t.Errorf("%s %v = %q (isError %v), want an error starting %q", tc.tool, tc.args, mcptest.Text(res), res.IsError, tc.want)
			}
		}
		if found := search(t, cs, map[string]any{"query": "add numbers"}); len(found) == 0 || found[0].Name != "math__add" {
			t.Errorf("the session after bad input: found %v", foundNames(found))
		}
	})
}

// TestToolSearchHidesFilteredTools: a tool that a filter hides is neither
// found nor called through call_tool, nor suggested for a name like its:
// call_tool refuses it, and any name, for a caller who does not see
// everything, as not permitted, naming no other tool.
func TestToolSearchHidesFilteredTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ups := searchUpstreams()
		for _, s := range ups {
			t.Cleanup(func() { s.Close() })
		}
		servers := searchServers()
		servers[0].Tools.Deny = []string{"write_file"}
		hide := func(_ context.Context, _ switchboard.FilterContext, tool *mcp.Tool) (bool, error) {
			return tool.Name != "secret", nil
		}
		_, g := start(t, servers, &switchboard.Options{Dial: ups.dial, Filter: hide}, searchOn)
		cs := client(t, g, nil)
		for _, query := range []string{"read the secret keys of a file vault", "write text to a file"} {
			found := foundNames(search(t, cs, map[string]any{"query": query, "limit": 50}))
			if slices.Contains(found, "files__secret") || slices.Contains(found, "files__write_file") {
				t.Errorf("search %q found a hidden tool: %v", query, found)
			}
		}
		for _, name := range []string{"files__secret", "files__write_file", "secret", "write_file", "Files_Secret"} {
			_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": name}})
			if text := fmt.Sprint(err); !strings.Contains(text, fmt.Sprintf("tool %q: not permitted", name)) ||
				strings.Contains(text, "files__secret") && name != "files__secret" || strings.Contains(text, "files__write_file") && name != "files__write_file" {
				t.Errorf("call_tool %s: error %q, want not permitted, and no hidden tool suggested", name, text)
			}
		}
		if n := ups["files"].Counts().ByTool["secret"] + ups["files"].Counts().ByTool["write_file"]; n != 0 {
			t.Errorf("hidden tools ran %d times", n)
		}
	})
}

// TestToolSearchOffAndBack: with search off, nothing is added; turned on
// and off again by the config, which the manager's Reconfigure hands the
// gateway (as a reload does), the lists follow.
func TestToolSearchOffAndBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, g := setup(t, searchUpstreams(), searchServers(), nil)
		reconfigure := func(ts config.ToolSearch) {
			t.Helper()
			if _, err := m.Reconfigure(t.Context(), &config.Config{Servers: searchServers(), ToolSearch: ts}); err != nil {
				t.Fatal(err)
			}
		}
		changed := make(chan struct{}, 10)
		cs := client(t, g, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
		all := []string{"files__delete_file", "files__read_file", "files__report", "files__secret", "files__write_file", "math__add"}
		if diff := cmp.Diff(all, listNames(t, cs)); diff != "" {
			t.Errorf("off (-want +got):\n%s", diff)
		}
		if strings.Contains(cs.InitializeResult().Instructions, "search_tools") {
			t.Error("the instructions tell of search_tools with search off")
		}
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: searchToolsName, Arguments: map[string]any{"query": "file"}})
		wantRPCError(t, "search_tools with search off", err, jsonrpc.CodeInvalidParams, `unknown tool "search_tools"`)

		reconfigure(config.ToolSearch{Mode: config.ToolSearchOn})
		<-changed
		if diff := cmp.Diff([]string{"search_tools", "call_tool", "math__add"}, listNames(t, cs)); diff != "" {
			t.Errorf("on (-want +got):\n%s", diff)
		}
		reconfigure(config.ToolSearch{})
		<-changed
		if diff := cmp.Diff(all, listNames(t, cs)); diff != "" {
			t.Errorf("off again (-want +got):\n%s", diff)
		}
	})
}

// TestToolSearchFollowsAlwaysLoad: a reload that unmarks a server
// alwaysLoad (the manager reconfigured, as serve does) takes its tools out
// of the list, and the sessions are told.
func TestToolSearchFollowsAlwaysLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, g := setup(t, searchUpstreams(), searchServers(), searchOn)
		changed := make(chan struct{}, 10)
		cs := client(t, g, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
		if diff := cmp.Diff([]string{"search_tools", "call_tool", "math__add"}, listNames(t, cs)); diff != "" {
			t.Errorf("before (-want +got):\n%s", diff)
		}
		servers := searchServers()
		servers[1].AlwaysLoad = false
		if _, err := m.Reconfigure(t.Context(), &config.Config{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		<-changed
		if diff := cmp.Diff([]string{"search_tools", "call_tool"}, listNames(t, cs)); diff != "" {
			t.Errorf("after (-want +got):\n%s", diff)
		}
	})
}

// TestToolSearchNameClash: a server's own tool called search_tools gives
// way to tool search's while it is on, and call_tool still reaches it.
func TestToolSearchNameClash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ups := upstreams{"s": mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "search_tools", Description: "Search the web"}}})}
		srv := entry("s", false)
		srv.Prefix = new(string)
		_, g := setup(t, ups, []config.Server{srv}, searchOn)
		cs := client(t, g, nil)
		if diff := cmp.Diff([]string{"search_tools", "call_tool"}, listNames(t, cs)); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		if found := search(t, cs, map[string]any{"query": "search the web"}); len(found) != 1 || found[0].Server != "s" {
			t.Errorf("found %+v, want the server's search_tools", found)
		}
		res := call(t, cs, callToolName, map[string]any{"name": "search_tools", "arguments": map[string]any{"q": "go"}})
		if res.IsError || mcptest.Text(res) != `{"q":"go"}` {
			t.Errorf("call_tool search_tools = %q (isError %v), want the server's echo", mcptest.Text(res), res.IsError)
		}
	})
}

// TestToolSearchNameClashEndsWithSearch: a server's own search_tools,
// left out while tool search is on, is listed and called again once a
// reload turns search off.
func TestToolSearchNameClashEndsWithSearch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ups := upstreams{"s": mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "search_tools"}, {Name: "other"}}})}
		srv := entry("s", false)
		srv.Prefix = new(string)
		m, g := setup(t, ups, []config.Server{srv}, nil)
		cs := client(t, g, nil)
		for _, step := range []struct {
			mode config.ToolSearchMode
			want []string
		}{
			{config.ToolSearchOff, []string{"other", "search_tools"}},
			{config.ToolSearchOn, []string{"search_tools", "call_tool"}},
			{config.ToolSearchOff, []string{"other", "search_tools"}},
		} {
			if _, err := m.Reconfigure(t.Context(), &config.Config{Servers: []config.Server{srv}, ToolSearch: config.ToolSearch{Mode: step.mode}}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(step.want, listNames(t, cs)); diff != "" {
				t.Errorf("search %v (-want +got):\n%s", step.mode, diff)
			}
		}
		if res := call(t, cs, "search_tools", map[string]any{"q": "go"}); res.IsError || mcptest.Text(res) != `{"q":"go"}` {
			t.Errorf("search_tools with search off again = %q (isError %v), want the server's echo", mcptest.Text(res), res.IsError)
		}
	})
}

// TestSearchToolsTakesAPastedRequest: a query over 1 KiB, a model's whole
// pasted request, is searched by its first words, and the result says so.
func TestSearchToolsTakesAPastedRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, g := setup(t, searchUpstreams(), searchServers(), searchOn)
		cs := client(t, g, nil)
		pasted := "read the contents of a file " + strings.Repeat("and then ", 12<<10) + "add two numbers"
		res := call(t, cs, searchToolsName, map[string]any{"query": pasted, "limit": 1})
		var found struct{ Tools []foundTool }
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, &found); err != nil || res.IsError || len(found.Tools) != 1 || found.Tools[0].Name != "files__read_file" {
			t.Errorf("search_tools with a %d-byte query = %q (isError %v); want files__read_file, found by its first words", len(pasted), mcptest.Text(res), res.IsError)
		}
		if n := len(res.Content); n != 2 || !strings.Contains(mcptest.Text(res), fmt.Sprintf("The query is %d bytes long: only its first ", len(pasted))) {
			t.Errorf("search_tools with a long query: %d contents, text %q; want a note that the query was cut", n, mcptest.Text(res))
		}
		if res := call(t, cs, searchToolsName, map[string]any{"query": "read a file"}); len(res.Content) != 1 {
			t.Errorf("search_tools with a short query: %d contents, want 1: no note", len(res.Content))
		}
	})
}

// TestToolSearchTakesSloppyInput: what models send that is not quite what
// the schemas ask is taken as meant: a limit as a string or as 3.0, a
// tool's arguments as a string that holds a JSON object.
func TestToolSearchTakesSloppyInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, g := setup(t, searchUpstreams(), searchServers(), searchOn)
		cs := client(t, g, nil)
		for _, limit := range []any{"3", " 3 ", json.RawMessage("3.0"), "3.0"} {
			if found := search(t, cs, map[string]any{"query": "file", "limit": limit}); len(found) != 3 {
				t.Errorf("search_tools with limit %s found %d, want 3", limit, len(found))
			}
		}
		for _, arguments := range []any{`{"path": "/a"}`, " {\"path\":\"/a\"}\n", map[string]any{"path": "/a"}} {
			res := call(t, cs, callToolName, map[string]any{"name": "files__read_file", "arguments": arguments})
			if res.IsError || mcptest.Text(res) != `{"path":"/a"}` {
				t.Errorf("call_tool with arguments %#v = %q (isError %v), want the echo of the object", arguments, mcptest.Text(res), res.IsError)
			}
		}
		for _, args := range []map[string]any{{"name": "files__write_file", "arguments": nil}, {"name": "files__write_file"}} {
			if res := call(t, cs, callToolName, args); res.IsError || mcptest.Text(res) != `{}` {
				t.Errorf("call_tool %v = %q (isError %v), want the echo of no arguments", args, mcptest.Text(res), res.IsError)
			}
		}
	})
}

// TestCallToolSuggestsNames: call_tool of a name that no tool has, such as
// the tool's name on its server, says which public names were meant.
func TestCallToolSuggestsNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ups := searchUpstreams()
		ups["backup"] = mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "read_file"}}})
		_, g := setup(t, ups, append(searchServers(), entry("backup", false)), searchOn)
		cs := client(t, g, nil)
		for name, want := range map[string]string{
			"read_file":        `call_tool: unknown tool "read_file"; did you mean one of "backup__read_file", "files__read_file"?`,
			"files_read_file":  `call_tool: unknown tool "files_read_file"; did you mean "files__read_file"?`,
			"files.write_file": `call_tool: unknown tool "files.write_file"; did you mean "files__write_file"?`,
			"files/deleteFile": `call_tool: unknown tool "files/deleteFile"; did you mean "files__delete_file"?`,
			"math__ad":         `call_tool: unknown tool "math__ad"; did you mean "math__add"?`,
		} {
			res := call(t, cs, callToolName, map[string]any{"name": name})
			if !res.IsError || mcptest.Text(res) != want {
				t.Errorf("call_tool %s = %q (isError %v), want %q", name, mcptest.Text(res), res.IsError, want)
			}
		}
	})
}

// TestSearchToolsSkipsALongWord: a query whose first kilobyte is one word
// that no tool's name or description has (a pasted blob) is searched by
// the words after it.
func TestSearchToolsSkipsALongWord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, g := setup(t, searchUpstreams(), searchServers(), searchOn)
		cs := client(t, g, nil)
		res := call(t, cs, searchToolsName, map[string]any{"query": strings.Repeat("x", 3000) + " delete a file"})
		var found struct{ Tools []foundTool }
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, &found); err != nil || res.IsError {
			t.Fatalf("search_tools after a long word: %v, %s", err, mcptest.Text(res))
		}
		if len(found.Tools) == 0 || found.Tools[0].Name != "files__delete_file" {
			t.Errorf("search_tools after a long word: %v; want files__delete_file first", foundNames(found.Tools))
		}
	})
}
