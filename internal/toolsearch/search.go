package toolsearch

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"
)

// MaxQueryBytes is the most of a query Search reads: room for a paragraph of
// what a user wants (some 150 words), and a bound on the work one query can
// cause: see BenchmarkQueryLongest, whose query of this many distinct common
// words is the worst case. A longer query is cut ([CutQuery]).
const MaxQueryBytes = 1024

// CutQuery returns query cut to its first words within [MaxQueryBytes], and
// whether it was cut: models paste whole requests, whose first words say
// what is wanted. A word longer than a term may be (80 bytes: a pasted
// hash, a blob of base64), which the search would drop, is dropped first,
// so that it takes no room from the words after it. The cut falls between
// a word rune and a rune that is not one (a space, a joiner, punctuation),
// never inside a word or a UTF-8 sequence.
func CutQuery(query string) (string, bool) { return cutWords(query, MaxQueryBytes) }

// CutWords returns s cut to its first words within max bytes, and whether
// it was cut, as [CutQuery] says of a query.
func CutWords(s string, max int) (string, bool) { return cutWords(s, max) }

// cutWords returns s cut to its first words within max bytes, and whether
// it was cut, as [CutQuery] says.
func cutWords(query string, max int) (string, bool) {
	if len(query) <= max {
		return query, false
	}
	query = dropLongWords(query)
	if len(query) <= max {
		return query, true
	}
	end := max
	for end > 0 && !utf8.RuneStart(query[end]) {
		end--
	}
	for i := end; i > 0; {
		prev, size := utf8.DecodeLastRuneInString(query[:i])
		next, _ := utf8.DecodeRuneInString(query[i:])
		if !isWordRune(prev) || !isWordRune(next) {
			return query[:i], true
		}
		i -= size
	}
	return "", true // unreachable: no word is longer than a term now
}

// dropLongWords returns s with each word longer than maxTermBytes, which
// no search term comes from, replaced with a space.
func dropLongWords(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j < len(s) {
			r, size := utf8.DecodeRuneInString(s[j:])
			if !isWordRune(r) {
				break
			}
			j += size
		}
		switch {
		case j-i > maxTermBytes:
			b.WriteByte(' ')
		case j > i:
			b.WriteString(s[i:j])
		default: // a rune that is not a word's, kept as it is
			_, size := utf8.DecodeRuneInString(s[i:])
			j = i + size
			b.WriteString(s[i:j])
		}
		i = j
	}
	return b.String()
}

// Hit is one search result.
type Hit struct {
	Name   string  // the public name
	Server string  // the server that owns the tool
	Score  float64 // BM25F relevance, above 0; comparable only within one search
}

// Search returns up to limit tools ranked by relevance to query, best
// first; ties are broken by name, then by server, so results are
// deterministic. Only tools that have at least one query term are returned;
// on success the slice is never nil, so that it encodes as a JSON array.
//
// If visible is not nil, it is called once for each indexed tool (keep it
// cheap, such as a set lookup), and a tool it rejects is neither returned
// nor counted in the corpus statistics: the scores are exactly those of an
// index holding only the visible tools, so hidden tools cannot be inferred
// from them.
//
// A query longer than [MaxQueryBytes] is searched by its first words
// ([CutQuery]). A query that is empty or has no word to search for gets
// [ErrEmptyQuery]; a limit below 1 gets [ErrBadLimit]. Any larger limit is accepted: the result never holds
// more than the matching tools. (Design §2's search_tools takes 1 to 50.)
func (x *Index) Search(query string, limit int, visible func(name string) bool) ([]Hit, error) {
	if limit < 1 {
		return nil, fmt.Errorf("toolsearch: search: %w: limit is %d, want 1 or more", ErrBadLimit, limit)
	}
	query, _ = CutQuery(query)
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("toolsearch: search: %w", ErrEmptyQuery)
	}
	terms := queryTerms(query)
	if len(terms) == 0 {
		return nil, fmt.Errorf("toolsearch: search: %w: the query has only stop words or punctuation", ErrEmptyQuery)
	}
	return x.snap.Load().search(&x.p, withSynonyms(terms), limit, visible), nil
}

