package toolsearch

import (
	"fmt"
	"strings"
	"testing"
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
	if got := querySynonyms.expand(queryTerms("open a pull request")); !has(got, "pr") {
		t.Errorf("\"open a pull request\" expands to %q, want pr among them", got)
	}
	if got := querySynonyms.expand(queryTerms("pull the latest changes")); has(got, "pr") {
		t.Errorf("\"pull the latest changes\" expands to %q: pr without request", got)
	}
	if got := querySynonyms.expand(queryTerms("look at the page")); has(got, "search") {
		t.Errorf("\"look at the page\" expands to %q", got)
	}
	var words []string
	for i := range MaxQueryTerms - 1 {
		words = append(words, fmt.Sprintf("word%c%c", 'a'+i/26, 'a'+i%26))
	}
	// 31 words and "delete": its synonyms may fill one more term, no more.
	terms, weights := withSynonyms(queryTerms(strings.Join(append(words, "delete"), " ")))
	if len(terms) != MaxQueryTerms || len(weights) != MaxQueryTerms || weights[MaxQueryTerms-1] != synonymWeight || weights[0] != 1 {
		t.Errorf("%d terms, weights %v; want %d, the last a synonym's", len(terms), weights, MaxQueryTerms)
	}
}
