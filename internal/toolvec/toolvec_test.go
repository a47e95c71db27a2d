package toolvec

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
	"github.com/switchboard-mcp/switchboard/internal/toolsearch"
)

// words gives each word a direction; a text's vector is the sum of its
// words' (and a little of a last axis, so that none is zero).
var words = map[string][]float32{
	"remember": {1, 0, 0, 0}, "fact": {1, 0, 0, 0}, "entities": {1, 0, 0, 0}, "observations": {1, 0, 0, 0},
	"picture": {0, 1, 0, 0}, "screenshot": {0, 1, 0, 0},
	"mail": {0, 0, 1, 0}, "email": {0, 0, 1, 0},
}

func vectorOf(text string) []float32 {
	v := []float32{0, 0, 0, 0.01}
	for _, w := range strings.Fields(strings.ToLower(text)) {
		for i, x := range words[strings.Trim(w, ".,")] {
			v[i] += x
		}
	}
	return v
}

// fakeEmbedder embeds with vectorOf; err, if set, fails every call, and
// block makes every call wait for its context. It counts the texts.
type fakeEmbedder struct {
	mu    sync.Mutex
	texts []string
	calls int
	err   error
	block bool
}

func (f *fakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	f.calls++
	f.texts = append(f.texts, texts...)
	err, block := f.err, f.block
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = vectorOf(t)
	}
	return out, nil
}

func (f *fakeEmbedder) set(err error, block bool) {
	f.mu.Lock()
	f.err, f.block = err, block
	f.mu.Unlock()
}

func (f *fakeEmbedder) embedded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.texts...)
}

// logCount counts log records, and keeps their text.
type logCount struct {
	mu    sync.Mutex
	lines []string
}

func (l *logCount) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCount) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.mu.Unlock()
	return nil
}
func (l *logCount) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCount) WithGroup(string) slog.Handler      { return l }
func (l *logCount) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

var tools = map[string][]toolsearch.Doc{
	"memory": {{Name: "memory__create_entities", Description: "Create entities in the knowledge graph"},
		{Name: "memory__add_observations", Description: "Add observations to entities"}},
	"mail":    {{Name: "mail__send_email", Description: "Send an email"}},
	"browser": {{Name: "browser__screenshot", Description: "Take a screenshot of the page"}},
}

// fixture is an index of tools and a ranker over them, ready.
func fixture(t *testing.T, e Embedder, opts *Options) (*toolsearch.Index, *Ranker) {
	t.Helper()
	x, err := toolsearch.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Replace(tools); err != nil {
		t.Fatal(err)
	}
	r := New(e, "m", opts)
	t.Cleanup(r.Close)
	for server, docs := range tools {
		var vd []Doc
		for _, d := range docs {
			vd = append(vd, Doc{Name: d.Name, Text: Text(d.Name, d.Title, d.Description)})
		}
		r.Set(server, vd)
	}
	return x, r
}

// search is what the manager does: BM25F over every tool it matches, then
// the fusion; BM25F's own top limit if there is none.
func search(t *testing.T, x *toolsearch.Index, r *Ranker, query string, visible func(string) bool) ([]string, bool) {
	t.Helper()
	hits, err := x.Search(query, x.Len(), visible)
	if err != nil {
		t.Fatal(err)
	}
	fused, ok := r.Rank(context.Background(), query, hits, visible, 3)
	if !ok {
		fused = hits[:min(3, len(hits))]
	}
	var names []string
	for _, h := range fused {
		names = append(names, h.Name)
	}
	return names, ok
}

