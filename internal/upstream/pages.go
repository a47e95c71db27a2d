package upstream

import (
	"context"
	"encoding/json"
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

// Limits on one list of a server (its tools, prompts, resources or
// resource templates), all its pages together, so that a hostile server
// costs a bounded amount of memory per fetch, however many items it lists
// and whether or not its pages end. Each page is a response, within the
// server's maxResponseBytes as well. A list over a limit is dropped whole
// with a [*ListTooLargeError]: the fetch is not retried, and the previous
// list stays (or, for the tools of a first connection, the attempt fails,
// and is made again on the server's backoff schedule).
const (
	// maxListItems bounds the items of one list.
	maxListItems = 10_000
	// maxListBytes bounds the size of one list's items, as JSON.
	maxListBytes = 16 << 20
	// maxListPages bounds the pages of one list.
	maxListPages = 100
)

// listPages follows cursors until the last page. A failed page is retried
// within budget, which all pages share; the retry asks for the same page
// again. A repeated cursor is an error: the list would never end. A list
// named name that goes over maxListItems, maxListBytes or maxListPages is
// an error too, before the next page is asked for. It also returns the
// first page's cache hint. Each page is one request: a serialized server's
// slot is held for it, never through a backoff.
func listPages[T any](ctx context.Context, name string, serial chan struct{}, budget *retryBudget, fetch func(context.Context, string) (page[T], error)) ([]T, time.Duration, error) {
	var items []T
	var ttl time.Duration
	var size, pages int
	seen := make(map[string]bool)
	cursor := ""
	for {
		if pages == maxListPages {
			return nil, 0, &ListTooLargeError{List: name, Limit: "pages", Max: maxListPages}
		}
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
		if len(items)+len(p.items) > maxListItems {
			return nil, 0, &ListTooLargeError{List: name, Limit: "items", Max: maxListItems}
		}
		for _, item := range p.items {
			b, err := json.Marshal(item)
			if err != nil {
				return nil, 0, err
			}
			if size += len(b); size > maxListBytes {
				return nil, 0, &ListTooLargeError{List: name, Limit: "bytes", Max: maxListBytes}
			}
		}
		items = append(items, p.items...)
		pages++ // a retry of a page is the same page
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
	return listPages(ctx, "tools", serial, budget, func(ctx context.Context, cursor string) (page[*mcp.Tool], error) {
		res, err := s.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return page[*mcp.Tool]{}, err
		}
		return page[*mcp.Tool]{res.Tools, res.NextCursor, res.TTLMs}, nil
	})
}

// listPrompts fetches every page of the server's prompts.
func listPrompts(ctx context.Context, s *session, serial chan struct{}, budget *retryBudget) ([]*mcp.Prompt, time.Duration, error) {
	return listPages(ctx, "prompts", serial, budget, func(ctx context.Context, cursor string) (page[*mcp.Prompt], error) {
		res, err := s.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return page[*mcp.Prompt]{}, err
		}
		return page[*mcp.Prompt]{res.Prompts, res.NextCursor, res.TTLMs}, nil
	})
}

// listResources fetches every page of the server's resources.
func listResources(ctx context.Context, s *session, serial chan struct{}, budget *retryBudget) ([]*mcp.Resource, time.Duration, error) {
	return listPages(ctx, "resources", serial, budget, func(ctx context.Context, cursor string) (page[*mcp.Resource], error) {
		res, err := s.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return page[*mcp.Resource]{}, err
		}
		return page[*mcp.Resource]{res.Resources, res.NextCursor, res.TTLMs}, nil
	})
}

// listTemplates fetches every page of the server's resource templates.
func listTemplates(ctx context.Context, s *session, serial chan struct{}, budget *retryBudget) ([]*mcp.ResourceTemplate, time.Duration, error) {
	return listPages(ctx, "resource templates", serial, budget, func(ctx context.Context, cursor string) (page[*mcp.ResourceTemplate], error) {
		res, err := s.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return page[*mcp.ResourceTemplate]{}, err
		}
		return page[*mcp.ResourceTemplate]{res.ResourceTemplates, res.NextCursor, res.TTLMs}, nil
	})
}
