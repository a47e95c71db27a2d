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
	graph, _ := ServerContext(About{Key: "kg", Package: "@acme/server-kg@1.0.0", Instructions: "Keeps a persistent memory of people and facts across conversations."})
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
// kept, what the config and the server say of it come a line each, and
// the server's words are cut to their first ones: instructions within
// MaxContextBytes, the rest within maxAboutBytes.
func TestServerContext(t *testing.T) {
	for _, c := range []struct {
		about About
		want  string
	}{
		{About{Key: "memory", Package: "@modelcontextprotocol/server-memory@2026.8.31"}, "memory\n@modelcontextprotocol/server-memory"},
		{About{Key: "memory", Package: "@modelcontextprotocol/server-memory", Instructions: "Remember."}, "memory\n@modelcontextprotocol/server-memory\nRemember."},
		{About{Key: "git", Package: "mcp-server-git"}, "git\nmcp-server-git"},
		{About{Key: "k8s"}, "k8s"},
		{About{Key: "kg", Description: " people, preferences and facts ", Name: "memory-server", Title: "Memory", Summary: "A knowledge graph.", Instructions: "Use it."},
			"kg\npeople, preferences and facts\nmemory-server\nMemory\nA knowledge graph.\nUse it."},
	} {
		if got, cut := ServerContext(c.about); got != c.want || cut {
			t.Errorf("ServerContext(%+v) = %q, %v, want %q, false", c.about, got, cut, c.want)
		}
	}
	long := strings.Repeat("word ", MaxContextBytes)
	got, cut := ServerContext(About{Key: "k", Instructions: long})
	if !cut || len(got) > len("k\n")+MaxContextBytes || !strings.HasSuffix(got, "word") {
		t.Errorf("ServerContext of %d bytes of instructions = %d bytes ending %q, cut %v; want at most %d, ending in a whole word, cut", len(long), len(got), got[max(0, len(got)-8):], cut, MaxContextBytes+2)
	}
	got, cut = ServerContext(About{Key: "k", Description: long, Name: long, Title: long, Summary: long})
	if cut || len(got) > len("k")+4*(1+maxAboutBytes) {
		t.Errorf("ServerContext of 4 long server fields = %d bytes, cut %v; want at most %d, not cut (the instructions were not)", len(got), cut, len("k")+4*(1+maxAboutBytes))
	}
}
