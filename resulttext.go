package switchboard

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ResultText returns what a model that reads only text gets of a tool's
// result, for hosts whose tools return strings (agent frameworks, say):
// its text contents and the text of its embedded text resources, one per
// line; a line naming each image, audio, binary resource and resource link,
// which a string cannot hold; and the structured content as JSON when no
// content is text. It is "" for a nil result.
func ResultText(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var lines []string
	hasText := false
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			lines = append(lines, c.Text)
			hasText = true
		case *mcp.ImageContent:
			lines = append(lines, fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			lines = append(lines, fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			lines = append(lines, fmt.Sprintf("[resource link: %s %s]", c.URI, c.Name))
		case *mcp.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Blob == nil:
				lines = append(lines, r.Text)
				hasText = true
			default:
				lines = append(lines, fmt.Sprintf("[resource %s: %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			}
		}
	}
	if !hasText && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			lines = append(lines, string(b))
		}
	}
	return strings.Join(lines, "\n")
}
