package switchboard

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

const embedKey = "sk-embed-SECRET"

// embedWords gives each word a direction: a text's vector is the sum of
// its words', plus a little of the last axis.
var embedWords = map[string][]float32{
	"remember": {1, 0, 0, 0}, "fact": {1, 0, 0, 0}, "entities": {1, 0, 0, 0}, "observations": {1, 0, 0, 0},
	"picture": {0, 1, 0, 0}, "screenshot": {0, 1, 0, 0}, "png": {0, 1, 0, 0},
	"file": {0, 0, 1, 0}, "contents": {0, 0, 1, 0}, "document": {0, 0, 1, 0},
}

// fakeOpenAI is an OpenAI-compatible embeddings endpoint with vectors from
// embedWords. Once broken is set, it answers the way it says.
type fakeOpenAI struct {
	mu     sync.Mutex
	texts  []string // every text it was asked for
	auth   []string // the Authorization header of each request
	broken string
}

func (f *fakeOpenAI) break_(how string) {
	f.mu.Lock()
	f.broken = how
	f.mu.Unlock()
}

func (f *fakeOpenAI) asked() ([]string, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.texts), slices.Clone(f.auth)
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.texts = append(f.texts, req.Input...)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	broken := f.broken
	f.mu.Unlock()
	switch broken {
	case "slow":
		<-r.Context().Done()
		return
	case "garbage":
		io.WriteString(w, "<html>503 Service Unavailable</html>")
		return
	case "wrong count":
		io.WriteString(w, `{"data": []}`)
		return
	case "huge":
		w.Write([]byte(`{"data": [`))
		chunk := []byte(strings.Repeat(" ", 1<<20))
		for range 33 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		return
	case "status":
		http.Error(w, `{"error": "model not found"}`, http.StatusNotFound)
		return
	case "redirect":
		http.Redirect(w, r, "/elsewhere/embeddings", http.StatusTemporaryRedirect)
		return
	}
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, len(req.Input))
	for i, text := range req.Input {
		v := []float32{0, 0, 0, 0.01}
		for _, w := range strings.Fields(strings.ToLower(text)) {
			for j, x := range embedWords[strings.Trim(w, ".,")] {
				v[j] += x
			}
		}
		data[i] = item{i, v}
	}
	json.NewEncoder(w).Encode(map[string]any{"data": data})
}

var embedServers = map[string][]mcptest.ToolSpec{
	"memory": {
		{Name: "create_entities", Description: "Create entities in the knowledge graph."},
		{Name: "add_observations", Description: "Add observations to entities."},
	},
	"files": searchable["files"],
}

// embedManager returns a connected manager over embedServers whose config
// names endpoint (the key in OPENAI_API_KEY), logging to logs.
func embedManager(t *testing.T, endpoint string, logs io.Writer, filter DynamicFilter) *Manager {
	t.Helper()
	return embedManagerCache(t, endpoint, logs, filter, CacheOff, "")
}

