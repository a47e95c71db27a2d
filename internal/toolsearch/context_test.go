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
	graph := ServerContext(About{Key: "kg", Package: "@acme/server-kg@1.0.0", Description: "Keeps a persistent memory of people and facts across conversations."})
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
// kept, what the config and the server say of it come a line each, each
// cut to its first words within maxAboutBytes.
func TestServerContext(t *testing.T) {
	for _, c := range []struct {
		about About
		want  string
	}{
		{About{Key: "memory", Package: "@modelcontextprotocol/server-memory@2026.8.31"}, "memory\n@modelcontextprotocol/server-memory"},
		{About{Key: "git", Package: "mcp-server-git"}, "git\nmcp-server-git"},
		{About{Key: "k8s"}, "k8s"},
		{About{Key: "kg", Description: " people, preferences and facts ", Name: "memory-server", Title: "Memory", Summary: "A knowledge graph."},
			"kg\npeople, preferences and facts\nmemory-server\nMemory\nA knowledge graph."},
	} {
		if got := ServerContext(c.about); got != c.want {
			t.Errorf("ServerContext(%+v) = %q, want %q", c.about, got, c.want)
		}
	}
	long := strings.Repeat("word ", 1000)
	got := ServerContext(About{Key: "k", Description: long, Name: long, Title: long, Summary: long})
	if len(got) > len("k")+4*(1+maxAboutBytes) || !strings.HasSuffix(got, "word") {
		t.Errorf("ServerContext of 4 long fields = %d bytes ending %q; want at most %d, ending in a whole word", len(got), got[max(0, len(got)-8):], len("k")+4*(1+maxAboutBytes))
	}
}
