package toolsearch

import (
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/internal/catalog"
)

func load(t *testing.T) *Data {
	t.Helper()
	d, err := Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestData checks the benchmark's integrity: enough real tools under
// unique public names, enough requests, every gold tool real, no request
// twice, each in the split its hash names, and every server asked for.
func TestData(t *testing.T) {
	d := load(t)
	if len(d.Tools) < 300 {
		t.Errorf("tools.json has %d tools, want at least 300", len(d.Tools))
	}
	if n := len(d.Tuning) + len(d.Heldout); n < 200 {
		t.Errorf("%d requests, want at least 200", n)
	}
	tools := map[string]bool{}
	for _, tool := range d.Tools {
		if tools[tool.Name] {
			t.Errorf("public name %s twice in tools.json", tool.Name)
		}
		tools[tool.Name] = true
	}
	// The gold names are the names Switchboard gives.
	for _, c := range catalog.Build(sources(d.Servers)).Entries() {
		if want := PublicName(c.Server, c.Original); c.Name != want {
			t.Errorf("Switchboard names %s of %s %s, not %s", c.Original, c.Server, c.Name, want)
		}
	}
	if n := catalog.Build(sources(d.Servers)).Len(); n != len(d.Tools) {
		t.Errorf("Switchboard exposes %d tools of tools.json, not %d", n, len(d.Tools))
	}
	for _, s := range d.Servers {
		if s.Name == "" || !strings.Contains(s.Package, "@") || len(s.Tools) == 0 {
			t.Errorf("server %q (%s) with %d tools: want a name, a package@version and tools", s.Name, s.Package, len(s.Tools))
		}
	}

	asked := map[string]bool{}  // servers some request wants a tool of
	seen := map[string]string{} // normalised query: its split
	for name, reqs := range map[string][]Request{"tuning": d.Tuning, "heldout": d.Heldout} {
		for _, r := range reqs {
			q := strings.Join(strings.Fields(strings.ToLower(r.Query)), " ")
			if q == "" {
				t.Errorf("requests.%s.json: an empty query", name)
			}
			if other, ok := seen[q]; ok {
				t.Errorf("requests.%s.json: %q is also in requests.%s.json", name, r.Query, other)
			}
			seen[q] = name
			if want := split(r.Query); want != name {
				t.Errorf("requests.%s.json: %q belongs in requests.%s.json", name, r.Query, want)
			}
			if len(r.Gold) == 0 {
				t.Errorf("requests.%s.json: %q has no gold tool", name, r.Query)
			}
			golds := map[string]bool{}
			for _, g := range r.Gold {
				if !tools[g] {
					t.Errorf("requests.%s.json: %q: gold tool %s is not in tools.json", name, r.Query, g)
				}
				if golds[g] {
					t.Errorf("requests.%s.json: %q: gold tool %s twice", name, r.Query, g)
				}
				golds[g] = true
				server, _, _ := strings.Cut(g, Separator)
				asked[server] = true
			}
		}
	}
	for _, s := range d.Servers {
		if !asked[s.Name] {
			t.Errorf("no request wants a tool of server %s", s.Name)
		}
	}
}

// TestBaseline runs the harness end to end on the trivial ranking; -v
// prints its figures (asserted nowhere: they are measurements).
func TestBaseline(t *testing.T) {
	d := load(t)
	report(t, d, "baseline", Baseline(d.Tools))
}

// report logs rank's figures on both splits.
func report(t *testing.T, d *Data, name string, rank Ranker) {
	t.Helper()
	for _, s := range []struct {
		name string
		reqs []Request
	}{{"tuning", d.Tuning}, {"held out", d.Heldout}} {
		scores, _ := Evaluate(s.reqs, rank)
		t.Logf("%s, %s: %v", name, s.name, scores)
	}
}

// TestIndex runs the harness on Switchboard's ranking, with its defaults;
// -v prints its figures. Tune on the tuning split only: the held-out
// split's figures are reported, never tuned for.
func TestIndex(t *testing.T) {
	d := load(t)
	rank, err := Index(d.Tools, nil)
	if err != nil {
		t.Fatal(err)
	}
	report(t, d, "BM25F", rank)
}
