package einotools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
)

// EnhancedTool is one of the manager's tools as an Eino
// [tool.EnhancedInvokableTool]: the same tool as [Tool], whose result
// reaches the model as multimodal parts, its images and audio included.
// It is safe for concurrent use.
type EnhancedTool struct {
	m    *switchboard.Manager
	q    *switchboard.Query
	info *schema.ToolInfo
}

var _ tool.EnhancedInvokableTool = (*EnhancedTool)(nil)

// NewEnhancedTool returns t, a tool of m, as an Eino enhanced tool whose
// calls go through m for q (which may be nil). It fails only if t's input
// schema cannot be read as JSON.
func NewEnhancedTool(m *switchboard.Manager, q *switchboard.Query, t switchboard.Tool) (*EnhancedTool, error) {
	et, err := NewTool(m, q, t)
	if err != nil {
		return nil, err
	}
	return &EnhancedTool{m: m, q: q, info: et.info}, nil
}

// EnhancedTools returns the tools that m exposes to q (which may be nil)
// now, as Eino enhanced tools, in the manager's order; see [Tools]. Eino's
// ToolsNode puts an enhanced tool's result in the tool message's
// UserInputMultiContent instead of its Content: use them with a chat model
// that reads it.
func EnhancedTools(ctx context.Context, m *switchboard.Manager, q *switchboard.Query) ([]tool.BaseTool, error) {
	ts, err := convert(m, q, m.Tools(ctx, q))
	for i, t := range ts {
		et := t.(*Tool)
		ts[i] = &EnhancedTool{m: et.m, q: et.q, info: et.info}
	}
	return ts, err
}

// Info returns the tool's name, description and parameters, as the model
// is to see them. The caller may change the result, but not the
// parameters' schema, which the tools of later turns share.
func (t *EnhancedTool) Info(context.Context) (*schema.ToolInfo, error) {
	info := *t.info
	return &info, nil
}

// InvokableRun calls the tool through the manager with arg's text, a JSON
// object ("" or a nil arg means {}), and returns the result as [Result]
// gives it. As with [Tool.InvokableRun], an error result and an error of
// the manager return text for the model and a nil error; a cancelled ctx
// returns its error.
func (t *EnhancedTool) InvokableRun(ctx context.Context, arg *schema.ToolArgument, _ ...tool.Option) (*schema.ToolResult, error) {
	var args string
	if arg != nil {
		args = arg.Text
	}
	res, err := call(ctx, t.m, t.q, t.info.Name, args)
	if err != nil {
		return nil, err
	}
	return Result(res), nil
}

// Result returns what a model reads of res, as parts: a text part for each
// text content and embedded text resource, an image part for each image
// and an audio part for each audio content (base64 data and MIME type), a
// text part naming each resource link and binary resource, and, when
// there is no content at all, the structured content as a JSON text part.
func Result(res *mcp.CallToolResult) *schema.ToolResult {
	var parts []schema.ToolOutputPart
	text := func(s string) {
		parts = append(parts, schema.ToolOutputPart{Type: schema.ToolPartTypeText, Text: s})
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			text(c.Text)
		case *mcp.ImageContent:
			parts = append(parts, schema.ToolOutputPart{Type: schema.ToolPartTypeImage, Image: &schema.ToolOutputImage{
				MessagePartCommon: media(c.Data, c.MIMEType),
			}})
		case *mcp.AudioContent:
			parts = append(parts, schema.ToolOutputPart{Type: schema.ToolPartTypeAudio, Audio: &schema.ToolOutputAudio{
				MessagePartCommon: media(c.Data, c.MIMEType),
			}})
		case *mcp.ResourceLink:
			text(fmt.Sprintf("[resource: %s]", c.URI))
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil && r.Blob == nil {
				text(r.Text)
			} else if r != nil {
				text(fmt.Sprintf("[resource: %s, %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			text(string(b))
		}
	}
	return &schema.ToolResult{Parts: parts}
}

func media(data []byte, mimeType string) schema.MessagePartCommon {
	b64 := base64.StdEncoding.EncodeToString(data)
	return schema.MessagePartCommon{Base64Data: &b64, MIMEType: mimeType}
}
