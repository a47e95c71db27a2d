package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// maxTermBytes bounds one term. Public names are at most 64 characters, so a
// longer run is a blob (base64, a hash, a URL), not a word anyone asks for.
const maxTermBytes = 80

// maxCacheTerms bounds the writer's term cache; past it the cache starts
// afresh (terms already in segments stay valid).
const maxCacheTerms = 1 << 16

// analyzer turns text into terms: it splits text into chunks of word
// characters and joiners (_ - .), splits each chunk into words at joiners,
// case changes and letter-digit changes, lowercases, drops English stop
// words and stems words made only of ASCII letters (Porter2). A chunk of
// more than one word also yields its words joined, normalised the same way,
// so "list_files", "list-files", "listFiles" and "listfiles" share a term and
// a name can be found as written.
//
// The same analysis runs on documents and queries, so both sides agree.
type analyzer struct {
	// cache maps a raw lowercase word to its term, so a build stems each
	// distinct word once and every segment shares one copy of each term
	// string. Nil means no cache (queries: they are short, and the cache
	// belongs to the writer).
	cache map[string]string
}

// analyze calls emit for each term of text, in order of appearance.
func (a *analyzer) analyze(text string, emit func(term string)) {
	var words []string
	forEachChunk(text, func(chunk string) {
		words = words[:0]
		forEachWord(chunk, func(word string) {
			words = append(words, word)
			if t := a.term(word); t != "" {
				emit(t)
			}
		})
		if len(words) > 1 {
			if t := a.term(strings.Join(words, "")); t != "" {
				emit(t)
			}
		}
	})
}

// term normalises one word or whole chunk: lowercase, then an English stop
// word gives "" and a word of ASCII letters is stemmed.
func (a *analyzer) term(raw string) string {
	if len(raw) > maxTermBytes {
		return ""
	}
	lower := strings.ToLower(raw)
	if t, ok := a.cache[lower]; ok {
		return t
	}
	t := lower
	if asciiLetters(lower) {
		if english.IsStopWord(lower) {
			t = ""
		} else {
			t = english.Stem(lower, true)
		}
	}
	if a.cache != nil {
		if len(a.cache) >= maxCacheTerms {
			clear(a.cache)
		}
		// Never keep a slice of the caller's text; segments share the
		// cached copy of each term.
		key := strings.Clone(lower)
		if t == lower {
			t = key
		}
		a.cache[key] = t
	}
	return t
}

// asciiLetters reports whether s is non-empty and only a-z.
func asciiLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return s != ""
}

// isJoiner reports whether r joins the words of an identifier.
func isJoiner(r rune) bool { return r == '_' || r == '-' || r == '.' }

// isWordRune reports whether r belongs to a word: a letter, a digit or a
// combining mark.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r) || isMark(r)
}

// isMark reports whether r is a combining mark, which belongs to the word
// before it.
func isMark(r rune) bool { return r >= utf8.RuneSelf && unicode.Is(unicode.Mn, r) }

// forEachChunk calls fn for each maximal run of word runes and joiners,
// without leading or trailing joiners ("list_files.", "v2.0"). Invalid UTF-8
// separates chunks.
func forEachChunk(text string, fn func(chunk string)) {
	start := -1
	flush := func(end int) {
		if start >= 0 {
			if c := strings.TrimFunc(text[start:end], isJoiner); c != "" {
				fn(c)
			}
			start = -1
		}
	}
	for i, r := range text {
		if (isWordRune(r) || isJoiner(r)) && r != utf8.RuneError {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(text))
}

// runeClass is what decides where a chunk splits into words.
type runeClass uint8

const (
	classNone  runeClass = iota // start of a word
	classLower                  // a lowercase letter
	classUpper                  // an uppercase or titlecase letter
	classOther                  // a letter without case (CJK, Arabic, ...)
	classDigit
)

func classOf(r rune) runeClass {
	switch {
	case 'a' <= r && r <= 'z':
		return classLower
	case 'A' <= r && r <= 'Z':
		return classUpper
	case '0' <= r && r <= '9':
		return classDigit
	case unicode.IsUpper(r) || unicode.IsTitle(r):
		return classUpper
	case unicode.IsLower(r):
		return classLower
	case unicode.IsNumber(r):
		return classDigit
	default:
		return classOther
	}
}

// forEachWord calls fn for each word of a chunk: "getHTTPServer_v2" gives
// get, HTTP, Server, v, 2. Words split at joiners, between a lowercase or
// caseless letter and an uppercase one, before the last capital of a run
// followed by a lowercase letter, and between letters and digits. A
// combining mark stays with the rune before it.
func forEachWord(chunk string, fn func(word string)) {
	start, prev := -1, classNone
	for i, r := range chunk {
		if isJoiner(r) {
			if start >= 0 {
				fn(chunk[start:i])
			}
			start, prev = -1, classNone
			continue
		}
		if isMark(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		cur := classOf(r)
		if start >= 0 && boundary(prev, cur, chunk[i:]) {
			fn(chunk[start:i])
			start = -1
		}
		if start < 0 {
			start = i
		}
		prev = cur
	}
	if start >= 0 {
		fn(chunk[start:])
	}
}

// boundary reports whether a word ends before the rune that starts rest,
// whose class is cur, after a rune of class prev.
func boundary(prev, cur runeClass, rest string) bool {
	switch {
	case prev == classNone:
		return false
	case (prev == classDigit) != (cur == classDigit):
		return true
	case cur == classUpper && (prev == classLower || prev == classOther):
		return true
	case cur == classUpper && prev == classUpper:
		// "HTTPServer": the S starts a word because e follows it.
		_, size := utf8.DecodeRuneInString(rest)
		for _, next := range rest[size:] {
			if isMark(next) {
				continue
			}
			return classOf(next) == classLower
		}
	}
	return false
}

// whole returns the whole-chunk term of ident if ident is one chunk of more
// than one word ("create_issue"), else "". A one-word ident is already a
// word term of any text it is part of.
func (a *analyzer) whole(ident string) string {
	chunks := 0
	var words []string
	forEachChunk(ident, func(chunk string) {
		chunks++
		forEachWord(chunk, func(word string) { words = append(words, word) })
	})
	if chunks != 1 || len(words) < 2 {
		return ""
	}
	return a.term(strings.Join(words, ""))
}