// weightedTerms are the terms of a query and the synonyms they bring in.
type weightedTerms struct {
	terms []string
	// from[i] is the index in terms of the query's own term that brought
	// in terms[i], or -1 (see synonyms.expand).
	from []int
	own  int // terms[:own] are the query's own
}

// withSynonyms returns terms and the synonyms they bring in, at most
// maxSynonymTerms of them and MaxQueryTerms in all.
func withSynonyms(terms []string) weightedTerms {
	expanded, from := querySynonyms.expand(terms)
	n := min(len(expanded), len(terms)+maxSynonymTerms, MaxQueryTerms)
	return weightedTerms{terms: expanded[:n], from: from[:n], own: len(terms)}
}

// weights returns the weight of each term, given df, the number of
// visible docs that have each: 1 for the query's own; for the synonyms of
// a term that no visible doc has, orphanSynonymWeight shared among those
// that some doc has (the term counts through them as much as a word, not
// once for each); synonymWeight for the rest. Counting visible docs alone
// keeps hidden tools from telling in the scores.
func (q weightedTerms) weights(df []int) []float64 {
	w := make([]float64, len(q.terms))
	found := make([]int, q.own) // by own term: its synonyms that some doc has
	for i := q.own; i < len(q.terms); i++ {
		if by := q.from[i]; by >= 0 && df[i] > 0 {
			found[by]++
		}
	}
	for i := range w {
		switch by := q.from[i]; {
		case i < q.own:
			w[i] = 1
		case by >= 0 && df[by] == 0:
			w[i] = orphanSynonymWeight / float64(found[by])
		default:
			w[i] = synonymWeight
		}
	}
	return w
}

// maxSynonymTerms is how many terms a query's synonyms may bring in: the
// terms a long query brings in are the ones most words share, and their
// postings are the longest.
const maxSynonymTerms = 12

// MaxQueryTerms is how many distinct terms of a query count: the first
// ones. A request that names what it wants does so in far fewer, and each
// term costs a pass over its postings, so that a query of 1 KiB of common
// words would otherwise take milliseconds.
const MaxQueryTerms = 24

// queryTerms returns the first MaxQueryTerms distinct terms of a query, in
// order of appearance: a term repeated in a query counts once.
func queryTerms(query string) []string {
	var terms []string
	seen := make(map[string]bool)
	var a analyzer
	a.analyze(query, func(t string) {
		if !seen[t] && len(terms) < MaxQueryTerms {
			seen[t] = true
			terms = append(terms, t)
		}
	})
	return terms
}

// stats are the corpus statistics a search scores with. A doc's global
// number is its segment's offset plus its index in the segment.
type stats struct {
	docs    int
	visible []bool // by global doc number; nil when every doc is visible
	avgLen  [numFields]float64
}

// statsFor counts the docs that visible accepts (all, if it is nil) and
// their average field lengths.
func (s *snapshot) statsFor(visible func(string) bool) stats {
	st := stats{docs: s.docs}
	fieldLen := s.fieldLen
	if visible != nil {
		st.docs, fieldLen = 0, [numFields]int{}
		st.visible = make([]bool, s.docs)
		for i, seg := range s.segments {
			for d := range seg.docs {
				if visible(seg.docs[d].name) {
					st.visible[s.offsets[i]+d] = true
					st.docs++
					for f, n := range seg.docs[d].lens {
						fieldLen[f] += int(n)
					}
				}
			}
		}
	}
	for f, n := range fieldLen {
		if st.docs > 0 && n > 0 {
			st.avgLen[f] = float64(n) / float64(st.docs)
		} else {
			st.avgLen[f] = 1 // no doc has a term in f, so its length never counts
		}
	}
	return st
}

func (st *stats) isVisible(g int) bool {
	return st.visible == nil || st.visible[g]
}

