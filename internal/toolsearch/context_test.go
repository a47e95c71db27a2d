package toolsearch

import (
	"strings"
	"testing"
)

// TestContextFindsAServersTools: a request in the words of what a server
// is for, which none of its tools uses, finds its tools through their
// Context; a tool that has the request's words itself still ranks first.
func TestContextFindsAServersTools(t *testing.T) {
	x := mustNew(t, nil)
	graph, _ := ServerContext("kg", "@acme/server-kg@1.0.0", "Keeps a persistent memory of people and facts across conversations.")
	mustSet(t, x, "kg", []Doc{
		{Name: "kg__create_entities", Description: "Create multiple new entities in the graph.", Context: graph},
		{Name: "kg__add_observations", Description: "Add observations to existing entities.", Context: graph},
	})
	mustSet(t, x, "mail", []Doc{
		{Name: "mail__send", Description: "Send an email.", Context: "mail"},
		{Name: "mail__persistent_drafts", Description: "List persistent drafts of people.", Context: "mail"},
	})
	hits := mustSearch(t, x, "facts across conversations", 5, nil)
	if len(hits) != 2 || hits[0].Server != "kg" || hits[1].Server != "kg" {
		t.Errorf("facts across conversations = %v, want the kg server's two tools", hits)
	}
	hits = mustSearch(t, x, "persistent people", 5, nil)
	if len(hits) != 3 || hits[0].Name != "mail__persistent_drafts" {
		t.Errorf("persistent people = %v, want mail__persistent_drafts first, then the kg tools", hits)
	}
}

// TestServerContext: the version of a package is cut off, a scope is
// kept, and instructions are cut to their first words within
// MaxContextBytes.
func TestServerContext(t *testing.T) {
	for _, c := range []struct{ key, pkg, instr, want string }{
		{"memory", "@modelcontextprotocol/server-memory@2026.8.31", "", "memory\n@modelcontextprotocol/server-memory"},
		{"memory", "@modelcontextprotocol/server-memory", "Remember.", "memory\n@modelcontextprotocol/server-memory\nRemember."},
		{"git", "mcp-server-git", "", "git\nmcp-server-git"},
		{"k8s", "", "", "k8s"},
	} {
		if got, cut := ServerContext(c.key, c.pkg, c.instr); got != c.want || cut {
			t.Errorf("ServerContext(%q, %q, %q) = %q, %v, want %q, false", c.key, c.pkg, c.instr, got, cut, c.want)
		}
	}
	long := strings.Repeat("word ", MaxContextBytes)
	got, cut := ServerContext("k", "", long)
	if !cut || len(got) > len("k\n")+MaxContextBytes || !strings.HasSuffix(got, "word") {
		t.Errorf("ServerContext of %d bytes of instructions = %d bytes ending %q, cut %v; want at most %d, ending in a whole word, cut", len(long), len(got), got[max(0, len(got)-8):], cut, MaxContextBytes+2)
	}
}
