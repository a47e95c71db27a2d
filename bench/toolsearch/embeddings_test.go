package toolsearch

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/embed"
	index "github.com/switchboard-mcp/switchboard/internal/toolsearch"
	"github.com/switchboard-mcp/switchboard/internal/toolvec"
)

// memoEmbedder asks an endpoint for each distinct text once: the grid
// below asks for the same queries many times.
type memoEmbedder struct {
	e  toolvec.Embedder
	mu sync.Mutex
	m  map[string][]float32
}

func (m *memoEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	var ask []string
	m.mu.Lock()
	for _, t := range texts {
		if m.m[t] == nil && !slices.Contains(ask, t) {
			ask = append(ask, t)
		}
	}
	m.mu.Unlock()
	if len(ask) > 0 {
		vecs, err := m.e.Embed(ctx, ask)
		if err != nil {
			return nil, err
		}
		m.mu.Lock()
		for i, t := range ask {
			m.m[t] = vecs[i]
		}
		m.mu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = m.m[t]
	}
	return out, nil
}

// fusedIndex is the BM25F index of tools, and a toolvec ranker over them
// with weight w, ready.
func fusedIndex(t *testing.T, tools []PublicTool, e toolvec.Embedder, w float64) (*index.Index, *toolvec.Ranker) {
	t.Helper()
	x, err := index.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	byServer := make(map[string][]index.Doc)
	vecs := make(map[string][]toolvec.Doc)
	for _, pt := range tools {
		byServer[pt.Server] = append(byServer[pt.Server], index.Doc{Name: pt.Name, Title: pt.Tool.Title, Description: pt.Tool.Description, InputSchema: pt.Tool.InputSchema, Context: serverContext(pt)})
		vecs[pt.Server] = append(vecs[pt.Server], toolvec.Doc{Name: pt.Name, Text: toolvec.Text(pt.Name, pt.Tool.Title, pt.Tool.Description)})
	}
	if err := x.Replace(byServer); err != nil {
		t.Fatal(err)
	}
	// A long query timeout: the figures are of the ranking, not of the
	// machine's load.
	r := toolvec.New(e, "bench", &toolvec.Options{Weight: w, QueryTimeout: time.Minute})
	t.Cleanup(r.Close)
	for server, docs := range vecs {
		r.Set(server, docs)
	}
	if err := r.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	return x, r
}

// fusedRanker ranks as Manager.SearchTools does with an endpoint: every
// tool BM25F matched, fused with the cosine. With dense, BM25F is left
// out: the vectors alone.
func fusedRanker(t *testing.T, x *index.Index, r *toolvec.Ranker, dense bool) Ranker {
	return func(query string, limit int) []string {
		hits, err := x.Search(query, x.Len(), nil)
		if err != nil || dense {
			hits = nil
		}
		fused, ok := r.Rank(t.Context(), query, hits, nil, limit)
		if !ok {
			t.Fatalf("no vector for %q", query)
		}
		names := make([]string, len(fused))
		for i, h := range fused {
			names[i] = h.Name
		}
		return names
	}
}

// rrfRanker is reciprocal rank fusion of BM25F's ranking and the vectors'
// alone: 1/(k+rank) + w/(k+rank).
func rrfRanker(bm25, dense Ranker, k, w float64) Ranker {
	return func(query string, limit int) []string {
		score := make(map[string]float64)
		for i, n := range bm25(query, 100) {
			score[n] += 1 / (k + float64(i+1))
		}
		for i, n := range dense(query, 100) {
			score[n] += w / (k + float64(i+1))
		}
		names := make([]string, 0, len(score))
		for n := range score {
			names = append(names, n)
		}
		slices.SortFunc(names, func(a, b string) int {
			if score[a] != score[b] {
				if score[a] > score[b] {
					return -1
				}
				return 1
			}
			return cmpString(a, b)
		})
		return names[:min(limit, len(names))]
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestEmbeddings measures the fusion of BM25F with a real embedding model
// behind an OpenAI-compatible endpoint: SWITCHBOARD_EMBEDDINGS_URL (such
// as http://127.0.0.1:11435/v1, embedserver/'s), and
// SWITCHBOARD_EMBEDDINGS_MODEL (default "use-lite"). It searches the
// fusion's weight, and normalised sum against reciprocal rank fusion, on
// the tuning split alone, and reports the default's figures on both.
func TestEmbeddings(t *testing.T) {
	url := os.Getenv("SWITCHBOARD_EMBEDDINGS_URL")
	if url == "" {
		t.Skip("set SWITCHBOARD_EMBEDDINGS_URL to an OpenAI-compatible endpoint: (cd bench/toolsearch/embedserver && npm ci && node server.mjs) and SWITCHBOARD_EMBEDDINGS_URL=http://127.0.0.1:11435/v1")
	}
	model := os.Getenv("SWITCHBOARD_EMBEDDINGS_MODEL")
	if model == "" {
		model = "use-lite"
	}
	client, err := embed.New(url, model, os.Getenv("SWITCHBOARD_EMBEDDINGS_KEY"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.CloseIdleConnections()
	e := &memoEmbedder{e: client, m: make(map[string][]float32)}
	d := load(t)
	bm25, err := Index(d.Tools, nil)
	if err != nil {
		t.Fatal(err)
	}
	x, r := fusedIndex(t, d.Tools, e, 1)
	dense := fusedRanker(t, x, r, true)

	// The tuning split alone chooses.
	for _, w := range []float64{0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 3} {
		x, r := fusedIndex(t, d.Tools, e, w)
		s, _ := Evaluate(d.Tuning, fusedRanker(t, x, r, false))
		t.Logf("tuning, normalised sum w=%.2f: %v", w, s)
	}
	for _, w := range []float64{0.5, 1, 2} {
		for _, k := range []float64{10, 60} {
			s, _ := Evaluate(d.Tuning, rrfRanker(bm25, dense, k, w))
			t.Logf("tuning, RRF k=%.0f w=%.2f: %v", k, w, s)
		}
	}

	// The default, and its parts, on both splits.
	x, r = fusedIndex(t, d.Tools, e, toolvec.DefaultWeight)
	report(t, d, "BM25F alone", bm25)
	report(t, d, "vectors alone ("+model+")", dense)
	report(t, d, "fused, the default", fusedRanker(t, x, r, false))

	// What a search costs with the endpoint: the query's vector from it
	// (not memoised here), the BM25F pass over every tool and the fusion.
	r2 := toolvec.New(client, "bench", &toolvec.Options{QueryTimeout: time.Minute})
	defer r2.Close()
	for server, docs := range byServerDocs(d.Tools) {
		r2.Set(server, docs)
	}
	if err := r2.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	var took []time.Duration
	for _, req := range d.Tuning {
		start := time.Now()
		fusedRanker(t, x, r2, false)(req.Query, 5)
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("a fused search over %d tools, the query's vector asked of %s: p50 %v, p99 %v", len(d.Tools), client.Endpoint(),
		took[len(took)/2].Round(time.Microsecond*10), took[len(took)*99/100].Round(time.Microsecond*10))
}

// byServerDocs returns the toolvec docs of tools by server.
func byServerDocs(tools []PublicTool) map[string][]toolvec.Doc {
	out := make(map[string][]toolvec.Doc)
	for _, pt := range tools {
		out[pt.Server] = append(out[pt.Server], toolvec.Doc{Name: pt.Name, Text: toolvec.Text(pt.Name, pt.Tool.Title, pt.Tool.Description)})
	}
	return out
}
