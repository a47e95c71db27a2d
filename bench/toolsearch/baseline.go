package toolsearch

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
)

// Baseline returns the trivial ranking the benchmark starts from: a tool
// scores the number of distinct words of the query that occur among the
// words of its public name and description; ties go by public name. It is
// here so that the harness runs end to end, and as the floor any real
// ranking must beat.
func Baseline(tools []PublicTool) Ranker {
	type doc struct {
		name  string
		words map[string]bool
	}
	docs := make([]doc, len(tools))
	for i, t := range tools {
		d := doc{name: t.Name, words: map[string]bool{}}
		for _, w := range words(t.Name + " " + t.Tool.Description) {
			d.words[w] = true
		}
		docs[i] = d
	}
	return func(query string, limit int) []string {
		type hit struct {
			name  string
			score int
		}
		q := words(query)
		slices.Sort(q)
		q = slices.Compact(q)
		var hits []hit
		for _, d := range docs {
			n := 0
			for _, w := range q {
				if d.words[w] {
					n++
				}
			}
			if n > 0 {
				hits = append(hits, hit{d.name, n})
			}
		}
		slices.SortFunc(hits, func(a, b hit) int {
			return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.name, b.name))
		})
		names := make([]string, 0, min(limit, len(hits)))
		for _, h := range hits[:min(limit, len(hits))] {
			names = append(names, h.name)
		}
		return names
	}
}

// words splits s into lower-case runs of letters and digits: snake_case,
// kebab-case and dots split, camelCase does not.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}
