package pins

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// maxSignalMatches bounds how many matches of one kind [Suspicious] looks
// at in a description, so that a megabyte of tags costs little.
const maxSignalMatches = 100

var (
	// suspiciousTag matches tags that mark text as instructions to a
	// model: <IMPORTANT>, <system>, [INST], <<SYS>>, <|im_start|> and kin.
	suspiciousTag = regexp.MustCompile(`(?i)<\s*/?\s*(important|system|instructions?|critical|secret|hidden|admin|assistant|user|prompt)\b[^<>]{0,100}>` +
		`|\[/?INST\]|<</?SYS>>|<\|im_(?:start|end)\|>`)
	// suspiciousPhrase matches phrases that tell a model to set aside what
	// it was told, or to keep something from its user.
	suspiciousPhrase = regexp.MustCompile(`(?i)\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|above|earlier)` +
		`|\b(?:do\s+not|don't|never)\s+(?:tell|inform|mention\s+(?:this\s+)?to|reveal\s+(?:this\s+)?to|notify|alert)\s+the\s+user` +
		`|\bwithout\s+(?:telling|informing|notifying)\s+the\s+user`)
	// homePath matches file paths under a user's home directory.
	homePath = regexp.MustCompile(`~/[^\s"'<>]*|\$HOME/[^\s"'<>]*|%USERPROFILE%\\[^\s"'<>]*` +
		`|/home/[^/\s"'<>]+/[^\s"'<>]*|/Users/[^/\s"'<>]+/[^\s"'<>]*|(?i:[a-z]:\\Users\\)[^\s"'<>]*`)
)

// invisible reports whether r is a zero-width or bidirectional control
// character (U+200B–U+200F, U+202A–U+202E, U+2066–U+2069, U+FEFF), or a
// Unicode tag character (U+E0000–U+E007F), which hide text from a person
// reading a description but not from a model.
func invisible(r rune) bool {
	return r >= 0x200B && r <= 0x200F || r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 ||
		r == 0xFEFF || r >= 0xE0000 && r <= 0xE007F
}

// Suspicious returns why the description new, replacing old, looks like an
// injection of instructions for the model: for each tag, phrase and home
// directory path that new has more often than old, and each kind of
// invisible character it adds, a reason quoting it. Nil means nothing
// looks suspicious. It is a signal for a person, never a verdict: a
// legitimate description may mention ~/.config, and an injection need use
// none of these.
func Suspicious(old, new string) []string {
	var reasons []string
	for _, k := range []struct {
		what string
		re   *regexp.Regexp
		trim string // trailing punctuation that ends a sentence, not a path
	}{
		{"tag", suspiciousTag, ""},
		{"phrase", suspiciousPhrase, ""},
		{"path under a home directory", homePath, ".,;:!?)"},
	} {
		had, reported := counts(k.re, old, k.trim), map[string]bool{}
		for _, m := range k.re.FindAllString(new, maxSignalMatches) {
			m = strings.TrimRight(m, k.trim)
			key := normalize(m)
			if had[key] > 0 {
				had[key]--
				continue
			}
			if !reported[key] {
				reported[key] = true
				reasons = append(reasons, fmt.Sprintf("adds %s %q", k.what, clip(m)))
			}
		}
	}
	oldInvisible := map[rune]bool{}
	for _, r := range old {
		if invisible(r) {
			oldInvisible[r] = true
		}
	}
	seen := map[rune]bool{}
	for _, r := range new {
		if invisible(r) && !oldInvisible[r] && !seen[r] {
			seen[r] = true
			reasons = append(reasons, fmt.Sprintf("adds invisible character U+%04X", r))
			if len(seen) >= maxSignalMatches {
				break
			}
		}
	}
	return reasons
}

func counts(re *regexp.Regexp, s, trim string) map[string]int {
	c := map[string]int{}
	for _, m := range re.FindAllString(s, maxSignalMatches) {
		c[normalize(strings.TrimRight(m, trim))]++
	}
	return c
}

// normalize makes matches that differ only in case and spacing the same.
func normalize(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

// clip shortens a match for a reason: a path can be long.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
