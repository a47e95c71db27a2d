package toolsearch

import (
	"fmt"

	index "github.com/switchboard-mcp/switchboard/internal/toolsearch"
)

// Index returns the ranking of Switchboard's tool search over tools, with
// opts (nil: its defaults): the ranking the benchmark measures, each
// tool's context made as the manager makes it (serverContext).
func Index(tools []PublicTool, opts *index.Options) (Ranker, error) {
	x, err := index.New(opts)
	if err != nil {
		return nil, err
	}
	byServer := make(map[string][]index.Doc)
	for _, t := range tools {
		byServer[t.Server] = append(byServer[t.Server], index.Doc{Name: t.Name, Title: t.Tool.Title, Description: t.Tool.Description, InputSchema: t.Tool.InputSchema, Context: serverContext(t)})
	}
	if err := x.Replace(byServer); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	return func(query string, limit int) []string {
		hits, err := x.Search(query, limit, func(string) bool { return true })
		if err != nil {
			return nil // an unanswerable query ranks nothing
		}
		names := make([]string, len(hits))
		for i, h := range hits {
			names[i] = h.Name
		}
		return names
	}, nil
}

// serverContext is the Doc.Context of t, as the manager makes it: its
// server's key, package and serverInfo (tools.json has no config
// descriptions: no one wrote a config for these servers).
func serverContext(t PublicTool) string {
	about := index.About{Key: t.Server, Package: t.Package}
	if t.Info != nil {
		about.Name, about.Title, about.Summary = t.Info.Name, t.Info.Title, t.Info.Description
	}
	return index.ServerContext(about)
}
