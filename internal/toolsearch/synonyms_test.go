package toolsearch

import "testing"

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
