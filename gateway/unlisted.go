package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
)

// unlisted answers a call of a tool that the gateway has not registered,
// which the go-sdk refuses as unknown, as the manager answers it: a tool
// of a server still making its first connection, with nothing listed, waits
// for the server, within its timeout; a tool of a server that never
// connected fails as a call to any unavailable server does, with an error
// result that names the server, its state and its last error; a tool that
// no server may own stays unknown, with the go-sdk's error, whose message
// suggests the names the client may have meant. A tool that the manager
// exposes already, ahead of the change event that registers it, is
// registered and called.
func unlisted(r *registry, f *forwarder) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || !isUnknownTool(err, call.Params.Name) {
				return res, err
			}
			name := call.Params.Name
			if _, ok := f.m.Lookup(name); ok {
				r.sync()
				return next(ctx, method, req)
			}
			answer, ferr := f.forwardCall(ctx, name, call)
			if errors.Is(ferr, switchboard.ErrUnknownTool) {
				return nil, unknownTool(err, ferr)
			}
			answer, ferr = toolAnswer(ctx, answer, ferr)
			if answer != nil && answer.Content == nil && !answer.NeedsInput() {
				answer.Content = []mcp.Content{} // as the go-sdk sends a result: never null
			}
			if ferr != nil {
				return nil, ferr
			}
			return answer, nil
		}
	}
}

// unknownTool is the go-sdk's answer sdkErr to a call of an unknown tool,
// with the message of the manager's err (an [switchboard.UnknownToolError]),
// which suggests the names the client may have meant.
func unknownTool(sdkErr, err error) error {
	var rpcErr *jsonrpc.Error
	var unknown *switchboard.UnknownToolError
	if !errors.As(sdkErr, &rpcErr) || !errors.As(err, &unknown) {
		return sdkErr
	}
	answer := *rpcErr
	answer.Message = unknown.Error()
	return &answer
}

// isUnknownTool reports whether err is the go-sdk's answer to a call of a
// tool called name that no one registered.
func isUnknownTool(err error, name string) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeInvalidParams && rpcErr.Message == fmt.Sprintf("unknown tool %q", name)
}
