package switchboard

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestResultText: what a result becomes for a framework whose tools
// return strings.
func TestResultText(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
		want string
	}{
		{"nil", nil, ""},
		{"texts", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}}, "a\nb"},
		{"image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "chart:"}, &mcp.ImageContent{MIMEType: "image/png", Data: []byte("12345")}}},
			"chart:\n[image: image/png, 5 bytes]"},
		{"audio", &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("1")}}}, "[audio: audio/wav, 1 bytes]"},
		{"link", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///a", Name: "a"}}}, "[resource link: file:///a a]"},
		{"text resource", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a", Text: "hi"}}}}, "hi"},
		{"blob resource", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b", MIMEType: "application/pdf", Blob: []byte("12")}}}},
			"[resource file:///b: application/pdf, 2 bytes]"},
		{"structured only", &mcp.CallToolResult{StructuredContent: map[string]any{"n": 5}}, `{"n":5}`},
		{"structured beside text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"n": 5}`}}, StructuredContent: map[string]any{"n": 5}}, `{"n": 5}`},
		{"structured beside an image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png"}}, StructuredContent: map[string]any{"n": 5}},
			"[image: image/png, 0 bytes]\n{\"n\":5}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ResultText(tc.res)); diff != "" {
				t.Errorf("ResultText (-want +got):\n%s", diff)
			}
		})
	}
}

func ExampleResultText() {
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "Here is the chart."},
		&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 2048)},
	}}
	fmt.Println(ResultText(res))
	// Output:
	// Here is the chart.
	// [image: image/png, 2048 bytes]
}
