package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/mcpconn"
)

// The answers the gateway gives its clients for what went wrong.

// toolAnswer is the answer to a client's tool call that returned res and
// err: the result; the server's own protocol error, unchanged; else an
// error result that says what went wrong, naming the server (one that is
// unavailable, say), with no URL or address.
func toolAnswer(ctx context.Context, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	if err == nil {
		return res, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err() // the client went away: nothing to tell it
	}
	if rpcErr, ok := mcpconn.Answer(err); ok {
		return nil, rpcErr
	}
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: "switchboard: " + errorText(err)}},
	}, nil
}

// errorText is the text of err, the failure of a tool call, for a client:
// as a status shows it, with every URL, network address and host name of a
// server replaced, but without what the server wrote to stderr (see
// switchboard.WithoutStderr). (The errors of other requests keep their
// URLs: they name the resources they concern.)
func errorText(err error) string {
	return switchboard.WithoutStderr(switchboard.ServerStatus{Err: err}.ErrorText())
}

// resourceNotFound is the go-sdk's error for a resource that no server
// serves, with the URI named in its message too.
func resourceNotFound(uri string) error {
	err := mcp.ResourceNotFoundError(uri)
	if rpcErr, ok := err.(*jsonrpc.Error); ok {
		rpcErr.Message = fmt.Sprintf("switchboard: resource %q not found: no server serves it", uri)
	}
	return err
}

// protocolError is the JSON-RPC error for err, the failure of a request
// that is not a tool call: the server's own error answer, unchanged, or one
// that says what went wrong, naming the server, without what it wrote to
// stderr.
func protocolError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if rl := (*rateLimited)(nil); errors.As(err, &rl) {
		return rl.rpc // the go-sdk sends the data of a *jsonrpc.Error alone
	}
	if rpcErr, ok := mcpconn.Answer(err); ok {
		return rpcErr
	}
	code := int64(jsonrpc.CodeInternalError)
	switch {
	case errors.Is(err, switchboard.ErrUnknownPrompt), errors.Is(err, switchboard.ErrUnknownResource),
		errors.Is(err, switchboard.ErrInvalidArguments):
		code = jsonrpc.CodeInvalidParams
	case errors.Is(err, switchboard.ErrNotSupported):
		code = jsonrpc.CodeMethodNotFound
	}
	return &jsonrpc.Error{Code: code, Message: "switchboard: " + switchboard.WithoutStderr(err.Error())}
}

// isResourceNotFound reports whether err is the go-sdk's error for a
// resource that no handler serves (see [mcp.ResourceNotFoundError]).
func isResourceNotFound(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeInvalidParams && rpcErr.Message == "Resource not found"
}

// checkArguments checks that a tools/call's arguments, which the SDK has
// already read as JSON, are an object or absent.
func checkArguments(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" || raw[0] == '{' {
		return nil
	}
	return fmt.Errorf("%w: arguments must be a JSON object", switchboard.ErrInvalidArguments)
}

// badInput is the error result of a call of tool with input that does not
// fit: a result, so that the model reads what to correct, as the go-sdk
// answers arguments that do not fit a tool's input schema.
func badInput(tool string, err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: tool + ": " + err.Error()}},
	}
}
