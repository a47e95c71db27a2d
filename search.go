package switchboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/catalog"
	"github.com/switchboard-mcp/switchboard/internal/embed"
	"github.com/switchboard-mcp/switchboard/internal/toolsearch"
	"github.com/switchboard-mcp/switchboard/internal/toolvec"
)

// DefaultSearchLimit is how many matches SearchTools returns when
// SearchOptions.Limit is zero.
const DefaultSearchLimit = 5

// MaxSearchQueryBytes is the most of a query SearchTools reads: a longer
// one is searched by its first words within it.
const MaxSearchQueryBytes = toolsearch.MaxQueryBytes

// ErrInvalidSearch means a search was refused before anything was ranked:
// its query is empty (or only stop words), or its limit is negative. The
// error says which.
var ErrInvalidSearch = errors.New("invalid search")

// SearchOptions configure a search. A nil *SearchOptions means all
// defaults.
type SearchOptions struct {
	// Query says who asks: only the tools that Options.Filter shows to it
	// are ranked. Nil: no one in particular.
	Query *Query
	// Limit is the most matches to return. Default: DefaultSearchLimit.
	Limit int
}

// A ToolMatch is a tool that SearchTools found, and how well it matched:
// scores compare within one search only.
type ToolMatch struct {
	Tool
	Score float64
}

// SearchTools ranks the exposed tools by how well they match query, a
// request in words ("take a screenshot of the login page"), and returns
// the best, best first, ties by public name. It ranks the public name split
// into words, the title, the description and the input schema's parameter
// names and descriptions, and what is known of the tool's server (its
// config key and description, its package, its serverInfo), with BM25F, in memory: no network, no model. A
// tool that Options.Filter hides from opts.Query is never found.
//
// If the config names an embedding endpoint (toolSearch.embeddings), its
// vectors add to the ranking: each tool scores its BM25F score over the
// best one, plus the cosine of its vector and the query's, so that a
// request that shares no word with a tool can find it. The tools' vectors
// are computed in the background as they are indexed, and kept across
// reloads, and across restarts beside the tool cache (see
// Options.CacheDir; [Manager.WaitSearchVectors] waits for them); the query's is waited for 250 ms at most (toolvec's
// DefaultQueryTimeout), past which, or if the endpoint fails (logged once
// per distinct error), BM25F answers alone, as it does until the first
// tool has a vector.
//
// The index follows the views: a server whose tools change is indexed
// again, alone. A query over MaxSearchQueryBytes is searched by its first
// words within it, cut between words: models paste whole requests. An empty query or
// a negative limit is refused with [ErrInvalidSearch].
func (m *Manager) SearchTools(ctx context.Context, query string, opts *SearchOptions) ([]ToolMatch, error) {
	var o SearchOptions
	if opts != nil {
		o = *opts
	}
	if o.Limit == 0 {
		o.Limit = DefaultSearchLimit
	}
	if m.closed.Load() {
		return nil, fmt.Errorf("search tools: %w", ErrClosed)
	}
	v := m.view.Load()
	visible := func(name string) bool { _, ok := v.exposedByName[name]; return ok }
	if keep := m.toolFilter(o.Query); keep != nil {
		shown := make(map[string]bool)
		for _, t := range catalog.Filter(ctx, v.exposed, "tool", func(t Tool) (string, string) { return t.Server, t.Original }, keep, m.opts.Logger) {
			shown[t.Name] = true
		}
		visible = func(name string) bool { return shown[name] }
	}
	var hits []toolsearch.Hit
	var err error
	if vec := m.search.vec.Load(); vec != nil && vec.Ready() {
		// The fusion takes every tool BM25F matched, and the query's
		// vector, within toolvec's query timeout; without it, BM25F's
		// best answer.
		all, err := m.search.index.Search(query, max(o.Limit, m.search.index.Len()), visible)
		if err != nil {
			return nil, &searchError{cause: err}
		}
		fused, ok := vec.Rank(ctx, query, all, visible, o.Limit)
		if !ok {
			fused = all[:min(o.Limit, len(all))]
		}
		hits = fused
	} else if hits, err = m.search.index.Search(query, o.Limit, visible); err != nil {
		return nil, &searchError{cause: err}
	}
	out := make([]ToolMatch, 0, len(hits))
	for _, h := range hits {
		if i, ok := v.exposedByName[h.Name]; ok {
			out = append(out, ToolMatch{Tool: v.exposed[i], Score: h.Score})
		}
	}
	return out, nil
}

