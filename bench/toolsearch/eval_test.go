package toolsearch

import (
	"math"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestEvaluate(t *testing.T) {
	reqs := []Request{
		{Query: "first", Gold: []string{"a"}},      // rank 1
		{Query: "third", Gold: []string{"x", "c"}}, // rank 3, by its second gold
		{Query: "seventh", Gold: []string{"g"}},    // rank 7
		{Query: "missing", Gold: []string{"z"}},    // not ranked
		{Query: "too deep", Gold: []string{"k"}},   // 11th: past Depth
	}
	ranked := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"}
	var limits []int
	rank := func(query string, limit int) []string {
		limits = append(limits, limit)
		return ranked // more than asked for: Evaluate must not look past Depth
	}
	got, outcomes := Evaluate(reqs, rank)
	want := Scores{Requests: 5, RecallAt1: 1.0 / 5, RecallAt5: 2.0 / 5, RecallAt10: 3.0 / 5, MRR: (1 + 1.0/3 + 1.0/7) / 5}
	if got.Requests != want.Requests || !near(got.RecallAt1, want.RecallAt1) || !near(got.RecallAt5, want.RecallAt5) ||
		!near(got.RecallAt10, want.RecallAt10) || !near(got.MRR, want.MRR) {
		t.Errorf("Evaluate = %v, want %v", got, want)
	}
	for i, r := range []int{1, 3, 7, 0, 0} {
		if outcomes[i].Rank != r {
			t.Errorf("outcome of %q: rank %d, want %d", reqs[i].Query, outcomes[i].Rank, r)
		}
	}
	for _, l := range limits {
		if l != Depth {
			t.Errorf("ranker asked for %d, want %d", l, Depth)
		}
	}
	if s, _ := Evaluate(nil, rank); s != (Scores{}) {
		t.Errorf("Evaluate of no requests = %v, want zeros", s)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestBaselineRanks(t *testing.T) {
	tools := Public([]Server{{Name: "mail", Tools: []*mcp.Tool{
		{Name: "send_message", Description: "Send an email message"},
		{Name: "list_folders", Description: "List the mail folders"},
		{Name: "archive", Description: "Archive a message"},
	}}})
	rank := Baseline(tools)
	got := rank("send the message by email", 2)
	want := []string{"mail__send_message", "mail__archive"} // 3 words, then 1 ("message")
	if !slices.Equal(got, want) {
		t.Errorf("Baseline ranked %v, want %v", got, want)
	}
	if got := rank("nothing matches", 5); len(got) != 0 {
		t.Errorf("Baseline ranked %v for a query with no known word, want nothing", got)
	}
}