// search scores every visible doc that has a query term with BM25F (see the
// package doc), where N and df count visible docs only. Each doc's score is
// summed in the
// order of the query's terms, so the same query over the same docs gives
// bit-identical scores however the index was built.
func (s *snapshot) search(p *params, q weightedTerms, limit int, visible func(string) bool) []Hit {
	st := s.statsFor(visible)
	if st.docs == 0 {
		return []Hit{}
	}
	terms := q.terms
	// Each term's postings by segment, and its df over visible docs.
	lists := make([][][]posting, len(terms))
	df := make([]int, len(terms))
	for ti, term := range terms {
		lists[ti] = make([][]posting, len(s.segments))
		for i, seg := range s.segments {
			l := seg.postings[term]
			lists[ti][i] = l
			if st.visible == nil {
				df[ti] += len(l)
				continue
			}
			for _, p := range l {
				if st.visible[s.offsets[i]+int(p.doc)] {
					df[ti]++
				}
			}
		}
	}
	weights := q.weights(df)
	// The length normalisation of field f for a doc is
	// 1 − b_f + b_f·len/avglen_f = base[f] + slope[f]·len.
	var base, slope [numFields]float64
	for f := range numFields {
		base[f] = 1 - p.fields[f].B
		slope[f] = p.fields[f].B / st.avgLen[f]
	}
	scores := make([]float64, s.docs) // by global doc number
	var touched []int32
	for ti := range terms {
		if df[ti] == 0 {
			continue
		}
		idf := weights[ti] * math.Log(1+(float64(st.docs)-float64(df[ti])+0.5)/(float64(df[ti])+0.5))
		for i, list := range lists[ti] {
			seg := s.segments[i]
			for _, post := range list {
				g := s.offsets[i] + int(post.doc)
				if !st.isVisible(g) {
					continue
				}
				var w float64
				lens := &seg.docs[post.doc].lens
				for f := range numFields {
					if tf := post.tf[f]; tf > 0 {
						w += p.fields[f].Weight * float64(tf) / (base[f] + slope[f]*float64(lens[f]))
					}
				}
				if w == 0 {
					continue // only in fields of weight 0
				}
				if scores[g] == 0 {
					touched = append(touched, int32(g))
				}
				scores[g] += idf * w / (p.k1 + w)
			}
		}
	}
	return s.top(scores, touched, limit)
}

// top returns the limit best of the touched docs, best first.
func (s *snapshot) top(scores []float64, touched []int32, limit int) []Hit {
	h := &hitHeap{}
	for _, g := range touched {
		if h.Len() == limit && scores[g] < h.hits[0].Score {
			continue // cheaper than naming a doc that cannot make it
		}
		hit := s.hit(int(g), scores[g])
		if h.Len() < limit {
			heap.Push(h, hit)
		} else if better(hit, h.hits[0]) {
			h.hits[0] = hit
			heap.Fix(h, 0)
		}
	}
	hits := make([]Hit, h.Len())
	for i := len(hits) - 1; i >= 0; i-- {
		hits[i] = heap.Pop(h).(Hit)
	}
	return hits
}

// hit returns the Hit of global doc number g.
func (s *snapshot) hit(g int, score float64) Hit {
	i := sort.Search(len(s.offsets), func(i int) bool { return s.offsets[i] > g }) - 1
	seg := s.segments[i]
	return Hit{Name: seg.docs[g-s.offsets[i]].name, Server: seg.server, Score: score}
}

// better reports whether a ranks before b: higher score, then name, then
// server.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if c := cmp.Compare(a.Name, b.Name); c != 0 {
		return c < 0
	}
	return a.Server < b.Server
}

// hitHeap keeps the best hits seen so far, the worst at the root.
type hitHeap struct{ hits []Hit }

func (h *hitHeap) Len() int           { return len(h.hits) }
func (h *hitHeap) Less(i, j int) bool { return better(h.hits[j], h.hits[i]) }
func (h *hitHeap) Swap(i, j int)      { h.hits[i], h.hits[j] = h.hits[j], h.hits[i] }
func (h *hitHeap) Push(x any)         { h.hits = append(h.hits, x.(Hit)) }
func (h *hitHeap) Pop() any {
	last := h.hits[len(h.hits)-1]
	h.hits = h.hits[:len(h.hits)-1]
	return last
}
