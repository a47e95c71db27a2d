package switchboard

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// searched returns the public names SearchTools finds for query, or fails
// the test.
func searched(t *testing.T, m *Manager, query string, opts *SearchOptions) []string {
	t.Helper()
	matches, err := m.SearchTools(t.Context(), query, opts)
	if err != nil {
		t.Fatalf("SearchTools(%q) = %v", query, err)
	}
	names := make([]string, len(matches))
	for i, match := range matches {
		names[i] = match.Name
		if match.Score <= 0 || match.Definition() == nil {
			t.Errorf("match %s: score %v, definition %v", match.Name, match.Score, match.Definition())
		}
	}
	return names
}

var searchable = map[string][]mcptest.ToolSpec{
	"browser": {
		{Name: "take_screenshot", Description: "Capture a PNG image of the current page."},
		{Name: "navigate", Description: "Open a URL in the browser."},
	},
	"files": {
		{Name: "read_file", Description: "Read the contents of a file from disk."},
		{Name: "list_directory", Description: "List the entries of a directory."},
	},
}

// TestSearchToolsFindsByWhatIsAsked: the tool whose name and description
// match the request ranks first, across servers.
func TestSearchToolsFindsByWhatIsAsked(t *testing.T) {
	f := newFleet(t)
	for name, specs := range searchable {
		f.add(name, mcptest.Script{Tools: specs})
	}
	m := f.managerWith(&Options{Cache: CacheOff}, server("browser"), server("files"))
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	for query, want := range map[string]string{
		"take a screenshot of the login page": "browser__take_screenshot",
		"what files are in this directory":    "files__list_directory",
		"open https://example.com":            "browser__navigate",
		"readFile":                            "files__read_file",
	} {
		if got := searched(t, m, query, nil); len(got) == 0 || got[0] != want {
			t.Errorf("SearchTools(%q) = %v, want %s first", query, got, want)
		}
	}
	if got := searched(t, m, "file", &SearchOptions{Limit: 1}); len(got) != 1 {
		t.Errorf("a limit of 1 returned %v", got)
	}
}

// TestSearchToolsNeverFindsAHiddenTool: a tool that Options.Filter hides
// from the caller is not found, however well it matches; another caller
// finds it.
func TestSearchToolsNeverFindsAHiddenTool(t *testing.T) {
	f := newFleet(t)
	f.add("files", mcptest.Script{Tools: searchable["files"]})
	hide := func(_ context.Context, fc FilterContext, tool *mcp.Tool) (bool, error) {
		return fc.Query.Agent == "admin" || tool.Name != "read_file", nil
	}
	m := f.managerWith(&Options{Cache: CacheOff, Filter: hide}, server("files"))
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	guest := &Query{Agent: "guest"}
	if got := searched(t, m, "read the file", &SearchOptions{Query: guest}); len(got) != 1 || got[0] != "files__list_directory" {
		t.Errorf("the guest found %v, want only files__list_directory", got)
	}
	admin := &Query{Agent: "admin"}
	if got := searched(t, m, "read the file", &SearchOptions{Query: admin}); len(got) == 0 || got[0] != "files__read_file" {
		t.Errorf("the admin found %v, want files__read_file first", got)
	}
}

// TestSearchToolsFollowsTheServers: a server's new tool list, a
// disconnected server and a server a reconfiguration removes are found as
// they are now.
func TestSearchToolsFollowsTheServers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		browser := f.add("browser", mcptest.Script{Tools: searchable["browser"]})
		f.add("files", mcptest.Script{Tools: searchable["files"]})
		m := f.managerWith(&Options{Cache: CacheOff}, server("browser"), server("files"))
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		files := m.search.indexed["files"]
		browser.SetTools([]mcptest.ToolSpec{{Name: "print_page", Description: "Print the current page to a PDF."}})
		mcptest.PassTime(time.Second) // the list_changed is gathered, and the list fetched
		synctest.Wait()
		if again := m.search.indexed["files"]; len(again) == 0 || &again[0] != &files[0] {
			t.Error("the browser's new list indexed the files server again: one server's change must index that server alone")
		}
		if got := searched(t, m, "screenshot", nil); len(got) != 0 {
			t.Errorf("after the browser's new list, screenshot found %v", got)
		}
		if got := searched(t, m, "save the page as pdf", nil); len(got) == 0 || got[0] != "browser__print_page" {
			t.Errorf("after the browser's new list, pdf found %v", got)
		}
		if err := m.Disconnect(t.Context(), "files"); err != nil {
			t.Fatal(err)
		}
		if got := searched(t, m, "read a file", nil); len(got) != 0 {
			t.Errorf("after Disconnect, files' tools are found: %v", got)
		}
		if err := m.Reconnect(t.Context(), "files"); err != nil {
			t.Fatal(err)
		}
		if got := searched(t, m, "read a file", nil); len(got) == 0 || got[0] != "files__read_file" {
			t.Errorf("after Reconnect, read a file found %v", got)
		}
		if _, err := m.Reconfigure(t.Context(), &config.Config{Servers: []config.Server{server("files")}}); err != nil {
			t.Fatal(err)
		}
		if got := searched(t, m, "pdf", nil); len(got) != 0 {
			t.Errorf("after the browser was removed, pdf found %v", got)
		}
	})
}

