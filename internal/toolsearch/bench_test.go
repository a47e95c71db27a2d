package toolsearch

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// The benchmarks use the synthetic corpus at the scale: 100 servers
// of 50 tools. Targets (issue 24): build ≤ 200 ms, one server's update ≤ 5
// ms, query p99 ≤ 2 ms, memory ≤ 30 MB.
const (
	benchServers   = 100
	benchPerServer = 50
)

func benchIndex(b *testing.B) (*Index, map[string][]Doc) {
	b.Helper()
	corpus := genCorpus(benchServers, benchPerServer, 42)
	x := mustNew(b, nil)
	if err := x.Replace(corpus); err != nil {
		b.Fatal(err)
	}
	return x, corpus
}

// BenchmarkBuild5000 builds a fresh index of 5,000 tools (a cold term cache,
// as at start).
func BenchmarkBuild5000(b *testing.B) {
	corpus := genCorpus(benchServers, benchPerServer, 42)
	for b.Loop() {
		x := mustNew(b, nil)
		if err := x.Replace(corpus); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdate50 replaces one server's 50 tools in an index of 5,000,
// alternating between two versions so that every update changes them.
func BenchmarkUpdate50(b *testing.B) {
	x, corpus := benchIndex(b)
	versions := [][]Doc{genServer("srv050", benchPerServer, 7), corpus["srv050"]}
	i := 0
	for b.Loop() {
		if err := x.Set("srv050", versions[i%2]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// benchQueries runs generated queries over 5,000 tools and reports the
// median and 99th percentile of one query's duration.
func benchQueries(b *testing.B, visible func(*Index) func(string) bool) {
	x, _ := benchIndex(b)
	r := rand.New(rand.NewPCG(5, 6))
	queries := make([]string, 1000)
	for i := range queries {
		queries[i] = genQuery(r)
	}
	vis := visible(x)
	durations := make([]time.Duration, 0, 1<<16)
	i := 0
	for b.Loop() {
		start := time.Now()
		if _, err := x.Search(queries[i%len(queries)], 5, vis); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
		i++
	}
	reportPercentiles(b, durations)
}

func reportPercentiles(b *testing.B, durations []time.Duration) {
	slices.Sort(durations)
	at := func(p float64) float64 { return float64(durations[int(p*float64(len(durations)-1))]) }
	b.ReportMetric(at(0.50), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
}

// BenchmarkQueryBaselineScan5000 is the baseline the query figures are read
// against, measured in the same run: the naive search an index replaces, a
// scan of 5,000 lowercased names and descriptions counting the query words
// each contains.
func BenchmarkQueryBaselineScan5000(b *testing.B) {
	var texts []string
	for _, docs := range genCorpus(benchServers, benchPerServer, 42) {
		for _, d := range docs {
			texts = append(texts, strings.ToLower(d.Name+" "+d.Description))
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	queries := make([][]string, 1000)
	for i := range queries {
		queries[i] = strings.Fields(genQuery(r))
	}
	var durations []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		best, bestN := -1, 0
		for d, text := range texts {
			n := 0
			for _, w := range queries[i%len(queries)] {
				if strings.Contains(text, w) {
					n++
				}
			}
			if n > bestN {
				best, bestN = d, n
			}
		}
		_ = best
		durations = append(durations, time.Since(start))
		i++
	}
	reportPercentiles(b, durations)
}

func BenchmarkQuery5000(b *testing.B) {
	benchQueries(b, func(*Index) func(string) bool { return nil })
}

// BenchmarkQuery5000Visible is a query with a visible function that hides a
// tenth of the tools, through a set lookup as a gateway session would.
func BenchmarkQuery5000Visible(b *testing.B) {
	benchQueries(b, func(x *Index) func(string) bool {
		hidden := make(map[string]bool)
		for _, seg := range x.snap.Load().segments {
			for i, d := range seg.docs {
				if i%10 == 0 {
					hidden[d.name] = true
				}
			}
		}
		return func(name string) bool { return !hidden[name] }
	})
}

// BenchmarkQueryLongest is the worst query Search takes: MaxQueryBytes of
// distinct vocabulary words.
func BenchmarkQueryLongest(b *testing.B) {
	x, _ := benchIndex(b)
	var q strings.Builder
	for i := 0; q.Len() < MaxQueryBytes-20; i++ {
		all := [][]string{verbs, nouns, filler}
		list := all[i%3]
		fmt.Fprintf(&q, "%s ", list[(i/3)%len(list)])
	}
	var durations []time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := x.Search(q.String(), 50, nil); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	reportPercentiles(b, durations)
}

// BenchmarkMemory5000 reports the heap the index of 5,000 tools holds, as
// the live heap after building it less the live heap before (the docs
// themselves are allocated before).
func BenchmarkMemory5000(b *testing.B) {
	corpus := genCorpus(benchServers, benchPerServer, 42)
	var before, after runtime.MemStats
	var bytes uint64
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		x := mustNew(b, nil)
		if err := x.Replace(corpus); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		bytes = after.HeapAlloc - before.HeapAlloc
		runtime.KeepAlive(x)
	}
	b.ReportMetric(float64(bytes), "index-bytes")
	runtime.KeepAlive(corpus)
}
