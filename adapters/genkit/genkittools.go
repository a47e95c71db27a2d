// Package genkittools gives a Genkit program every tool of a Switchboard
// manager as a native Genkit tool, ready for [ai.WithTools]:
//
//	m := switchboard.New(cfg, &switchboard.Options{StartupGate: -1}) // Connect waits for every server
//	defer m.Close()
//	if err := m.Connect(ctx); err != nil { ... }
//	resp, err := genkit.Generate(ctx, g, ai.WithPrompt("..."),
//		ai.WithTools(genkittools.Tools(ctx, m, nil)...))
//
// Each tool is made with [ai.NewMultipartTool], so it needs no registry:
// Generate registers it in a child registry of its own for that call. It
// carries the tool's public name and description exactly, and its input
// schema as sanitized below, and a call goes through
// [switchboard.Manager.CallTool], with the tool
// context as its context: routing, validation, waiting for a reconnect,
// safe replay and cancellation are the manager's.
//
// # Errors
//
// Genkit's generate loop ends the whole generation when a tool returns an
// error. So a tool returns an error only when its context is done; any
// other error of CallTool (an unavailable server, an unknown tool, invalid
// arguments) becomes the text of [switchboard.DefaultErrorFormatter], unless
// the manager's Options.FormatError already made it a result, and reaches
// the model as an error result does. An error result reaches the model as
// the output {"error": TEXT}, the key Gemini's function responses use for
// errors.
//
// Genkit checks the model's arguments against the input schema before it
// runs a tool, and ends the generation if they do not match: such a call
// never reaches the manager.
//
// # Input schemas
//
// A server's schema is not trusted, and Genkit's check (gojsonschema)
// fetches a "$ref" to an http(s) URL at every call, reads a "$ref" to a
// file:// URL, and ends the generation on a "pattern" that Go's regexp
// cannot compile, such as a JavaScript lookahead. So Genkit gets a copy of
// each schema without any "$ref" that is not a local JSON pointer ("#..."),
// any "pattern" Go cannot compile, or any "patternProperties" entry whose
// key Go cannot compile; the rest is kept as it is. The arguments the model
// sends are then checked by the manager against the server's own schema.
// [Tools] compiles each copy as Genkit will, and leaves out a tool whose
// copy still does not compile (a "$ref" to a missing definition, an unknown
// type), silently, as the adapter has no logger: one bad schema would
// otherwise end every generation whose model calls that tool.
//
// # Results
//
// A result's output is its structured content when it has some, and
// otherwise the text of its text contents (and of embedded text
// resources), joined by newlines. Images, audio and embedded binary
// resources become media parts (data URLs) of the multipart tool response;
// resource links become lines of the text.
//
// # Changing tools
//
// [Tools] returns the tools the manager exposes when it is called. Genkit
// fixes a generation's tools when Generate starts, for all its turns, so
// call Tools for every Generate: a server's list_changed, a reconnect or a
// config reload shows at the next one. A tool that went away in between
// answers with the manager's "no tool named" text.
package genkittools

import (
	"context"
	"encoding/base64"
	"strings"

	"github.com/firebase/genkit/go/ai"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
)

// Tools returns the tools m exposes for q (which may be nil), as
// [switchboard.Manager.Tools] lists them, as Genkit tools for
// [ai.WithTools]. Each element is an [ai.Tool]. Call it for every Generate
// so that the model sees the current tools. A tool whose input schema
// Genkit could not compile, even sanitized (see the package doc), is left
// out.
func Tools(ctx context.Context, m *switchboard.Manager, q *switchboard.Query) []ai.ToolRef {
	list := m.Tools(ctx, q)
	tools := make([]ai.ToolRef, 0, len(list))
	for _, t := range list {
		tool, err := newTool(m, q, t)
		if err != nil {
			continue // its schema would end every generation; see Tools
		}
		tools = append(tools, tool)
	}
	return tools
}

// Tool returns t, a tool of m, as a Genkit tool whose calls go through
// m.CallTool for q (which may be nil). Its input schema is t's, sanitized
// as the package doc says. If even the sanitized schema does not compile, the
// tool is still returned, and every generation that offers it ends with
// Genkit's error when the model calls it; [Tools] leaves such a tool out.
func Tool(m *switchboard.Manager, q *switchboard.Query, t switchboard.Tool) ai.Tool {
	tool, _ := newTool(m, q, t)
	return tool
}

// newTool returns Tool(m, q, t) and the error of compiling its sanitized
// input schema as Genkit will.
func newTool(m *switchboard.Manager, q *switchboard.Query, t switchboard.Tool) (ai.Tool, error) {
	schema := sanitizeSchema(t.InputSchema())
	err := compileSchema(schema)
	name := t.Name
	call := func(tc *ai.ToolContext, input any) (*ai.MultipartToolResponse, error) {
		// As Genkit decoded it: the manager sends nil as {}, and checks
		// the rest against the tool's required arguments.
		res, err := m.CallToolForModel(tc, q, &mcp.CallToolParams{Name: name, Arguments: input})
		if err != nil {
			return nil, err // the context is done
		}
		return response(res), nil
	}
	return ai.NewMultipartTool(name, t.Description, call, ai.WithInputSchema(schema)), err
}

// response turns an MCP tool result into a Genkit multipart tool response.
func response(res *mcp.CallToolResult) *ai.MultipartToolResponse {
	var text []string
	var media []*ai.Part
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			text = append(text, c.Text)
		case *mcp.ImageContent:
			media = append(media, mediaPart(c.MIMEType, c.Data))
		case *mcp.AudioContent:
			media = append(media, mediaPart(c.MIMEType, c.Data))
		case *mcp.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Blob != nil:
				media = append(media, mediaPart(r.MIMEType, r.Blob))
			default:
				text = append(text, r.Text)
			}
		case *mcp.ResourceLink:
			text = append(text, "resource: "+c.URI)
		}
	}
	out := &ai.MultipartToolResponse{Content: media}
	switch joined := strings.Join(text, "\n"); {
	case res.IsError:
		out.Output = map[string]any{"error": joined}
	case res.StructuredContent != nil:
		out.Output = res.StructuredContent
	default:
		out.Output = joined
	}
	return out
}

// mediaPart returns a media part that holds data in a data URL.
func mediaPart(mimeType string, data []byte) *ai.Part {
	if mimeType == "" {
		mimeType = "application/octet-stream"
	}
	return ai.NewMediaPart(mimeType, "data:"+mimeType+";base64,"+base64.StdEncoding.EncodeToString(data))
}
