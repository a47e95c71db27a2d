package toolsearch

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
)

func mustNew(t testing.TB, opts *Options) *Index {
	t.Helper()
	x, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func mustSet(t testing.TB, x *Index, server string, docs []Doc) {
	t.Helper()
	if err := x.Set(server, docs); err != nil {
		t.Fatal(err)
	}
}

func mustSearch(t testing.TB, x *Index, query string, limit int, visible func(string) bool) []Hit {
	t.Helper()
	hits, err := x.Search(query, limit, visible)
	if err != nil {
		t.Fatalf("Search(%q): %v", query, err)
	}
	return hits
}

func names(hits []Hit) []string {
	var n []string
	for _, h := range hits {
		n = append(n, h.Name)
	}
	return n
}

func TestSearchBadInput(t *testing.T) {
	x := mustNew(t, nil)
	mustSet(t, x, "fs", []Doc{{Name: "fs__read_file", Description: "Read a file."}})
	tests := []struct {
		name  string
		query string
		limit int
		want  error
	}{
		{"empty query", "", 5, ErrEmptyQuery},
		{"whitespace query", " \t\n ", 5, ErrEmptyQuery},
		{"only stop words", "the of and", 5, ErrEmptyQuery},
		{"only punctuation", "?!… — ()", 5, ErrEmptyQuery},
		{"100 KB of stop words", strings.Repeat("the of and ", 10240), 5, ErrEmptyQuery},
		{"limit 0", "read", 0, ErrBadLimit},
		{"limit -1", "read", -1, ErrBadLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits, err := x.Search(tt.query, tt.limit, nil)
			if !errors.Is(err, tt.want) || hits != nil {
				t.Fatalf("Search = %v, %v; want %v", hits, err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "toolsearch: search: ") {
				t.Errorf("error %q lacks its op", err)
			}
			if len(err.Error()) > 200 {
				t.Errorf("error is %d bytes: it must not echo the query", len(err.Error()))
			}
		})
	}
	t.Run("limit 10000 gives every match", func(t *testing.T) {
		if got := names(mustSearch(t, x, "read", 10000, nil)); !slices.Equal(got, []string{"fs__read_file"}) {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("longest query", func(t *testing.T) {
		mustSearch(t, x, strings.Repeat("f", MaxQueryBytes-5)+" read", 5, nil)
	})
}

// TestSearchCutsALongQuery: a query over MaxQueryBytes is searched by its
// first words, as a model's pasted request is; the words past the cut do not
// count.
func TestSearchCutsALongQuery(t *testing.T) {
	x := mustNew(t, nil)
	mustSet(t, x, "fs", []Doc{{Name: "fs__read_file", Description: "Read a file."}})
	mustSet(t, x, "web", []Doc{{Name: "web__take_screenshot", Description: "Capture the page."}})
	pad := strings.Repeat("please ", MaxQueryBytes/len("please "))
	for _, tc := range []struct {
		name, query string
		want        []string
	}{
		{"100 KB request", "read the file " + strings.Repeat("and then ", 12<<10), []string{"fs__read_file"}},
		{"words past the cut", "read a file " + pad + "take a screenshot", []string{"fs__read_file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(mustSearch(t, x, tc.query, 5, nil)); !slices.Equal(got, tc.want) {
				t.Errorf("found %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCutQuery(t *testing.T) {
	const max = MaxQueryBytes
	// words is n bytes of short words, as a pasted request has them.
	words := func(n int) string { return strings.Repeat("abc ", max/4+1)[:n] }
	for _, tc := range []struct {
		name, query, want string
	}{
		{"short", "read a file", "read a file"},
		{"exactly the limit", words(max), words(max)},
		{"a space at the cut", words(max) + "b", words(max)},
		{"inside a word", words(max-3) + " read", words(max-3) + " "},
		{"before a joiner", words(max-5) + " read_file", words(max-5) + " read"},
		{"after a joiner", words(max-6) + " read_file", words(max-6) + " read_"},
		{"after punctuation", words(max-4) + "...read", words(max-4) + "..."},
		{"inside a UTF-8 sequence", words(max-1) + " é", words(max-1) + " "},
		{"inside a combining mark", words(max-3) + " e\u0301t", words(max-3) + " "},
		{"invalid UTF-8 at the cut", words(max-1) + "\xff" + "bc", words(max-1) + "\xff"},
		// A word no term comes from takes no room.
		{"a long word first", strings.Repeat("x", 3000) + " time", "  time"},
		{"a long word among others", "what " + strings.Repeat("x", max) + " time", "what   time"},
		{"one word", strings.Repeat("a", max+10), " "},
		{"one word of 2-byte runes", strings.Repeat("é", max), " "},
		{"one word of 3-byte runes", strings.Repeat("語", max), " "},
		{"long words and invalid UTF-8 kept", strings.Repeat("y", max) + "\xff" + strings.Repeat("z", 81) + " ok", " \xff  ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := CutQuery(tc.query)
			if got != tc.want || cut != (len(tc.query) > max) {
				t.Errorf("CutQuery = %.40q… (%d bytes), %v; want %.40q… (%d bytes), %v", tail(got), len(got), cut, tail(tc.want), len(tc.want), len(tc.query) > max)
			}
			if !utf8.ValidString(got) && utf8.ValidString(tc.query) {
				t.Errorf("CutQuery cut inside a UTF-8 sequence")
			}
		})
	}
}

// tail is the end of s, where a cut shows.
func tail(s string) string { return s[max(0, len(s)-12):] }

// nameVsDescription is a tool called what the query asks for, and one that
// only says it in its description.
var nameVsDescription = []Doc{
	{Name: "tracker__create_issue", Description: "Open a ticket for a bug or a feature."},
	{Name: "tracker__open_ticket", Description: "Create an issue in the tracker; the issue gets a number."},
}

func TestRankingNameBeatsDescription(t *testing.T) {
	x := mustNew(t, nil)
	mustSet(t, x, "tracker", nameVsDescription)
	for _, q := range []string{"create issue", "create_issue", "Create an issue", "createIssue"} {
		if got := names(mustSearch(t, x, q, 5, nil)); len(got) == 0 || got[0] != "tracker__create_issue" {
			t.Errorf("%q ranks %v; want tracker__create_issue first", q, got)
		}
	}
}

// TestRankingWholeToolName checks that the <tool> part of a public name is a
// term: of two tools with the same words, the one named as the query is
// written wins (a tie would put the other first, by name).
func TestRankingWholeToolName(t *testing.T) {
	x := mustNew(t, nil)
	mustSet(t, x, "s", []Doc{
		{Name: "a__issue_create", Description: "Make an issue."},
		{Name: "b__create_issue", Description: "Make an issue."},
	})
	for _, q := range []string{"create_issue", "createIssue"} {
		if got := names(mustSearch(t, x, q, 5, nil)); len(got) != 2 || got[0] != "b__create_issue" {
			t.Errorf("%q ranks %v; want b__create_issue first", q, got)
		}
	}
}

func TestRankingFieldWeightsMatter(t *testing.T) {
	opts := DefaultOptions()
	opts.Name.Weight, opts.Description.Weight = 0.1, 3
	x := mustNew(t, opts)
	mustSet(t, x, "tracker", nameVsDescription)
	if got := names(mustSearch(t, x, "create issue", 5, nil)); len(got) == 0 || got[0] != "tracker__open_ticket" {
		t.Errorf("with the description weighted above the name, got %v; want tracker__open_ticket first", got)
	}

	opts = DefaultOptions()
	opts.ParamNames.Weight = 0
	x = mustNew(t, opts)
	mustSet(t, x, "s", []Doc{{Name: "s__tool", InputSchema: map[string]any{"properties": map[string]any{"owner": map[string]any{}}}}})
	if got := mustSearch(t, x, "owner", 5, nil); len(got) != 0 {
		t.Errorf("a term only in a field of weight 0 matched: %v", got)
	}
}

func TestRankingLengthNormalisation(t *testing.T) {
	docs := []Doc{
		// Named so that a tie would put the long one first.
		{Name: "b__short", Description: "Deploy the service."},
		{Name: "a__long", Description: "Deploy the service. " + strings.Repeat("Many other words describe more things here. ", 20)},
	}
	x := mustNew(t, nil)
	mustSet(t, x, "s", docs)
	if got := names(mustSearch(t, x, "deploy", 5, nil)); !slices.Equal(got, []string{"b__short", "a__long"}) {
		t.Errorf("B 0.75: got %v; want the short description first", got)
	}
	opts := DefaultOptions()
	opts.Description.B = 0
	x = mustNew(t, opts)
	mustSet(t, x, "s", docs)
	hits := mustSearch(t, x, "deploy", 5, nil)
	if len(hits) != 2 || hits[0].Score != hits[1].Score {
		t.Errorf("B 0: got %v; want equal scores", hits)
	}
}

func TestRankingTies(t *testing.T) {
	x := mustNew(t, nil)
	same := func(name string) Doc { return Doc{Name: name, Description: "Send an email."} }
	mustSet(t, x, "b", []Doc{same("zeta"), same("alpha"), same("dup")})
	mustSet(t, x, "a", []Doc{same("mid"), same("dup")})
	hits := mustSearch(t, x, "email", 10, nil)
	want := []Hit{{"alpha", "b", 0}, {"dup", "a", 0}, {"dup", "b", 0}, {"mid", "a", 0}, {"zeta", "b", 0}}
	first := hits[0].Score
	for i := range hits {
		if hits[i].Score != first {
			t.Fatalf("scores differ: %v", hits)
		}
		hits[i].Score = 0
	}
	if diff := cmp.Diff(want, hits); diff != "" {
		t.Errorf("ties (-want +got):\n%s", diff)
	}
}

func TestSearchInputSchema(t *testing.T) {
	schema := `{"type":"object","properties":{
		"repo":{"type":"object","description":"Where the workflow lives","properties":{"owner":{"type":"string"}}},
		"labels":{"type":"array","items":{"type":"string","enum":["flaky","nightly"]}},
		"ref":{"anyOf":[{"$ref":"#/$defs/sha"},{"type":"string","title":"Branch or tag"}]}},
		"$defs":{"sha":{"type":"string","description":"A commit hash"}}}`
	x := mustNew(t, nil)
	mustSet(t, x, "ci", []Doc{
		{Name: "ci__run", InputSchema: json.RawMessage(schema)},
		{Name: "ci__other", Description: "Something else."},
	})
	for _, q := range []string{"owner", "workflow", "nightly", "branch", "commit hash", "labels"} {
		if got := names(mustSearch(t, x, q, 5, nil)); !slices.Equal(got, []string{"ci__run"}) {
			t.Errorf("%q found %v; want ci__run from its input schema", q, got)
		}
	}
}

func TestSearchInputSchemaTypes(t *testing.T) {
	schemas := map[string]any{
		"map":        map[string]any{"properties": map[string]any{"owner": map[string]any{}}},
		"raw":        json.RawMessage(`{"properties":{"owner":{}}}`),
		"bytes":      []byte(`{"properties":{"owner":{}}}`),
		"jsonschema": &jsonschema.Schema{Properties: map[string]*jsonschema.Schema{"owner": {Type: "string"}}},
	}
	for name, schema := range schemas {
		x := mustNew(t, nil)
		mustSet(t, x, "s", []Doc{{Name: "s__a", InputSchema: schema}, {Name: "s__b"}})
		if got := names(mustSearch(t, x, "owner", 5, nil)); !slices.Equal(got, []string{"s__a"}) {
			t.Errorf("%s: got %v; want s__a from its schema", name, got)
		}
	}
}

func TestSetBadInput(t *testing.T) {
	x := mustNew(t, nil)
	mustSet(t, x, "s", []Doc{{Name: "s__keep", Description: "kept"}})
	tests := []struct {
		name   string
		server string
		docs   []Doc
	}{
		{"empty server", "", []Doc{{Name: "x"}}},
		{"empty name", "s", []Doc{{Name: "s__a"}, {Name: ""}}},
		{"duplicate name", "s", []Doc{{Name: "s__a"}, {Name: "s__b"}, {Name: "s__a"}}},
		{"schema not an object", "s", []Doc{{Name: "s__a", InputSchema: json.RawMessage(`[1]`)}}},
		{"schema not JSON", "s", []Doc{{Name: "s__a", InputSchema: []byte(`{`)}}},
		{"schema not encodable", "s", []Doc{{Name: "s__a", InputSchema: func() {}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := x.Set(tt.server, tt.docs)
			if !errors.Is(err, ErrBadDoc) || !strings.HasPrefix(err.Error(), "toolsearch: set: ") {
				t.Fatalf("Set = %v; want ErrBadDoc with its op", err)
			}
			err = x.Replace(map[string][]Doc{tt.server: tt.docs})
			if !errors.Is(err, ErrBadDoc) {
				t.Fatalf("Replace = %v; want ErrBadDoc", err)
			}
			if got := names(mustSearch(t, x, "kept", 5, nil)); x.Len() != 1 || !slices.Equal(got, []string{"s__keep"}) {
				t.Fatalf("a failed change changed the index: Len %d, %v", x.Len(), got)
			}
		})
	}
}

func TestNewBadOptions(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Options)
	}{
		{"K1 zero", func(o *Options) { o.K1 = 0 }},
		{"K1 NaN", func(o *Options) { o.K1 = nan() }},
		{"negative weight", func(o *Options) { o.Title.Weight = -1 }},
		{"B above 1", func(o *Options) { o.Description.B = 1.5 }},
		{"B NaN", func(o *Options) { o.Name.B = nan() }},
		{"all weights zero", func(o *Options) { *o = Options{K1: 1} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			tt.change(o)
			if _, err := New(o); !errors.Is(err, ErrBadOptions) {
				t.Fatalf("New = %v; want ErrBadOptions", err)
			}
		})
	}
}

func nan() float64 { var z float64; return z / z }

func TestSetRemoveLen(t *testing.T) {
	x := mustNew(t, nil)
	mustSet(t, x, "a", genServer("a", 3, 1))
	mustSet(t, x, "b", genServer("b", 4, 2))
	if x.Len() != 7 {
		t.Fatalf("Len = %d, want 7", x.Len())
	}
	mustSet(t, x, "a", []Doc{{Name: "a__only", Description: "unique zebra"}})
	mustSet(t, x, "c", nil)
	if x.Len() != 5 {
		t.Fatalf("after replacing a: Len = %d, want 5", x.Len())
	}
	if got := names(mustSearch(t, x, "zebra", 5, nil)); !slices.Equal(got, []string{"a__only"}) {
		t.Fatalf("zebra: %v", got)
	}
	x.Remove("a")
	x.Remove("nobody")
	if got := mustSearch(t, x, "zebra", 5, nil); x.Len() != 4 || got == nil || len(got) != 0 {
		t.Fatalf("after Remove: Len %d, %v", x.Len(), got)
	}
}

// TestVisible checks that a hidden tool is never returned and leaves no
// trace in the scores: a search with visible gives exactly the hits of an
// index that holds only the visible tools.
func TestVisible(t *testing.T) {
	corpus := genCorpus(8, 30, 7)
	x := mustNew(t, nil)
	if err := x.Replace(corpus); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		hidden := make(map[string]bool)
		only := make(map[string][]Doc)
		for server, docs := range corpus {
			for _, d := range docs {
				if r.IntN(3) == 0 {
					hidden[d.Name] = true
				} else {
					only[server] = append(only[server], d)
				}
			}
		}
		y := mustNew(t, nil)
		if err := y.Replace(only); err != nil {
			t.Fatal(err)
		}
		q := genQuery(r)
		got := mustSearch(t, x, q, 20, func(name string) bool { return !hidden[name] })
		for _, h := range got {
			if hidden[h.Name] {
				t.Fatalf("%q returned hidden %s", q, h.Name)
			}
		}
		if diff := cmp.Diff(mustSearch(t, y, q, 20, nil), got); diff != "" {
			t.Fatalf("%q: hits with visible differ from an index of the visible tools (-want +got):\n%s", q, diff)
		}
	}
	if got := mustSearch(t, x, "list", 5, func(string) bool { return false }); got == nil || len(got) != 0 {
		t.Fatalf("nothing visible, got %v", got)
	}
}

// TestQueryTermsAreCapped: only the first MaxQueryTerms distinct terms of a
// query count, so a long query ranks as its beginning does.
func TestQueryTermsAreCapped(t *testing.T) {
	var words []string
	for i := range MaxQueryTerms + 10 {
		words = append(words, fmt.Sprintf("word%c%c", 'a'+i/26, 'a'+i%26))
	}
	if got := queryTerms(strings.Join(words, " ")); len(got) != MaxQueryTerms {
		t.Fatalf("%d terms counted, want %d", len(got), MaxQueryTerms)
	}
	x, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Set("s", []Doc{{Name: "s__first", Description: words[0]}, {Name: "s__late", Description: words[MaxQueryTerms+5]}}); err != nil {
		t.Fatal(err)
	}
	hits, err := x.Search(strings.Join(words, " "), 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Name != "s__first" {
		t.Errorf("hits %v, want only s__first: a term past the cap counts", hits)
	}
}
