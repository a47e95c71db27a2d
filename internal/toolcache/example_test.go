package toolcache_test

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-mcp/switchboard/internal/toolcache"
)

func ExampleCache() {
	dir, err := os.MkdirTemp("", "toolcache-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	c := toolcache.Open(dir, nil)
	const fingerprint = "9f86d081884c7d65"
	tools := []*mcp.Tool{{
		Name:        "search",
		Description: "Searches with key sk-123.",
		InputSchema: map[string]any{"type": "object"},
	}}
	redact := func(s string) string { return strings.ReplaceAll(s, "sk-123", "[redacted]") }
	fetched := time.Now()
	if err := c.Put("docs", fingerprint, tools, fetched, redact); err != nil {
		fmt.Println(err)
	}

	got, _, ok := c.Get("docs", fingerprint)
	fmt.Println(ok, got[0].Name, got[0].Description)

	// The config changed, so its fingerprint did.
	_, _, ok = c.Get("docs", "0123456789abcdef")
	fmt.Println(ok)

	// The server now has no tools: the entry is removed.
	if err := c.Put("docs", fingerprint, nil, fetched.Add(time.Second), nil); err != nil {
		fmt.Println(err)
	}
	_, _, ok = c.Get("docs", fingerprint)
	fmt.Println(ok)
	// Output:
	// true search Searches with key [redacted].
	// false
	// false
}