// ErrNoEmbeddings means that tool search uses no embedding endpoint: the
// config names none (toolSearch.embeddings), or has search off.
var ErrNoEmbeddings = errors.New("tool search uses no embedding endpoint")

// WaitSearchVectors waits until every exposed tool has its vector from the
// config's embedding endpoint, so that [Manager.SearchTools] ranks them all
// with it: a one-shot search waits here, a gateway need not. It returns
// [ErrNoEmbeddings] at once if there is no endpoint in use, the error of
// the endpoint's last pass over the tools if it failed (logged already),
// or ctx's error. Vectors kept from an earlier run (see Options.CacheDir)
// come without a request.
func (m *Manager) WaitSearchVectors(ctx context.Context) error {
	if m.closed.Load() {
		return fmt.Errorf("wait for search vectors: %w", ErrClosed)
	}
	vec := m.search.vec.Load()
	if vec == nil {
		return ErrNoEmbeddings
	}
	if err := vec.Wait(ctx); err != nil {
		return fmt.Errorf("wait for search vectors: %w", err)
	}
	return nil
}

// vectorDir returns where tool search keeps its vectors, given the
// options' CacheDir and Cache: "" (none) with CacheOff.
func vectorDir(o Options) string {
	switch {
	case o.Cache == CacheOff:
		return ""
	case o.CacheDir != "":
		return filepath.Join(o.CacheDir, "vectors")
	}
	base, err := os.UserCacheDir()
	if err != nil || base == "" {
		return ""
	}
	return filepath.Join(base, "switchboard", "vectors")
}

// searchError is a refused search: it wraps ErrInvalidSearch and the
// index's own error, whose words say what is wrong; its op is ours.
type searchError struct{ cause error }

func (e *searchError) Error() string {
	return "search tools: " + ErrInvalidSearch.Error() + ": " + strings.TrimPrefix(e.cause.Error(), "toolsearch: search: ")
}

func (e *searchError) Unwrap() []error { return []error{ErrInvalidSearch, e.cause} }

// searchIndex keeps the tool search index in step with the views, from the
// goroutine that makes them: it indexes again only the servers whose
// exposed tools changed.
type searchIndex struct {
	index  *toolsearch.Index
	logger *slog.Logger
	// indexed holds, per server, the tools last indexed: a view keeps an
	// unchanged tool's prepared definition, so its identity and the public
	// name (which a collision may change) tell.
	indexed map[string][]indexedTool
	// contexts holds, per server, the Doc.Context its tools were last
	// indexed with: a change (a description edited in the config, a
	// server that says something new of itself) indexes them again.
	contexts map[string]string

	// vec, if set, ranks with the vectors of the config's embedding
	// endpoint (toolSearch.embeddings); SearchTools loads it. It is
	// written by follow, and replaced when the endpoint's setting changes.
	vec        atomic.Pointer[toolvec.Ranker]
	embeddings config.Embeddings        // the setting vec was made for
	vecDocs    map[string][]toolvec.Doc // per server, the texts last given to vec
	lookupEnv  func(string) (string, bool)
	// vecDir is where vec keeps its vectors across restarts; empty with
	// CacheOff.
	vecDir string
}

// indexedTool is what tells whether a tool must be indexed again.
type indexedTool struct {
	name string
	src  *mcp.Tool
}

func newSearchIndex(logger *slog.Logger, lookupEnv func(string) (string, bool), vecDir string) *searchIndex {
	index, err := toolsearch.New(nil)
	if err != nil {
		panic(err) // the defaults are valid: a test holds them so
	}
	return &searchIndex{index: index, logger: logger, indexed: make(map[string][]indexedTool), contexts: make(map[string]string),
		vecDocs: make(map[string][]toolvec.Doc), lookupEnv: lookupEnv, vecDir: vecDir}
}

