package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// withToolSearch returns the config file at path with a top-level
// "toolSearch" of mode.
func withToolSearch(t *testing.T, path, mode string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["toolSearch"] = mode
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	return data
}

// TestServeToolSearch: a reload that turns the config's toolSearch on
// applies it, and --tool-search overrides the config's.
func TestServeToolSearch(t *testing.T) {
	isolate(t)
	path := writeConfig(t, map[string]mcptest.Script{"alpha": {Tools: []mcptest.ToolSpec{{Name: "echo"}}}}, nil)
	g := startServe(t, "--config", path)
	g.waitLog(t, settledRE)
	changed := make(chan struct{}, 10)
	cs := connectHTTPWith(t, g.url, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	defer cs.Close()
	if diff := cmp.Diff([]string{"alpha__echo"}, toolNames(t, cs)); diff != "" {
		t.Errorf("tools with search off (-want +got):\n%s", diff)
	}
	on := withToolSearch(t, path, "on")
	replaceFile(t, path, on)
	g.waitLogs(t, regexp.MustCompile(`msg="tool search on: tools are behind search_tools" setting=on$`),
		regexp.MustCompile(`msg="config reloaded"`))
	<-changed
	if diff := cmp.Diff([]string{"search_tools", "call_tool"}, toolNames(t, cs)); diff != "" {
		t.Errorf("tools after a reload turned search on (-want +got):\n%s", diff)
	}
	if out, _, _ := cli(t, "status", "--gateway", g.url); !strings.Contains(out, "\ntool search on: 1 tool behind search_tools (setting on)\n") {
		t.Errorf("status --gateway does not say that tool search is on:\n%s", out)
	}

	// The flag overrides the config, at the start and on a reload.
	g2 := startServe(t, "--config", path, "--tool-search", "off")
	g2.waitLog(t, settledRE)
	cs2 := connectHTTPWith(t, g2.url, nil)
	defer cs2.Close()
	if diff := cmp.Diff([]string{"alpha__echo"}, toolNames(t, cs2)); diff != "" {
		t.Errorf("tools with --tool-search off over the config's on (-want +got):\n%s", diff)
	}
	replaceFile(t, path, withToolSearch(t, path, "auto:0"))
	g2.waitLog(t, regexp.MustCompile(`msg="config reloaded"`))
	if diff := cmp.Diff([]string{"alpha__echo"}, toolNames(t, cs2)); diff != "" {
		t.Errorf("tools with --tool-search off after a reload (-want +got):\n%s", diff)
	}
}

// fakeEmbeddings is an OpenAI-compatible embeddings endpoint: a text's
// vector is the sum of its words' in words, plus a little of a last axis.
// With hang set, it answers no request until the client gives up.
type fakeEmbeddings struct {
	hang  bool
	mu    sync.Mutex
	texts []string
}

var embedWords = map[string][]float32{
	"remember": {1, 0, 0}, "fact": {1, 0, 0}, "entities": {1, 0, 0}, "knowledge": {1, 0, 0},
	"email": {0, 1, 0}, "mail": {0, 1, 0},
}

func (f *fakeEmbeddings) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct{ Input []string }
	if json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.texts = append(f.texts, req.Input...)
	f.mu.Unlock()
	if f.hang {
		<-r.Context().Done()
		return
	}
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, len(req.Input))
	for i, text := range req.Input {
		v := []float32{0, 0, 0.01}
		for _, w := range strings.Fields(strings.ToLower(text)) {
			for j, x := range embedWords[strings.Trim(w, ".,")] {
				v[j] += x
			}
		}
		data[i] = item{i, v}
	}
	json.NewEncoder(w).Encode(map[string]any{"data": data})
}

func (f *fakeEmbeddings) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.texts)
}

// embeddingsConfig writes a config of one server, "kb", whose tools share
// no word with "remember a fact", with tool search on and endpoint's
// embeddings.
func embeddingsConfig(t *testing.T, endpoint string) string {
	t.Helper()
	path := writeConfig(t, map[string]mcptest.Script{"kb": {Tools: []mcptest.ToolSpec{
		{Name: "create_entities", Description: "Create entities in the knowledge graph."},
		{Name: "send_email", Description: "Send an email."},
	}}}, nil)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["toolSearch"] = map[string]any{"mode": "on", "embeddings": map[string]any{"url": endpoint, "model": "m"}}
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	replaceFile(t, path, data)
	return path
}

// TestToolsSearchEmbeddings: tools --search with an embedding endpoint
// waits for the tools' vectors, so that the first run finds a tool that
// shares no word with the request; the next run has them from the cache
// and asks only for the query's.
func TestToolsSearchEmbeddings(t *testing.T) {
	isolate(t)
	fake := &fakeEmbeddings{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	path := embeddingsConfig(t, srv.URL+"/v1")
	for run := range 2 {
		before := len(fake.asked())
		out, stderr, code := cli(t, "tools", "--config", path, "--search", "remember a fact", "--limit", "1")
		if code != 0 || !strings.Contains(out, "kb__create_entities") || stderr != "" {
			t.Fatalf("run %d: exit %d, want kb__create_entities found:\n%s\nstderr:\n%s", run, code, out, stderr)
		}
		asked := fake.asked()[before:]
		if want := map[int]int{0: 3, 1: 1}[run]; len(asked) != want {
			t.Errorf("run %d asked the endpoint for %q, want %d texts", run, asked, want)
		}
	}
}

// TestToolsSearchEmbeddingsTimeout: an endpoint that does not answer
// leaves BM25F to rank alone once --timeout has passed, which stderr says
// in one line.
func TestToolsSearchEmbeddingsTimeout(t *testing.T) {
	isolate(t)
	fake := &fakeEmbeddings{hang: true}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	path := embeddingsConfig(t, srv.URL+"/v1")
	out, stderr, code := cli(t, "tools", "--config", path, "--search", "send an email", "--limit", "1", "--timeout", "3s")
	if code != 0 || !strings.Contains(out, "kb__send_email") {
		t.Errorf("exit %d, want kb__send_email found by BM25F:\n%s\nstderr:\n%s", code, out, stderr)
	}
	want := "switchboard: tool search: the embedding endpoint gave no vectors for the tools within --timeout (3s); ranking by BM25F alone\n"
	if stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
}
