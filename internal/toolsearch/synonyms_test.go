package toolsearch

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSynonyms: a request in other words than the tool's finds it (a
// phrase of several words too), and a tool with the request's own word
// ranks above one with its synonym.
func TestSynonyms(t *testing.T) {
	x, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Set("web", []Doc{
		{Name: "web__hover", Description: "Hover over an element."},
		{Name: "web__remove_cookie", Description: "Remove a cookie."},
		{Name: "web__delete_cookie", Description: "Delete a cookie."},
	}); err != nil {
		t.Fatal(err)
	}
	for query, want := range map[string]string{
		"mouse over the profile menu": "web__hover",
		"wipe the session cookie":     "web__delete_cookie", // ties between synonyms go by name
		"delete the cookie":           "web__delete_cookie",
		"remove the cookie":           "web__remove_cookie",
	} {
		hits, err := x.Search(query, 3, nil)
		if err != nil || len(hits) == 0 || hits[0].Name != want {
			t.Errorf("Search(%q) = %v, %v; want %s first", query, hits, err, want)
		}
	}
}

// TestSynonymGroupsKeepTheirWords: every word of every member survives
// analysis, so that a member of several words brings in its group only
// when the query holds all of them.
func TestSynonymGroupsKeepTheirWords(t *testing.T) {
	var a analyzer
	for _, group := range synonymGroups {
		for _, member := range group {
			var terms []string
			a.analyze(member, func(term string) { terms = append(terms, term) })
			if words := len(strings.Fields(member)); len(terms) != words {
				t.Errorf("synonym %q of %v analyses to %q: want %d terms", member, group, terms, words)
			}
		}
	}
}

// TestSynonymsOfSeveralWords: "pull request" brings in pr, "pull" alone
// does not, and no query grows past MaxQueryTerms.
func TestSynonymsOfSeveralWords(t *testing.T) {
	has := func(terms []string, want string) bool {
		for _, term := range terms {
			if term == want {
				return true
			}
		}
		return false
	}
	if got := expanded(queryTerms("open a pull request")); !has(got, "pr") {
		t.Errorf("\"open a pull request\" expands to %q, want pr among them", got)
	}
	if got := expanded(queryTerms("pull the latest changes")); has(got, "pr") {
		t.Errorf("\"pull the latest changes\" expands to %q: pr without request", got)
	}
	if got := expanded(queryTerms("look at the page")); has(got, "search") {
		t.Errorf("\"look at the page\" expands to %q", got)
	}
	var words []string
	for i := range MaxQueryTerms - 1 {
		words = append(words, fmt.Sprintf("word%c%c", 'a'+i/26, 'a'+i%26))
	}
	// 31 words and "delete": its synonyms may fill one more term, no more.
	q := withSynonyms(queryTerms(strings.Join(append(words, "delete"), " ")))
	df := make([]int, len(q.terms))
	for i := range df {
		df[i] = 1
	}
	weights := q.weights(df)
	if len(q.terms) != MaxQueryTerms || len(weights) != MaxQueryTerms || weights[MaxQueryTerms-1] != synonymWeight || weights[0] != 1 {
		t.Errorf("%d terms, weights %v; want %d, the last a synonym's", len(q.terms), weights, MaxQueryTerms)
	}
	df[MaxQueryTerms-2] = 0                                                                       // "delete": no doc has it
	if w := q.weights(df); w[MaxQueryTerms-1] != orphanSynonymWeight || w[MaxQueryTerms-2] != 1 { // one synonym found: all of it
		t.Errorf("with delete in no doc, weights %v; want its synonym at %v", w, orphanSynonymWeight)
	}
}

// expanded returns terms and the terms their synonyms bring in.
func expanded(terms []string) []string {
	out, _ := querySynonyms.expand(terms)
	return out
}

// TestOrphanSynonyms: a query's word that no tool has counts through its
// synonyms in full, shared among those some tool has; whether a word is
// such is decided over the visible tools alone, so that a hidden tool
// leaves no trace in the scores.
func TestOrphanSynonyms(t *testing.T) {
	visibleDocs := []Doc{
		{Name: "fs__delete_file", Description: "Delete a file."},
		{Name: "fs__read_file", Description: "Read a file."},
	}
	x := mustNew(t, nil)
	mustSet(t, x, "fs", append([]Doc{{Name: "fs__erase_disk", Description: "Erase a whole disk."}}, visibleDocs...))
	y := mustNew(t, nil)
	mustSet(t, y, "fs", visibleDocs)

	hidden := func(name string) bool { return name != "fs__erase_disk" }
	got := mustSearch(t, x, "erase the file", 5, hidden)
	if diff := cmp.Diff(mustSearch(t, y, "erase the file", 5, nil), got); diff != "" {
		t.Fatalf("erase the file, erase_disk hidden: hits differ from an index without it (-want +got):\n%s", diff)
	}
	if len(got) != 2 || got[0].Name != "fs__delete_file" {
		t.Fatalf("erase the file = %v, want fs__delete_file first: no visible tool says erase, so delete counts in full", got)
	}
	// "file" is in both; delete_file's lead is delete's: a whole word's worth.
	lead := got[0].Score - got[1].Score
	withWord := mustSearch(t, y, "delete the file", 5, nil)
	if want := withWord[0].Score - withWord[1].Score; math.Abs(lead-want) > 1e-9 {
		t.Errorf("erase (orphan) gives delete_file a lead of %v, want %v, what delete itself gives", lead, want)
	}
	// With erase_disk visible, erase is the query's own word again, and
	// delete a synonym at synonymWeight.
	if got := mustSearch(t, x, "erase the file", 5, nil); got[0].Name != "fs__erase_disk" {
		t.Errorf("erase the file, all visible = %v, want fs__erase_disk first", got)
	}
}
