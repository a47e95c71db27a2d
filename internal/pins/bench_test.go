package pins

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// realisticTools makes n tools shaped like a real server's (as the
// gateway's listToolSpecs does): verb_noun names, a two-sentence
// description, two to four typed and described properties, annotations.
func realisticTools(n int) []*mcp.Tool {
	verbs := []string{"create", "get", "list", "update", "delete", "search", "archive", "restore", "assign", "close",
		"reopen", "merge", "export", "import", "sync", "watch", "unwatch", "lock", "unlock", "rename",
		"copy", "move", "tag", "untag", "summarize"}
	nouns := []string{"issue", "pull_request", "branch", "commit", "release", "label", "milestone", "comment", "review", "workflow",
		"job", "artifact", "secret", "variable", "environment", "deployment", "webhook", "team", "member", "project",
		"column", "card", "file", "folder", "page", "database", "record", "table", "view", "dashboard",
		"alert", "incident", "ticket", "customer", "invoice", "payment", "order", "product", "message", "channel"}
	props := []struct{ name, typ, desc string }{
		{"id", "string", "The identifier of the item, as returned by the list tool"},
		{"owner", "string", "The account or organization that owns the item"},
		{"limit", "integer", "How many items to return at most; defaults to 30"},
		{"includeArchived", "boolean", "Whether to include archived items in the result"},
	}
	tools := make([]*mcp.Tool, n)
	for i := range tools {
		verb, noun := verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)]
		name := verb + "_" + noun
		if i >= len(verbs)*len(nouns) {
			name = fmt.Sprintf("%s_%d", name, i/(len(verbs)*len(nouns)))
		}
		properties := map[string]any{}
		for _, p := range props[:2+i%3] {
			properties[p.name] = map[string]any{"type": p.typ, "description": p.desc}
		}
		readOnly := verb == "get" || verb == "list" || verb == "search"
		tools[i] = &mcp.Tool{
			Name: name,
			Description: fmt.Sprintf("%s a %s in the workspace the server is connected to. "+
				"Returns the %s as JSON, with its URL, or an error that says why the request was refused.",
				strings.ToUpper(verb[:1])+verb[1:], strings.ReplaceAll(noun, "_", " "), strings.ReplaceAll(noun, "_", " ")),
			InputSchema: map[string]any{"type": "object", "properties": properties, "required": []any{"id", "owner"}[:1+i%2]},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly, DestructiveHint: ptr(verb == "delete")},
		}
	}
	return tools
}

// BenchmarkPinning: what pins cost a list of 1,000 tools. "marshal" is the
// baseline in the same run, JSON-encoding the 1,000 definitions (the least
// a list refresh does with them); "pin" pins all 1,000 (trust on first
// use); "check" checks a refreshed list of the same 1,000 against the pins.
func BenchmarkPinning(b *testing.B) {
	tools := realisticTools(1000)
	b.Run("marshal", func(b *testing.B) {
		for b.Loop() {
			for _, t := range tools {
				if _, err := json.Marshal(t); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("pin", func(b *testing.B) {
		for b.Loop() {
			f := New()
			for _, t := range tools {
				if err := f.Set("srv", t, time.Time{}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	f := New()
	for _, t := range tools {
		if err := f.Set("srv", t, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
	refreshed := realisticTools(1000)
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			for _, r := range f.Check("srv", refreshed) {
				if r.State != StatePinned {
					b.Fatalf("%s is %v", r.Tool, r.State)
				}
			}
		}
	})
}