// embedManagerCache is embedManager with the given Cache and CacheDir.
func embedManagerCache(t *testing.T, endpoint string, logs io.Writer, filter DynamicFilter, cache CacheMode, cacheDir string) *Manager {
	t.Helper()
	f := newFleet(t)
	for name, specs := range embedServers {
		f.add(name, mcptest.Script{Tools: specs})
	}
	cfg := &config.Config{Servers: []config.Server{server("memory"), server("files")}, ToolSearch: config.ToolSearch{
		Mode: config.ToolSearchOn, Embeddings: config.Embeddings{URL: endpoint, Model: "m", APIKeyEnv: "OPENAI_API_KEY"}}}
	m := New(cfg, &Options{Cache: cache, CacheDir: cacheDir, StartupGate: -1, Dial: f.dial, Filter: filter,
		Logger:    slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		LookupEnv: func(name string) (string, bool) { return embedKey, name == "OPENAI_API_KEY" }})
	t.Cleanup(func() { m.Close() })
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := m.WaitSearchVectors(t.Context()); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSearchVectorsKept: the tools' vectors are kept in CacheDir's vectors
// subdirectory, readable by the owner alone, without the endpoint's URL or
// key, so that a manager started again asks the endpoint for no tool's
// vector and finds by meaning at once; with CacheOff nothing is written.
func TestSearchVectorsKept(t *testing.T) {
	fake := &fakeOpenAI{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := t.TempDir()
	m := embedManagerCache(t, srv.URL+"/v1", io.Discard, nil, CacheOnDisk, dir)
	m.Close()
	texts, _ := fake.asked()
	if len(texts) != 4 {
		t.Fatalf("%d tool texts embedded, want 4", len(texts))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "vectors", "*"))
	if len(files) != 1 {
		t.Fatalf("want one file of vectors in %s, got %v", filepath.Join(dir, "vectors"), files)
	}
	fi, err := os.Stat(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", files[0], fi.Mode().Perm())
	}
	data, _ := os.ReadFile(files[0])
	if strings.Contains(string(data), embedKey) || strings.Contains(string(data), "127.0.0.1") {
		t.Error("the file of vectors holds the key or the endpoint's URL")
	}

	again := embedManagerCache(t, srv.URL+"/v1", io.Discard, nil, CacheOnDisk, dir)
	if after, _ := fake.asked(); len(after) != len(texts) {
		t.Errorf("started again, the manager asked for %q", after[len(texts):])
	}
	if got := searched(t, again, "remember a fact", nil); len(got) < 2 || !strings.HasPrefix(got[0], "memory__") || !strings.HasPrefix(got[1], "memory__") {
		t.Errorf("started again, remember a fact: %v, want the memory tools first", got)
	}
	again.Close()

	off := t.TempDir()
	embedManagerCache(t, srv.URL+"/v1", io.Discard, nil, CacheOff, off).Close()
	if entries, _ := os.ReadDir(off); len(entries) != 0 {
		t.Errorf("with CacheOff, %s has %v", off, entries)
	}
	if after, _ := fake.asked(); len(after) != len(texts)+1+4 {
		t.Errorf("with CacheOff, want the 4 tools embedded again; asked for %d texts in all", len(after))
	}
}

// TestSearchToolsWithEmbeddings: with an embedding endpoint configured, a
// request that shares no word with a tool finds it through the vectors;
// hidden tools are never ranked; the key goes to the endpoint on each
// request; a reload that brings the same tools back asks for no vector.
func TestSearchToolsWithEmbeddings(t *testing.T) {
	fake := &fakeOpenAI{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	hide := func(_ context.Context, fc FilterContext, tool *mcp.Tool) (bool, error) {
		return fc.Query.Agent != "guest" || tool.Name != "add_observations", nil
	}
	logs := &lockedBuffer{}
	m := embedManager(t, srv.URL+"/v1", logs, hide)
	texts, _ := fake.asked()
	if len(texts) != 4 {
		t.Errorf("%d tool texts embedded, want 4: %q", len(texts), texts)
	}

	if got := searched(t, m, "remember a fact", nil); len(got) < 2 || !slices.Contains(got[:2], "memory__create_entities") || !slices.Contains(got[:2], "memory__add_observations") {
		t.Errorf("remember a fact: %v, want the memory tools first", got)
	}
	if got := searched(t, m, "read the file", nil); len(got) == 0 || got[0] != "files__read_file" {
		t.Errorf("read the file: %v, want files__read_file first", got)
	}
	if got := searched(t, m, "remember a fact", &SearchOptions{Query: &Query{Agent: "guest"}}); slices.Contains(got, "memory__add_observations") || len(got) == 0 || got[0] != "memory__create_entities" {
		t.Errorf("the guest found %v, want memory__create_entities first and never the hidden tool", got)
	}

	_, auth := fake.asked()
	for _, a := range auth {
		if a != "Bearer "+embedKey {
			t.Errorf("a request's Authorization is %q, want the bearer key", a)
		}
	}

	before, _ := fake.asked()
	cfg := &config.Config{Servers: []config.Server{server("files")}, ToolSearch: m.view.Load().toolSearch}
	if _, err := m.Reconfigure(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Servers = append(cfg.Servers, server("memory"))
	if _, err := m.Reconfigure(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	if err := m.WaitSettled(t.Context(), "memory"); err != nil {
		t.Fatal(err)
	}
	if err := m.search.vec.Load().Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if after, _ := fake.asked(); len(after) != len(before) {
		t.Errorf("the reload asked for %q again", after[len(before):])
	}
	if got := searched(t, m, "remember a fact", nil); len(got) == 0 || !strings.HasPrefix(got[0], "memory__") {
		t.Errorf("after the reload, remember a fact: %v", got)
	}
	if strings.Contains(logs.take(), embedKey) {
		t.Error("the key is in the log")
	}
}

// TestSearchToolsEmbeddingsFail: once the endpoint fails in any way, BM25F
// answers as it would alone, the failure is logged once however many
// searches meet it, and the key is in no log line and goes nowhere else.
func TestSearchToolsEmbeddingsFail(t *testing.T) {
	for _, how := range []string{"down", "slow", "garbage", "wrong count", "huge", "status", "redirect"} {
		t.Run(how, func(t *testing.T) {
			fake := &fakeOpenAI{}
			var elsewhere []string
			var mu sync.Mutex
			mux := http.NewServeMux()
			mux.Handle("/v1/embeddings", fake)
			mux.HandleFunc("/elsewhere/embeddings", func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				elsewhere = append(elsewhere, r.Header.Get("Authorization"))
				mu.Unlock()
			})
			srv := httptest.NewServer(mux)
			defer srv.Close()
			logs := &lockedBuffer{}
			m := embedManager(t, srv.URL+"/v1", logs, nil)
			if how == "down" {
				srv.Close()
			}
			fake.break_(how)
			logs.take()
			hits, _ := m.search.index.Search("read the file", 3, nil)
			var bm25 []string
			for _, h := range hits {
				bm25 = append(bm25, h.Name)
			}
			for range 3 {
				if got := searched(t, m, "read the file", &SearchOptions{Limit: 3}); !slices.Equal(got, bm25) {
					t.Errorf("read the file: %v, want BM25F's %v", got, bm25)
				}
			}
			log := logs.take()
			if n := strings.Count(log, "tool search ranks by BM25F alone"); n != 1 || strings.Count(log, "\n") != 1 { // "down" fails as EOF, then as refused: one run
				t.Errorf("want one log line; the log:\n%s", log)
			}
			if strings.Contains(log, embedKey) || !strings.Contains(log, "endpoint="+srv.URL+"/v1/embeddings") {
				t.Errorf("the log line has the key, or does not name the endpoint:\n%s", log)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(elsewhere) > 0 {
				t.Errorf("the redirect was followed, with %q", elsewhere)
			}
		})
	}
}

// TestEmbeddingsKeyVariableUnset: an apiKeyEnv whose variable is not set
// is logged without its value, which may be the key itself put there by
// mistake (a key of letters and digits passes as a variable's name).
func TestEmbeddingsKeyVariableUnset(t *testing.T) {
	logs := &lockedBuffer{}
	s := newSearchIndex(slog.New(slog.NewTextHandler(logs, nil)), func(string) (string, bool) { return "", false }, "")
	defer s.close()
	const keyLike = "a3f9c1d2e4b5a6c7d8e9f0a1b2c3d4e5"
	s.configure(config.Embeddings{URL: "http://127.0.0.1:1/v1", Model: "m", APIKeyEnv: keyLike})
	log := logs.take()
	if strings.Contains(log, keyLike) || !strings.Contains(log, "toolSearch.embeddings.apiKeyEnv") {
		t.Errorf("the log shows apiKeyEnv's value, or does not name the field:\n%s", log)
	}
}

// TestSearchToolsEmbeddingsOnlyWithSearchOn: while the config's tool search
// is off, no tool's text goes to the endpoint; a reload that turns search
// on starts the vectors.
func TestSearchToolsEmbeddingsOnlyWithSearchOn(t *testing.T) {
	fake := &fakeOpenAI{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	f := newFleet(t)
	for name, specs := range embedServers {
		f.add(name, mcptest.Script{Tools: specs})
	}
	cfg := &config.Config{Servers: []config.Server{server("memory"), server("files")}, ToolSearch: config.ToolSearch{
		Mode: config.ToolSearchOff, Embeddings: config.Embeddings{URL: srv.URL + "/v1", Model: "m"}}}
	m := New(cfg, &Options{Cache: CacheOff, StartupGate: -1, Dial: f.dial})
	defer m.Close()
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if vec := m.search.vec.Load(); vec != nil {
		t.Fatal("search is off in the config, and a ranker of embeddings was made")
	}
	searched(t, m, "remember a fact", nil) // SearchTools works, by BM25F alone
	if asked, _ := fake.asked(); len(asked) != 0 {
		t.Errorf("search off, the endpoint was asked for %q", asked)
	}
	on := *cfg
	on.ToolSearch.Mode = config.ToolSearchOn
	if _, err := m.Reconfigure(t.Context(), &on); err != nil {
		t.Fatal(err)
	}
	vec := m.search.vec.Load()
	if vec == nil {
		t.Fatal("search turned on with embeddings, and no ranker")
	}
	if err := vec.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if asked, _ := fake.asked(); len(asked) == 0 {
		t.Error("search on: no tool's vector was asked for")
	}
}
