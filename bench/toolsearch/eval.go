package toolsearch

import (
	"fmt"
	"slices"
)

// Depth is how many tools a ranking is asked for: the largest k of the
// recalls, and the depth of MRR.
const Depth = 10

// Ranker ranks the tools for a query, best first, and returns at most limit
// public names.
type Ranker func(query string, limit int) []string

// Scores are the figures of a ranking over a set of requests.
type Scores struct {
	Requests int
	// RecallAt1, RecallAt5 and RecallAt10 are the shares of requests with
	// a gold tool among the first 1, 5 and 10 ranked.
	RecallAt1, RecallAt5, RecallAt10 float64
	// MRR is the mean of 1/rank of the first gold tool, 0 for a request
	// with none in the first Depth.
	MRR float64
}

func (s Scores) String() string {
	return fmt.Sprintf("requests=%d recall@1=%.3f recall@5=%.3f recall@10=%.3f mrr=%.3f",
		s.Requests, s.RecallAt1, s.RecallAt5, s.RecallAt10, s.MRR)
}

// Outcome is how one request fared.
type Outcome struct {
	Request Request
	// Rank is the 1-based position of the first gold tool, 0 if none is in
	// the first Depth.
	Rank int
	// Ranked is what the ranking returned.
	Ranked []string
}

// Evaluate asks rank for the first Depth tools of each request and scores
// the rankings; the outcomes, in the order of reqs, say which requests
// missed.
func Evaluate(reqs []Request, rank Ranker) (Scores, []Outcome) {
	s := Scores{Requests: len(reqs)}
	outcomes := make([]Outcome, len(reqs))
	for i, r := range reqs {
		ranked := rank(r.Query, Depth)
		o := Outcome{Request: r, Ranked: ranked}
		for j, name := range ranked[:min(len(ranked), Depth)] {
			if slices.Contains(r.Gold, name) {
				o.Rank = j + 1
				break
			}
		}
		outcomes[i] = o
		if o.Rank == 0 {
			continue
		}
		s.MRR += 1 / float64(o.Rank)
		for _, k := range []struct {
			k int
			n *float64
		}{{1, &s.RecallAt1}, {5, &s.RecallAt5}, {10, &s.RecallAt10}} {
			if o.Rank <= k.k {
				*k.n++
			}
		}
	}
	if n := float64(len(reqs)); n > 0 {
		s.RecallAt1 /= n
		s.RecallAt5 /= n
		s.RecallAt10 /= n
		s.MRR /= n
	}
	return s, outcomes
}
