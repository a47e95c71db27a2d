package toolsearch

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rebuilt returns a fresh index of model built at once.
func rebuilt(t testing.TB, model map[string][]Doc) *Index {
	t.Helper()
	y := mustNew(t, nil)
	if err := y.Replace(model); err != nil {
		t.Fatal(err)
	}
	return y
}

// checkHits checks the invariants of any result: positive finite scores,
// best first, ties by name then server, at most limit.
func checkHits(t testing.TB, hits []Hit, limit int) {
	t.Helper()
	if len(hits) > limit {
		t.Fatalf("%d hits over the limit %d", len(hits), limit)
	}
	for i, h := range hits {
		if !(h.Score > 0) || math.IsInf(h.Score, 0) {
			t.Fatalf("hit %d has score %v", i, h.Score)
		}
		if i > 0 && !better(hits[i-1], h) {
			t.Fatalf("hits %d and %d out of order: %v, %v", i-1, i, hits[i-1], h)
		}
	}
}

// TestIncrementalEqualsRebuild applies random changes server by server and
// checks after each that every query gives bit-identical hits to an index
// built at once from the same tools: the corpus statistics stay consistent.
func TestIncrementalEqualsRebuild(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	x := mustNew(t, nil)
	model := map[string][]Doc{}
	queries := make([]string, 20)
	for i := range queries {
		queries[i] = genQuery(r)
	}
	for step := range 60 {
		server := fmt.Sprintf("srv%d", r.IntN(6))
		switch r.IntN(4) {
		case 0:
			x.Remove(server)
			delete(model, server)
		case 1: // change a few tools: edit one, drop one, add one
			docs := slices.Clone(model[server])
			if len(docs) > 1 {
				docs[0].Description += " archive the bucket"
				docs = docs[1:]
			}
			docs = append(docs, genServer(server, 1, uint64(1000+step))[0])
			docs[len(docs)-1].Name += fmt.Sprint("_new", step)
			mustSet(t, x, server, docs)
			model[server] = docs
		default:
			docs := genServer(server, 1+r.IntN(40), uint64(step))
			mustSet(t, x, server, docs)
			model[server] = docs
		}
		y := rebuilt(t, model)
		if x.Len() != y.Len() {
			t.Fatalf("step %d: Len %d, rebuilt %d", step, x.Len(), y.Len())
		}
		for _, q := range queries {
			got := mustSearch(t, x, q, 10, nil)
			checkHits(t, got, 10)
			if diff := cmp.Diff(mustSearch(t, y, q, 10, nil), got); diff != "" {
				t.Fatalf("step %d, %q: incremental differs from rebuilt (-rebuilt +incremental):\n%s", step, q, diff)
			}
		}
	}
}

// FuzzSetSearch drives an index with a fuzzed sequence of changes, a fuzzed
// tool text and a fuzzed query, and checks it against an index built at
// once from the same tools, in the other order of servers.
func FuzzSetSearch(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7}, "Create an issue", "create issue")
	f.Add([]byte{1, 1, 9, 0, 0, 0}, "list_files in a directory", "list files")
	f.Add([]byte{}, "", "anything")
	f.Add([]byte{255, 128, 7}, "getUserInfo Ärger", "user info ärger")
	f.Fuzz(func(t *testing.T, ops []byte, text, query string) {
		x := mustNew(t, nil)
		model := map[string][]Doc{}
		for i := 0; i+1 < len(ops); i += 2 {
			server := fmt.Sprintf("s%d", ops[i]%4)
			if ops[i+1]%5 == 0 {
				x.Remove(server)
				delete(model, server)
				continue
			}
			docs := genServer(server, int(ops[i+1]%7), uint64(ops[i+1]))
			docs = append(docs, Doc{Name: server + "__fuzzed", Title: text, Description: text,
				InputSchema: map[string]any{"properties": map[string]any{text: map[string]any{"description": text}}}})
			mustSet(t, x, server, docs)
			model[server] = docs
		}
		y := mustNew(t, nil)
		for _, server := range slices.Backward(slices.Sorted(maps.Keys(model))) {
			mustSet(t, y, server, model[server])
		}
		got, err := x.Search(query, 8, nil)
		want, werr := y.Search(query, 8, nil)
		if (err == nil) != (werr == nil) {
			t.Fatalf("errors differ: %v, rebuilt %v", err, werr)
		}
		if err != nil {
			return
		}
		checkHits(t, got, 8)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("incremental differs from rebuilt (-rebuilt +incremental):\n%s", diff)
		}
	})
}

// TestConcurrentSearchDuringSet searches while a writer flips one server
// between two versions: each search must see one whole version, never a
// mix, and the race detector must stay quiet.
func TestConcurrentSearchDuringSet(t *testing.T) {
	const query = "list files in the repository"
	steady := genServer("steady", 20, 1)
	versions := [][]Doc{genServer("flip", 12, 2), genServer("flip", 8, 3)}
	var want [2][]Hit
	for i, v := range versions {
		want[i] = mustSearch(t, rebuilt(t, map[string][]Doc{"steady": steady, "flip": v}), query, 10, nil)
	}
	if cmp.Equal(want[0], want[1]) {
		t.Fatal("the two versions rank alike; the test would prove nothing")
	}
	x := rebuilt(t, map[string][]Doc{"steady": steady, "flip": versions[0]})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := x.Search(query, 10, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if !cmp.Equal(got, want[0]) && !cmp.Equal(got, want[1]) {
					t.Errorf("a search saw neither version: %v", got)
					return
				}
			}
		})
	}
	for i := range 600 {
		if err := x.Set("flip", versions[(i+1)%2]); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
}
