package toolsearch

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// The synthetic corpus: tool definitions generated from a vocabulary of the
// words real MCP tools use, with realistic sizes (a name of two or three
// words, a description of 8 to 60 words, 1 to 6 parameters with a sentence
// each), so that the benchmarks see realistic term distributions.
var (
	verbs = strings.Fields(`list get create update delete search read write move copy send fetch run execute
		query describe start stop restart navigate click type fill select upload download open close merge
		approve comment tag label assign watch subscribe export import sync scan analyze validate format
		render install deploy scale rollback archive restore rename share lock unlock publish schedule`)
	nouns = strings.Fields(`file directory issue pull_request repository branch commit page browser tab
		screenshot pod deployment namespace service node cluster table database row column index document
		collection user team member message channel thread email calendar event meeting note entity relation
		observation secret key token bucket object queue topic subscription log metric alert dashboard
		invoice customer payment order product ticket project task board sprint workflow job pipeline
		artifact release package image container volume network firewall record zone certificate`)
	filler = strings.Fields(`the a an of to in for with from by on at and or as is are be this that which
		it its all any each every new existing current given specified optional required default returns
		return list lists information details about using when if not only can may will should must
		result results value values name names identifier id path url content text data format number
		string boolean true false limit page size maximum minimum first last recent older newer between
		including excluding matching filter filters sort order ascending descending time date range
		status state type kind level priority owner author created updated deleted visible hidden public
		private local remote absolute relative relevant specific multiple single`)
)

// word returns a vocabulary word, with a skew toward the first ones, as in
// natural text (a few words are very common, most are rare).
func word(r *rand.Rand, list []string) string {
	i := int(float64(len(list)) * r.Float64() * r.Float64())
	return list[i]
}

func sentence(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		switch r.IntN(4) {
		case 0:
			w[i] = word(r, verbs)
		case 1:
			w[i] = word(r, nouns)
		default:
			w[i] = word(r, filler)
		}
	}
	return strings.Join(w, " ") + "."
}

// genServer returns n tools for server, deterministically from seed.
func genServer(server string, n int, seed uint64) []Doc {
	r := rand.New(rand.NewPCG(seed, uint64(len(server))))
	docs := make([]Doc, 0, n)
	seen := make(map[string]bool)
	for len(docs) < n {
		tool := word(r, verbs) + "_" + word(r, nouns)
		if r.IntN(3) == 0 {
			tool += "_" + word(r, nouns)
		}
		if seen[tool] {
			tool += fmt.Sprint("_", len(docs))
		}
		seen[tool] = true
		props := map[string]any{}
		for range 1 + r.IntN(6) {
			props[word(r, nouns)+"_"+word(r, filler)] = map[string]any{"type": "string", "description": sentence(r, 4+r.IntN(12))}
		}
		docs = append(docs, Doc{
			Name:        server + "__" + tool,
			Title:       strings.ReplaceAll(tool, "_", " "),
			Description: sentence(r, 8+r.IntN(52)),
			InputSchema: map[string]any{"type": "object", "properties": props},
		})
	}
	return docs
}

// genCorpus returns servers×perServer tools, by server name.
func genCorpus(servers, perServer int, seed uint64) map[string][]Doc {
	corpus := make(map[string][]Doc, servers)
	for i := range servers {
		name := fmt.Sprintf("srv%03d", i)
		corpus[name] = genServer(name, perServer, seed+uint64(i))
	}
	return corpus
}

// genQuery returns a query of 2 to 8 words, as a user would type it.
func genQuery(r *rand.Rand) string {
	q := []string{word(r, verbs), word(r, nouns)}
	for range r.IntN(7) {
		q = append(q, word(r, filler))
	}
	r.Shuffle(len(q), func(i, j int) { q[i], q[j] = q[j], q[i] })
	return strings.Join(q, " ")
}
