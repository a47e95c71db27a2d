package toolsearch

import (
	"flag"
	"testing"

	index "github.com/switchboard-mcp/switchboard/internal/toolsearch"
)

var tune = flag.Bool("tune", false, "search the index's options for the best MRR on the tuning split (never the held-out one)")

// TestTune, with -tune, searches a grid of the index's options on the
// tuning split alone and logs the best, for DefaultOptions. The held-out
// split is not loaded: its figures are reported (TestIndex), never tuned
// for.
func TestTune(t *testing.T) {
	if !*tune {
		t.Skip("run with -tune")
	}
	d := load(t)
	best, bestScores := index.DefaultOptions(), Scores{}
	try := func(o *index.Options) {
		rank, err := Index(d.Tools, o)
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := Evaluate(d.Tuning, rank); s.MRR > bestScores.MRR {
			best, bestScores = o, s
		}
	}
	for _, k1 := range []float64{0.9, 1.2, 1.6} {
		for _, name := range []float64{1, 2, 3, 5} {
			for _, desc := range []float64{0.5, 1, 2} {
				for _, params := range []float64{0.25, 0.5, 1} {
					for _, b := range []float64{0.3, 0.5, 0.75} {
						o := index.DefaultOptions()
						o.K1 = k1
						o.Name.Weight, o.Description.Weight, o.Description.B = name, desc, b
						o.ParamNames.Weight, o.ParamDescriptions.Weight = params, params/2
						try(o)
					}
				}
			}
		}
	}
	t.Logf("best on the tuning split: %v with %+v", bestScores, *best)
}

var misses = flag.Bool("misses", false, "log the tuning split's requests whose first gold tool is not first (never the held-out split's)")

// TestTuningMisses, with -misses, logs each tuning request the index does
// not rank a gold tool of first, with the gold tools and what came first:
// the material to tune on. The held-out split is not loaded.
func TestTuningMisses(t *testing.T) {
	if !*misses {
		t.Skip("run with -misses")
	}
	d := load(t)
	rank, err := Index(d.Tools, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, outcomes := Evaluate(d.Tuning, rank)
	for _, o := range outcomes {
		if o.Rank != 1 {
			t.Logf("rank %d %q gold %v got %v", o.Rank, o.Request.Query, o.Request.Gold, o.Ranked[:min(3, len(o.Ranked))])
		}
	}
	t.Logf("tuning: %v", s)
}