// configure makes vec follow the embedding endpoint of e: a new ranker
// (given every server's tools) when the setting changed, none when it is
// unset. A setting the client refuses is logged, and none is used.
func (s *searchIndex) configure(e config.Embeddings) {
	if e == s.embeddings {
		return
	}
	s.embeddings = e
	if old := s.vec.Swap(nil); old != nil {
		old.Close()
	}
	if e.URL == "" {
		return
	}
	var key string
	if e.APIKeyEnv != "" {
		var ok bool
		if key, ok = s.lookupEnv(e.APIKeyEnv); !ok {
			// Not the name: a key put there by mistake can pass for one.
			s.logger.Warn("tool search embeddings: the environment variable that toolSearch.embeddings.apiKeyEnv names is not set; sending no key")
		}
	}
	client, err := embed.New(e.URL, e.Model, key, nil)
	if err != nil {
		s.logger.Error("tool search embeddings: not used", "error", err)
		return
	}
	vec := toolvec.New(client, e.Model, &toolvec.Options{Logger: s.logger, Endpoint: client.Endpoint(), Dir: s.vecDir})
	for server, docs := range s.vecDocs {
		vec.Set(server, docs)
	}
	s.vec.Store(vec)
	s.logger.Info("tool search ranks with embeddings too", "endpoint", client.Endpoint(), "model", e.Model)
}

// close stops the ranker of embeddings, if any.
func (s *searchIndex) close() {
	if vec := s.vec.Swap(nil); vec != nil {
		vec.Close()
	}
}

// follow indexes the tools of v's servers that changed since the view it
// followed last, and drops the servers that are gone.
func (s *searchIndex) follow(v *view) {
	embeddings := v.toolSearch.Embeddings
	if v.toolSearch.Mode == config.ToolSearchOff {
		// Tools' text goes to no endpoint while the config has search off.
		embeddings = config.Embeddings{}
	}
	s.configure(embeddings)
	byServer := make(map[string][]Tool)
	for _, t := range v.exposed {
		byServer[t.Server] = append(byServer[t.Server], t)
	}
	abouts := make(map[string]toolsearch.About, len(v.statuses))
	for _, st := range v.statuses {
		var about toolsearch.About
		if info := st.ServerInfo; info != nil {
			about.Name, about.Title, about.Summary = info.Name, info.Title, info.Description
		}
		abouts[st.Name] = about
	}
	for server, tools := range byServer {
		now := make([]indexedTool, len(tools))
		for i, t := range tools {
			now[i] = indexedTool{t.Name, t.src}
		}
		about := abouts[server]
		about.Key = server
		if up := v.byName[server]; up != nil {
			cfg := up.Config()
			about.Package, about.Description = packageOf(cfg), cfg.Description
		}
		context := toolsearch.ServerContext(about)
		if slices.Equal(now, s.indexed[server]) && context == s.contexts[server] {
			continue
		}
		docs := make([]toolsearch.Doc, len(tools))
		for i, t := range tools {
			docs[i] = toolsearch.Doc{Name: t.Name, Title: t.def.Title, Description: t.def.Description, InputSchema: t.def.InputSchema, Context: context}
		}
		if err := s.index.Set(server, docs); err != nil {
			// Exposed tools are valid documents; this is a bug, and
			// search goes on with the server's last tools.
			s.logger.Error("indexing tools for search", "server", server, "error", err)
			continue
		}
		s.indexed[server], s.contexts[server] = now, context
		vd := make([]toolvec.Doc, len(tools))
		for i, t := range tools {
			vd[i] = toolvec.Doc{Name: t.Name, Text: toolvec.Text(t.Name, t.def.Title, t.def.Description)}
		}
		s.vecDocs[server] = vd
		if vec := s.vec.Load(); vec != nil {
			vec.Set(server, vd)
		}
	}
	for server := range s.indexed {
		if _, ok := byServer[server]; !ok {
			delete(s.vecDocs, server)
			if vec := s.vec.Load(); vec != nil {
				vec.Remove(server)
			}
			s.index.Remove(server)
			delete(s.indexed, server)
			delete(s.contexts, server)
		}
	}
}

// packageRunners are the commands that run a package named by their first
// argument that is not a flag: npx @scope/server-memory, uvx mcp-server-git.
var packageRunners = map[string]bool{"npx": true, "bunx": true, "pnpx": true, "uvx": true}

// packageOf returns the package a stdio server runs from, if its command is
// one of packageRunners: the name says what the server is for
// ("server-memory"), so tool search indexes it with the server's tools.
// Nothing else of the command line is read (arguments may hold secrets).
func packageOf(cfg config.Server) string {
	if cfg.Command == "" || !packageRunners[strings.TrimSuffix(filepath.Base(cfg.Command), ".cmd")] {
		return ""
	}
	for _, a := range cfg.Args {
		if !strings.HasPrefix(a, "-") {
			if strings.ContainsAny(a, "=:\\ ") {
				return "" // not a package name
			}
			return a
		}
	}
	return ""
}