// TestSearchToolsBadInput: an empty query and a negative limit are refused
// with ErrInvalidSearch, saying why; a query of 100 KB is searched by its
// first words.
func TestSearchToolsBadInput(t *testing.T) {
	f := newFleet(t)
	f.add("files", mcptest.Script{Tools: searchable["files"]})
	m := f.managerWith(&Options{Cache: CacheOff}, server("files"))
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query string
		limit int
		says  string
	}{
		{"", 0, "empty"},
		{"   \t", 0, "empty"},
		{"file", -1, "limit"},
	} {
		_, err := m.SearchTools(t.Context(), tc.query, &SearchOptions{Limit: tc.limit})
		if !errors.Is(err, ErrInvalidSearch) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("SearchTools(%.20q, limit %d) = %v, want ErrInvalidSearch saying %q", tc.query, tc.limit, err, tc.says)
		}
	}
	if got := searched(t, m, "file", &SearchOptions{Limit: 10_000}); len(got) != 2 {
		t.Errorf("a limit of 10,000 found %v, want both tools", got)
	}
	pasted := "read the contents of a file " + strings.Repeat("and then ", 20_000) + "list the directory"
	if got := searched(t, m, pasted, &SearchOptions{Limit: 1}); len(got) != 1 || got[0] != "files__read_file" {
		t.Errorf("a 100 KB query found %v, want files__read_file, by its first words", got)
	}
}

// TestSearchToolsFindsByWhatAServerIsFor: a request in the words of a
// server's serverInfo, its config description or its package, which none
// of its tools uses, finds its tools; packageOf reads only a package
// runner's package.
func TestSearchToolsFindsByWhatAServerIsFor(t *testing.T) {
	f := newFleet(t)
	f.add("kg", mcptest.Script{
		Description: "Keeps a persistent memory of people and facts across conversations.",
		Tools:       []mcptest.ToolSpec{{Name: "create_entities", Description: "Create entities in the graph."}},
	})
	f.add("files", mcptest.Script{Tools: searchable["files"]})
	f.add("notes", mcptest.Script{
		Title:       "Jotter",
		Description: "Scribbles that outlive the chat.",
		Tools:       []mcptest.ToolSpec{{Name: "put", Description: "Put an item."}},
	})
	described := server("files")
	described.Description = "The team's shared drive of spreadsheets"
	m := f.managerWith(&Options{Cache: CacheOff}, server("kg"), described, server("notes"))
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := searched(t, m, "facts about people", nil); len(got) != 1 || got[0] != "kg__create_entities" {
		t.Errorf("SearchTools(facts about people) = %v, want kg__create_entities", got)
	}
	for query, want := range map[string]string{
		"jotter scribbles":  "notes__put",
		"shared drive":      "files__",
		"team spreadsheets": "files__",
	} {
		if got := searched(t, m, query, nil); len(got) == 0 || !strings.HasPrefix(got[0], want) {
			t.Errorf("SearchTools(%s) = %v, want %s… first", query, got, want)
		}
	}
	for _, c := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"npx", []string{"-y", "@modelcontextprotocol/server-memory"}, "@modelcontextprotocol/server-memory"},
		{"/usr/bin/uvx", []string{"mcp-server-git", "--repository", "."}, "mcp-server-git"},
		{"npx.cmd", []string{"tavily-mcp@0.2.22"}, "tavily-mcp@0.2.22"},
		{"node", []string{"server.js"}, ""},
		{"npx", []string{"-y", "API_KEY=secret"}, ""},
		{"npx", []string{"-y"}, ""},
	} {
		if got := packageOf(config.Server{Command: c.cmd, Args: c.args}); got != c.want {
			t.Errorf("packageOf(%s %v) = %q, want %q", c.cmd, c.args, got, c.want)
		}
	}
}