// TestFusedFindsByMeaning: a request that shares no word with a tool finds
// it through the vectors; one that shares words still ranks that tool
// first; a hidden tool is never ranked.
func TestFusedFindsByMeaning(t *testing.T) {
	e := &fakeEmbedder{}
	x, r := fixture(t, e, nil)
	if err := r.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query   string
		visible func(string) bool
		want    []string
	}{
		{"remember a fact", nil, []string{"memory__add_observations", "memory__create_entities"}}, // sorted
		{"a picture of the page", nil, []string{"browser__screenshot"}},
		{"send email", nil, []string{"mail__send_email"}},
		{"remember a fact", func(n string) bool { return n != "memory__add_observations" }, []string{"memory__create_entities"}},
	} {
		got, ok := search(t, x, r, tc.query, tc.visible)
		if !ok {
			t.Errorf("%q: not fused", tc.query)
		}
		// The rest come in by their small cosines: every vector here has
		// a little of the last axis.
		got = got[:min(len(got), len(tc.want))]
		slices.Sort(got)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q: the first (-want +got):\n%s", tc.query, diff)
		}
	}
	if got, _ := search(t, x, r, "remember a fact", func(string) bool { return false }); len(got) != 0 {
		t.Errorf("nothing visible, yet found %v", got)
	}
}

// TestQueryTimeout: a query whose vector does not come within
// QueryTimeout is ranked by BM25F alone, after exactly that long; a run of
// failed queries is logged once, however they fail, and the first query
// that has its vector again says so, once.
func TestQueryTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &fakeEmbedder{}
		logs := &logCount{}
		x, r := fixture(t, e, &Options{Logger: slog.New(logs), Endpoint: "http://embed.example/v1/embeddings"})
		if err := r.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.set(nil, true)
		for range 3 {
			start := time.Now()
			got, ok := search(t, x, r, "send email", nil)
			if ok || time.Since(start) != DefaultQueryTimeout || len(got) != 1 || got[0] != "mail__send_email" {
				t.Errorf("slow endpoint: %v, fused %v after %v; want BM25F's after %v", got, ok, time.Since(start), DefaultQueryTimeout)
			}
		}
		e.set(errors.New("embed: http://embed.example/v1/embeddings: bad response: status 500"), false)
		for range 3 {
			if got, ok := search(t, x, r, "send email", nil); ok || len(got) != 1 {
				t.Errorf("failing endpoint: %v, fused %v; want BM25F's", got, ok)
			}
		}
		e.set(nil, false)
		for range 2 {
			if _, ok := search(t, x, r, "send email", nil); !ok {
				t.Error("the endpoint answers again, and the search is not fused")
			}
		}
		e.set(errors.New("embed: http://embed.example/v1/embeddings: EOF"), false)
		search(t, x, r, "send email", nil)
		lines := logs.got()
		if len(lines) != 3 || !strings.Contains(lines[0], "no answer within the query timeout (250ms)") || !strings.Contains(lines[1], "again") ||
			!strings.Contains(lines[2], "EOF") || !strings.Contains(lines[0], "endpoint=http://embed.example/v1/embeddings") {
			t.Errorf("log lines %q; want the first failure of each run, naming the endpoint, and the recovery between", lines)
		}
	})
}

// TestNoVectorsYet: Set never waits for the embedder; until a tool has a
// vector, Rank does not ask for the query's, and BM25F answers.
func TestNoVectorsYet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &fakeEmbedder{block: true}
		x, r := fixture(t, e, nil)
		synctest.Wait()
		if r.Ready() {
			t.Error("ready with no vector")
		}
		calls := e.calls
		if got, ok := search(t, x, r, "send email", nil); ok || len(got) != 1 {
			t.Errorf("%v, fused %v; want BM25F's", got, ok)
		}
		if e.calls != calls {
			t.Error("asked for the query's vector with no tool's to compare")
		}
	})
}

// TestReuse: a tool whose text is unchanged is not embedded again, after
// a reload that sets it again, or a removal and return.
func TestReuse(t *testing.T) {
	e := &fakeEmbedder{}
	_, r := fixture(t, e, nil)
	ctx := context.Background()
	r.Wait(ctx)
	if n := len(e.embedded()); n != 4 {
		t.Fatalf("%d texts embedded, want 4", n)
	}
	r.Set("mail", []Doc{{Name: "mail__send_email", Text: Text("mail__send_email", "", "Send an email")}})
	r.Remove("browser")
	r.Wait(ctx)
	r.Set("browser", []Doc{{Name: "browser__screenshot", Text: Text("browser__screenshot", "", "Take a screenshot of the page")}})
	r.Set("mail", []Doc{{Name: "mail__send_email", Text: "send email. Send an email with attachments"}})
	r.Wait(ctx)
	if diff := cmp.Diff([]string{"send email. Send an email with attachments"}, e.embedded()[4:]); diff != "" {
		t.Errorf("texts embedded after the reloads (-want +got):\n%s", diff)
	}
}

