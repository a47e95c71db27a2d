package toolsearch

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func terms(text string) []string {
	var a analyzer
	var got []string
	a.analyze(text, func(t string) { got = append(got, t) })
	return got
}

func TestAnalyze(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"snake case", "list_files", []string{"list", "file", "listfil"}},
		{"camel case joins alike", "listFiles", []string{"list", "file", "listfil"}},
		{"one word joins alike", "listfiles", []string{"listfil"}},
		{"kebab case", "read-text-file", []string{"read", "text", "file", "readtextfil"}},
		{"camel case", "getUserInfo", []string{"get", "user", "info", "getuserinfo"}},
		{"acronym run", "parseHTTPServer", []string{"pars", "http", "server", "parsehttpserv"}},
		{"dots", "browser.click", []string{"browser", "click", "browserclick"}},
		{"digits", "oauth2Token", []string{"oauth", "2", "token", "oauth2token"}},
		{"prefixed name", "github__create_issue", []string{"github", "creat", "issu", "githubcreateissu"}},
		{"trailing joiners", "__private_thing__.", []string{"privat", "thing", "privateth"}},
		{"stemming", "Creating repositories and searching issues", []string{"creat", "repositori", "search", "issu"}},
		{"stop words", "Get all of the files in the directory", []string{"get", "file", "directori"}},
		{"only stop words", "the and of", nil},
		{"punctuation", "What's new? (a lot!)", []string{"new", "lot"}},
		{"unicode lowercase", "Ärger ÜBER Straße", []string{"ärger", "über", "straße"}},
		{"cyrillic", "Файл Поиск", []string{"файл", "поиск"}},
		{"caseless script is one word", "搜索文件", []string{"搜索文件"}},
		{"combining mark stays", "cafe\u0301", []string{"cafe\u0301"}},
		{"long blob dropped", strings.Repeat("x", 81) + " ok", []string{"ok"}},
		{"invalid utf8 separates", "file\xffname", []string{"file", "name"}},
		{"whole chunk that is a stop word", "iT", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, terms(tt.text)); diff != "" {
				t.Errorf("terms(%q) (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

func TestWhole(t *testing.T) {
	tests := []struct{ ident, want string }{
		{"create_issue", "createissu"},
		{"browserClick", "browserclick"},
		{"search", ""},
		{"two words", ""},
		{"", ""},
	}
	for _, tt := range tests {
		var a analyzer
		if got := a.whole(tt.ident); got != tt.want {
			t.Errorf("whole(%q) = %q, want %q", tt.ident, got, tt.want)
		}
	}
}

// FuzzAnalyze checks that analysis never panics, gives well-formed terms,
// gives the same terms with and without the writer's cache, and is local:
// the terms of two texts joined by a space are the terms of each.
func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{"list_files", "getHTTPServer_v2", "Ärger ÜBER", "a\u0301b", "x.y-z__w", "\xff\xfe", "İstanbul", "ǅungla", "ⅫⅪ", ""} {
		f.Add(s, "read the file")
	}
	cached := analyzer{cache: make(map[string]string)}
	f.Fuzz(func(t *testing.T, a, b string) {
		got := terms(a)
		for _, term := range got {
			if term == "" || len(term) > maxTermBytes || !utf8.ValidString(term) || strings.ContainsFunc(term, unicode.IsSpace) {
				t.Fatalf("terms(%q) has a bad term %q", a, term)
			}
		}
		var fromCache []string
		for range 2 { // the second pass reads the cache
			fromCache = fromCache[:0]
			cached.analyze(a, func(t string) { fromCache = append(fromCache, t) })
			if diff := cmp.Diff(got, fromCache, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("cached terms of %q differ (-uncached +cached):\n%s", a, diff)
			}
		}
		joined := append(terms(a), terms(b)...)
		if diff := cmp.Diff(joined, terms(a+" "+b), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("terms(%q + \" \" + %q) are not the terms of each (-want +got):\n%s", a, b, diff)
		}
	})
}

// TestASCIIFastPath checks the ASCII shortcuts of the rune tests against
// the unicode package.
func TestASCIIFastPath(t *testing.T) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		if got, want := isWordRune(r), unicode.IsLetter(r) || unicode.IsNumber(r); got != want {
			t.Errorf("isWordRune(%q) = %v, want %v", r, got, want)
		}
		if !isWordRune(r) {
			continue
		}
		want := classOther
		switch {
		case unicode.IsUpper(r):
			want = classUpper
		case unicode.IsLower(r):
			want = classLower
		case unicode.IsNumber(r):
			want = classDigit
		}
		if got := classOf(r); got != want {
			t.Errorf("classOf(%q) = %v, want %v", r, got, want)
		}
	}
}
