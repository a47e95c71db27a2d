package catalog

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Query says who asks for tools: hosts pass it to Manager.Tools so that
// dynamic filters and approval policies can depend on the caller.
type Query struct {
	// Client identifies the caller, e.g. the MCP client's name or the host's
	// user.
	Client string
	// Agent is the agent asking, if the host has several.
	Agent string
	// Extra holds anything else the host wants its filters to see. Filters
	// and policies share it, so they must treat it as read-only.
	Extra map[string]any
}

// FilterContext is what a [DynamicFilter] or an [ApprovalFunc] sees.
type FilterContext struct {
	Query Query
	// Server is the configured name of the server that owns the tool.
	Server string
}

// DynamicFilter decides per query whether a tool is exposed. It gets a deep
// copy of the tool, named by its original name on its server, so it can
// never change the catalog.
type DynamicFilter func(ctx context.Context, fc FilterContext, tool *mcp.Tool) (bool, error)

// FilterTools returns the tools that filter keeps, in order. The returned
// Tool values are the input values, since the caller already holds copies;
// the slice is new. A nil filter keeps everything.
//
// A filter that returns an error, or panics, excludes that tool: the failure
// is logged at error level on logger (nil discards) with the server and tool
// names, and the other tools are still filtered. Once ctx is done the
// remaining tools are excluded without asking the filter, and that is logged
// once, so a cancelled query neither leaks unfiltered tools nor floods the
// log.
func FilterTools(ctx context.Context, tools []Tool, q Query, filter DynamicFilter, logger *slog.Logger) []Tool {
	out := make([]Tool, 0, len(tools))
	if filter == nil {
		return append(out, tools...)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	for i, t := range tools {
		if err := ctx.Err(); err != nil {
			logger.ErrorContext(ctx, "dynamic tool filter stopped; remaining tools excluded",
				"excluded", len(tools)-i, "err", err)
			break
		}
		keep, err := guard(ctx, filter, FilterContext{Query: q, Server: t.Server}, filterCopy(t))
		if err != nil {
			logger.ErrorContext(ctx, "dynamic tool filter failed; tool excluded",
				"server", t.Server, "tool", t.Original, "err", err)
			continue
		}
		if keep {
			out = append(out, t)
		}
	}
	return out
}

// filterCopy returns the definition a filter or policy sees: a deep copy of
// t.Tool named by the tool's original name.
func filterCopy(t Tool) *mcp.Tool {
	c := CloneTool(t.Tool)
	if c == nil {
		c = &mcp.Tool{}
	}
	c.Name = t.Original
	return c
}

// guard calls f, turning a panic into an error so that one bad filter or
// policy cannot take down the host.
func guard(ctx context.Context, f func(context.Context, FilterContext, *mcp.Tool) (bool, error),
	fc FilterContext, tool *mcp.Tool) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			ok, err = false, fmt.Errorf("panic: %v", r)
		}
	}()
	return f(ctx, fc, tool)
}