// TestSpareVectorsBounded: past MaxSpareVectors, the vectors of tools no
// longer indexed are dropped, the least recently used first.
func TestSpareVectorsBounded(t *testing.T) {
	e := &fakeEmbedder{}
	r := New(e, "m", &Options{MaxSpareVectors: 1})
	defer r.Close()
	ctx := context.Background()
	for _, text := range []string{"a", "b", "c"} {
		r.Set("s", []Doc{{Name: "t", Text: text}})
		r.Wait(ctx)
	}
	r.Set("s", []Doc{{Name: "t", Text: "b"}}) // kept: the last spare
	r.Wait(ctx)
	r.Set("s", []Doc{{Name: "t", Text: "a"}}) // dropped: embedded again
	r.Wait(ctx)
	if diff := cmp.Diff([]string{"a", "b", "c", "a"}, e.embedded()); diff != "" {
		t.Errorf("texts embedded (-want +got):\n%s", diff)
	}
}

// TestRetry: a failed pass is logged once and retried after RetryDelay,
// doubling; Wait returns its error meanwhile.
func TestRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &fakeEmbedder{err: errors.New("connection refused")}
		logs := &logCount{}
		_, r := fixture(t, e, &Options{Logger: slog.New(logs)})
		if err := r.Wait(context.Background()); err == nil || err.Error() != "connection refused" {
			t.Fatalf("Wait: %v, want the pass's error", err)
		}
		start := time.Now()
		synctest.Wait()
		mcptest.PassTime(DefaultRetryDelay + DefaultRetryDelay*2) // two retries, failed
		synctest.Wait()
		if e.calls != 3 {
			t.Errorf("%d calls after %v, want 3", e.calls, time.Since(start))
		}
		e.set(nil, false)
		mcptest.PassTime(DefaultRetryDelay * 4)
		synctest.Wait()
		if !r.Ready() || len(logs.got()) != 1 {
			t.Errorf("ready %v, log lines %q; want ready and one line", r.Ready(), logs.got())
		}
	})
}

func TestText(t *testing.T) {
	for _, tc := range []struct{ name, title, desc, want string }{
		{"fs__read_file", "Read File", "Read the contents.\nMore lines", "read file. Read File Read the contents."},
		{"browser_takeScreenshot", "", "", "browser take Screenshot."},
		{"x__a", "", strings.Repeat("word ", 100), "a. " + strings.TrimSpace(strings.Repeat("word ", 80))},
	} {
		if got := Text(tc.name, tc.title, tc.desc); got != tc.want {
			t.Errorf("Text(%q, %q, %q) = %q, want %q", tc.name, tc.title, tc.desc, got, tc.want)
		}
	}
}

// TestQueriesInFlightBounded: at most MaxQueriesInFlight searches wait for
// their query's vector at once; another ranks by BM25F alone at once,
// asking nothing of the endpoint.
func TestQueriesInFlightBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &fakeEmbedder{}
		x, r := fixture(t, e, nil)
		if err := r.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.set(nil, true)
		e.mu.Lock()
		before := e.calls
		e.mu.Unlock()
		var wg sync.WaitGroup
		for range MaxQueriesInFlight {
			wg.Go(func() { search(t, x, r, "send email", nil) })
		}
		synctest.Wait() // every one waits for its vector
		start := time.Now()
		if got, ok := search(t, x, r, "send email", nil); ok || time.Since(start) != 0 || len(got) != 1 {
			t.Errorf("one search past the bound: %v, fused %v, after %v; want BM25F's at once", got, ok, time.Since(start))
		}
		e.mu.Lock()
		asked := e.calls - before
		e.mu.Unlock()
		if asked != MaxQueriesInFlight {
			t.Errorf("the endpoint was asked %d times, want %d", asked, MaxQueriesInFlight)
		}
		wg.Wait()
		e.set(nil, false)
		if _, ok := search(t, x, r, "send email", nil); !ok {
			t.Error("once the waiting searches are done, a search is not fused")
		}
	})
}
