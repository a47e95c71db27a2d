package catalog

import (
	"cmp"
	"slices"
	"strings"
)

// MaxSuggestions is the most names [Suggest] returns.
const MaxSuggestions = 3

// maxEditName bounds the names whose edit distance [Suggest] computes: no
// public name is longer than 64 characters, so a longer one is no near miss
// of a public name.
const maxEditName = 4 * maxNameLen

// Suggest returns the public names of the tools that a caller who asked for
// the unknown name given may have meant, best first, at most
// [MaxSuggestions]. tools are those the caller may see, and names gives a
// tool's public and original names. It suggests the tools of the first of
// these that any tool fits:
//
//   - its original name is given: the prefix was left out (read_text_file
//     for filesystem__read_text_file);
//   - its original name is given but for case and the joiners - _ . / :
//     (Read-Text-File, readTextFile);
//   - its public name is given but for the same: a prefix joined wrongly
//     (filesystem_read_text_file, filesystem/read_text_file);
//   - its original name is what given has after a prefix of its own
//     (fs__read_text_file): a wrong prefix;
//   - near misses: a public or original name within an edit distance of a
//     quarter of given's length (1 to 3), nearest first; a wrong prefix
//     counts as one more edit.
//
// Ties go by public name. Nil means that nothing comes close.
func Suggest[T any](given string, tools []T, names func(T) (public, original string)) []string {
	g := fold(given)
	if g == "" {
		return nil
	}
	tail := fold(afterPrefix(given))
	type match struct {
		name       string
		rank, dist int // rank: in the list above, from 0
	}
	const nearMiss = 4
	var matches []match
	maxDist := min(3, max(1, len(g)/4))
	for _, t := range tools {
		public, original := names(t)
		o := fold(original)
		switch {
		case original == given:
			matches = append(matches, match{public, 0, 0})
		case o == g:
			matches = append(matches, match{public, 1, 0})
		case fold(public) == g:
			matches = append(matches, match{public, 2, 0})
		case tail != "" && o == tail:
			matches = append(matches, match{public, 3, 0})
		default:
			d := min(editDistance(g, fold(public), maxDist), editDistance(g, o, maxDist))
			if tail != "" {
				d = min(d, editDistance(tail, o, maxDist)+1) // +1: the prefix is wrong too
			}
			if d <= maxDist {
				matches = append(matches, match{public, nearMiss, d})
			}
		}
	}
	if len(matches) > 0 {
		best := slices.MinFunc(matches, func(a, b match) int { return cmp.Compare(a.rank, b.rank) }).rank
		matches = slices.DeleteFunc(matches, func(m match) bool { return m.rank != best })
	}
	slices.SortFunc(matches, func(a, b match) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.dist, b.dist), strings.Compare(a.name, b.name))
	})
	var out []string
	for _, m := range matches[:min(len(matches), MaxSuggestions)] {
		out = append(out, m.name)
	}
	return out
}

// afterPrefix returns what name has after its first __, / or :, which may
// end a prefix, or "".
func afterPrefix(name string) string {
	cut, sep := -1, 0
	for _, s := range []string{"__", "/", ":"} {
		if i := strings.Index(name, s); i > 0 && (cut < 0 || i < cut) {
			cut, sep = i, len(s)
		}
	}
	if cut < 0 {
		return ""
	}
	return name[cut+sep:]
}

// fold returns name lowercased, without the joiners that models mix up: -
// _ . / and :.
func fold(name string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', '.', '/', ':':
			return -1
		}
		return r
	}, strings.ToLower(name))
}

// editDistance returns the optimal string alignment distance of a and b
// (insertions, deletions, substitutions and transpositions of adjacent
// bytes), or limit+1 as soon as it is known to exceed limit.
func editDistance(a, b string, limit int) int {
	if len(a) > maxEditName || len(b) > maxEditName || max(len(a)-len(b), len(b)-len(a)) > limit {
		return limit + 1
	}
	// Three rows of the matrix: before last, last and this one.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			best = min(best, cur[j])
		}
		if best > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(b)], limit+1)
}
