package catalog

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSuggest(t *testing.T) {
	// Each tool is its public name and its original name.
	tools := [][2]string{
		{"filesystem__read_text_file", "read_text_file"},
		{"filesystem__read_file", "read_file"},
		{"filesystem__write_file", "write_file"},
		{"backup__read_text_file", "read_text_file"},
		{"github__create_issue", "create_issue"},
		{"github__create_issue_b2b06633", "create_issue"},
		{"clock__now", "now"},
		{"raw_tool", "raw_tool"},
	}
	names := func(t [2]string) (string, string) { return t[0], t[1] }
	for _, tc := range []struct {
		given string
		want  []string
	}{
		{"read_text_file", []string{"backup__read_text_file", "filesystem__read_text_file"}},
		{"Read-Text-File", []string{"backup__read_text_file", "filesystem__read_text_file"}},
		{"readTextFile", []string{"backup__read_text_file", "filesystem__read_text_file"}},
		{"filesystem_read_text_file", []string{"filesystem__read_text_file"}},
		{"filesystem.read_text_file", []string{"filesystem__read_text_file"}},
		{"filesystem/read_text_file", []string{"filesystem__read_text_file"}},
		{"filesystem:read_text_file", []string{"filesystem__read_text_file"}},
		{"FILESYSTEM__READ_TEXT_FILE", []string{"filesystem__read_text_file"}},
		{"fs__read_text_file", []string{"backup__read_text_file", "filesystem__read_text_file"}},
		{"fs/write_file", []string{"filesystem__write_file"}},
		{"filesystem__read_txt_file", []string{"filesystem__read_text_file", "backup__read_text_file", "filesystem__read_file"}},
		{"filesystem__wirte_file", []string{"filesystem__write_file"}},
		{"clock__nwo", []string{"clock__now"}},
		{"create_issue", []string{"github__create_issue", "github__create_issue_b2b06633"}},
		{"raw-tool", []string{"raw_tool"}},
		// A better match leaves out the others: no near miss (read_text_file).
		{"read_file", []string{"filesystem__read_file"}},
		{"delete_everything", nil},
		{"clock__later", nil},
		{"", nil},
		{"__", nil},
		{strings.Repeat("x", 10_000), nil},
	} {
		got := Suggest(tc.given, tools, names)
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Suggest(%.40q) (-want +got):\n%s", tc.given, diff)
		}
	}
}

// TestSuggestAtMost: of many that fit, the best MaxSuggestions, best
// first.
func TestSuggestAtMost(t *testing.T) {
	tools := []string{"a__search", "b__search", "c__search", "d__search", "a__Search", "e__serch"}
	names := func(t string) (string, string) { _, original, _ := strings.Cut(t, "__"); return t, original }
	want := []string{"a__search", "b__search", "c__search"}
	if diff := cmp.Diff(want, Suggest("search", tools, names)); diff != "" {
		t.Errorf("Suggest(search) (-want +got):\n%s", diff)
	}
	want = []string{"a__Search", "a__search", "b__search"}
	if diff := cmp.Diff(want, Suggest("SEARCH", tools, names)); diff != "" {
		t.Errorf("Suggest(SEARCH) (-want +got):\n%s", diff)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b  string
		limit int
		want  int
	}{
		{"now", "now", 3, 0},
		{"now", "nwo", 3, 1},
		{"readtxtfile", "readtextfile", 3, 1},
		{"kitten", "sitting", 3, 3},
		{"kitten", "sitting", 2, 3},
		{"abc", "abcdefgh", 3, 4},
		{"", "ab", 3, 2},
	} {
		if got := editDistance(tc.a, tc.b, tc.limit); got != tc.want {
			t.Errorf("editDistance(%q, %q, %d) = %d, want %d", tc.a, tc.b, tc.limit, got, tc.want)
		}
	}
}
