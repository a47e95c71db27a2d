package upstream

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A page is one answer to a paginated list request.
type page[T any] struct {
	items []T
	next  string // the cursor of the next page; "" on the last
	ttlMs int    // the server's cache hint; 0 means none
}

// listPages follows cursors until the last page. A failed page is retried
// within budget, which all pages share; the retry asks for the same page
// again. A repeated cursor is an error: the list would never end. It also
// returns the first page's cache hint. Each page is one request: a
// serialized server's slot is held for it, never through a backoff.
func listPages[T any](ctx context.Context, serial chan struct{}, budget *retryBudget, fetch func(context.Context, string) (page[T], error)) ([]T, time.Duration, error) {
	var items []T
	var ttl time.Duration
	seen := make(map[string]bool)
	cursor := ""
	for {
		var p page[T]
		err := serially(ctx, serial, func() (err error) {
			p, err = fetch(ctx, cursor)
			return err
		})
		if err != nil {
			if ctx.Err() != nil || isProtocolError(err) {
				return nil, 0, err // cancelled, or an answer a retry would repeat
			}
			delay, ok := budget.take(false)
			if !ok {
				return nil, 0, err
			}
			if err := sleep(ctx, delay); err != nil {
				return nil, 0, err
			}
			continue
		}
		if cursor == "" {
			ttl = time.Duration(p.ttlMs) * time.Millisecond
		}
		items = append(items, p.items...)
		if p.next == "" {
			return items, ttl, nil
		}
		if seen[p.next] {
			// The cursor is opaque and may be secret: never show it.
			return nil, 0, errors.New("server returned a repeated cursor")
		}
		seen[p.next] = true
		cursor = p.next
	}
}

// listTools fetches every page of the server's tools from s, holding
// serial for each page (see listPages), and the cache hint of the list. A
// server that does not offer tools has none.
func listTools(ctx context.Context, s *session, serial chan struct{}, budget *retryBudget) ([]*mcp.Tool, time.Duration, error) {
	if s.capabilities().Tools == nil {
		return nil, 0, nil
	}
	return listPages(ctx, serial, budget, func(ctx context.Context, cursor string) (page[*mcp.Tool], error) {
		res, err := s.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return page[*mcp.Tool]{}, err
		}
		return page[*mcp.Tool]{res.Tools, res.NextCursor, res.TTLMs}, nil
	})
}

// listPrompts fetches every page of the server's prompts.
func listPrompts(ctx context.Context, s *session, serial chan struct{}, budget *retryBudget) ([]*mcp.Prompt, time.Duration, error) {
	return listPages(ctx, serial, budget, func(ctx context.Context, cursor string) (page[*mcp.Prompt], error) {
		res, err := s.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return page[*mcp.Prompt]{}, err
		}
		return page[*mcp.Prompt]{res.Prompts, res.NextCursor, res.TTLMs}, nil
	})
}

// listResources fetches every page of the server's resources.
func listResources(ctx context.Context, s *session, serial chan struct{}, budget *retryBudget) ([]*mcp.Resource, time.Duration, error) {
	return listPages(ctx, serial, budget, func(ctx context.Context, cursor string) (page[*mcp.Resource], error) {
		res, err := s.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return page[*mcp.Resource]{}, err
		}
		return page[*mcp.Resource]{res.Resources, res.NextCursor, res.TTLMs}, nil
	})
}

// listTemplates fetches every page of the server's resource templates.
func listTemplates(ctx context.Context, s *session, serial chan struct{}, budget *retryBudget) ([]*mcp.ResourceTemplate, time.Duration, error) {
	return listPages(ctx, serial, budget, func(ctx context.Context, cursor string) (page[*mcp.ResourceTemplate], error) {
		res, err := s.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return page[*mcp.ResourceTemplate]{}, err
		}
		return page[*mcp.ResourceTemplate]{res.ResourceTemplates, res.NextCursor, res.TTLMs}, nil
	})
}
