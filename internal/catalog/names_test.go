package catalog

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// suffixed matches a public name with a hash suffix.
var suffixed = regexp.MustCompile(`^[A-Za-z0-9_-]+_[0-9a-f]{8}$`)

// sha8 computes the expected hash suffix independently of the code under test.
func sha8(seed string) string {
	sum := sha1.Sum([]byte(seed))
	return hex.EncodeToString(sum[:])[:8]
}

func TestSanitize(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"docs", "docs"},
		{"Mixed-Case_09", "Mixed-Case_09"},
		{"foo!", "foo"},
		{"a.b c/d", "a_b_c_d"},
		{"__a-b__", "a-b"},
		{"-_x_-", "x"},
		{"ñandú", "and"},
		{"日本", ""},
		{"検索", ""},
		{"", ""},
		{"___", ""},
		{"-", ""},
		{"a\xffb", "a_b"}, // an invalid UTF-8 byte is one character
		{"tab\there", "tab_here"},
		{"a__b", "a__b"}, // inner runs are kept
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := Sanitize(tt.in); got != tt.want {
				t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCandidateName(t *testing.T) {
	long := strings.Repeat("a", 65)
	tests := []struct {
		name         string
		prefix, tool string
		want         string
	}{
		{"plain", "docs", "search", "docs__search"},
		{"sanitized parts", "my.server", "get issue!", "my_server__get_issue"},
		{"trimmed parts", "_docs-", "-search_", "docs__search"},
		{"prefix fallback", "日本", "search", "server__search"},
		{"tool fallback", "docs", "検索", "docs__tool"},
		{"both fallbacks", "!!", "??", "server__tool"},
		{"unprefixed kept", "", "test_simple_text", "test_simple_text"},
		{"unprefixed kept untrimmed", "", "_private-", "_private-"},
		{"unprefixed 64 chars kept", "", long[:64], long[:64]},
		{"unprefixed 65 chars sanitized", "", "_" + long, long},
		{"unprefixed invalid sanitized", "", " has space_", "has_space"},
		{"unprefixed fallback", "", "検索", "tool"},
		{"long is not cut here", "docs", long, "docs__" + long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := candidateName(NamePrefix(tt.prefix), tt.tool); got != tt.want {
				t.Errorf("candidateName(%q, %q) = %q, want %q", tt.prefix, tt.tool, got, tt.want)
			}
		})
	}
}

func TestHashedName(t *testing.T) {
	tests := []struct {
		name            string
		candidate, seed string
		want            string
	}{
		{
			name:      "exact value",
			candidate: "docs__search",
			seed:      "docs\x00search",
			want:      "docs__search_15de6fa1", // printf 'docs\0search' | sha1sum
		},
		{
			name:      "computed value",
			candidate: "foo__create_issue",
			seed:      "foo!\x00create_issue",
			want:      "foo__create_issue_" + sha8("foo!\x00create_issue"),
		},
		{
			name:      "round seed",
			candidate: "foo__create_issue",
			seed:      hashSeed("foo", "create_issue", 2),
			want:      "foo__create_issue_" + sha8("foo\x00create_issue\x002"),
		},
		{
			name:      "cut to 55",
			candidate: strings.Repeat("x", 80),
			seed:      "s\x00t",
			want:      strings.Repeat("x", 55) + "_" + sha8("s\x00t"),
		},
		{
			name:      "cut then trimmed",
			candidate: strings.Repeat("x", 50) + "_-_-_yyyy",
			seed:      "s\x00t",
			want:      strings.Repeat("x", 50) + "_" + sha8("s\x00t"),
		},
		{
			name:      "stem fallback",
			candidate: "___",
			seed:      "s\x00___",
			want:      "mcp_" + sha8("s\x00___"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hashedName(tt.candidate, tt.seed)
			if got != tt.want {
				t.Errorf("hashedName(%q, %q) = %q, want %q", tt.candidate, tt.seed, got, tt.want)
			}
			if !suffixed.MatchString(got) || len(got) > maxNameLen {
				t.Errorf("hashedName(%q, %q) = %q: not a valid suffixed name", tt.candidate, tt.seed, got)
			}
		})
	}
}

func TestHashSeed(t *testing.T) {
	tests := []struct {
		round int
		want  string
	}{
		{0, "srv\x00tool"},
		{1, "srv\x00tool\x001"},
		{12, "srv\x00tool\x0012"},
	}
	for _, tt := range tests {
		if got := hashSeed("srv", "tool", tt.round); got != tt.want {
			t.Errorf("hashSeed(round %d) = %q, want %q", tt.round, got, tt.want)
		}
	}
}

// route is what a test checks of a Tool: its public name and where calls go.
type route struct {
	Name, Server, Original string
}

func routes(tools []Tool) []route {
	out := make([]route, 0, len(tools))
	for _, t := range tools {
		out = append(out, route{t.Name, t.Server, t.Original})
	}
	return out
}

// tools returns tools with the given names and an empty object schema.
func tools(names ...string) []*mcp.Tool {
	out := make([]*mcp.Tool, 0, len(names))
	for _, n := range names {
		out = append(out, &mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}})
	}
	return out
}

// src returns a Source whose prefix is its server name.
func src(server string, toolNames ...string) Source {
	return Source{Server: server, Prefix: server, Tools: tools(toolNames...)}
}

func TestBuildNames(t *testing.T) {
	// x and y, with no prefix, both list t, so both hash; their first
	// tries are known. (With a prefix, their namespace would be theirs: a
	// server with none could not list the names.)
	px := hashedName("t", "x\x00t")
	px1 := hashedName("t", "x\x00t\x001")
	tests := []struct {
		name    string
		sources []Source
		want    []route
	}{
		{
			name:    "servers with the same tool",
			sources: []Source{src("docs", "search"), src("calendar", "search")},
			want: []route{
				{"calendar__search", "calendar", "search"},
				{"docs__search", "docs", "search"},
			},
		},
		{
			name: "non-ASCII server and tool",
			sources: []Source{
				{Server: "jp", Prefix: "日本", Tools: tools("search")},
				src("docs", "検索"),
			},
			want: []route{
				{"docs__tool", "docs", "検索"},
				{"server__search", "jp", "search"},
			},
		},
		{
			name: "same prefix on two servers",
			sources: []Source{
				{Server: "a", Prefix: "p", Tools: tools("t", "u")},
				{Server: "b", Prefix: "p", Tools: tools("t")},
			},
			want: sorted([]route{
				{"p__t_" + sha8("a\x00t"), "a", "t"},
				{"p__t_" + sha8("b\x00t"), "b", "t"},
				{"p__u", "a", "u"},
			}),
		},
		{
			name: "tools that sanitize alike on one server",
			sources: []Source{
				src("s", "a.b", "a b"),
			},
			want: sorted([]route{
				{"s__a_b_" + sha8("s\x00a b"), "s", "a b"},
				{"s__a_b_" + sha8("s\x00a.b"), "s", "a.b"},
			}),
		},
		{
			name: "bare name wins over a hashed one",
			sources: []Source{
				{Server: "x", Prefix: "", Tools: tools("t")},
				{Server: "y", Prefix: "", Tools: tools("t")},
				{Server: "raw", Prefix: "", Tools: tools(px)},
			},
			want: sorted([]route{
				{px, "raw", px},
				{px1, "x", "t"},
				{hashedName("t", "y\x00t"), "y", "t"},
			}),
		},
		{
			name: "iteration goes on until free",
			sources: []Source{
				{Server: "x", Prefix: "", Tools: tools("t")},
				{Server: "y", Prefix: "", Tools: tools("t")},
				{Server: "raw", Prefix: "", Tools: tools(px, px1)},
			},
			want: sorted([]route{
				{px, "raw", px},
				{px1, "raw", px1},
				{hashedName("t", "x\x00t\x002"), "x", "t"},
				{hashedName("t", "y\x00t"), "y", "t"},
			}),
		},
		{
			name: "unprefixed keeps names",
			sources: []Source{
				{Server: "raw", Prefix: "", Tools: tools("test_simple_text", "-odd_", "with space")},
			},
			want: []route{
				{"-odd_", "raw", "-odd_"},
				{"test_simple_text", "raw", "test_simple_text"},
				{"with_space", "raw", "with space"},
			},
		},
		{
			// The name is in docs's namespace: raw's tool is not exposed
			// (see TestNamespaceIsReserved).
			name: "unprefixed in a prefixed server's namespace",
			sources: []Source{
				{Server: "raw", Prefix: "", Tools: tools("docs__search")},
				src("docs", "search"),
			},
			want: []route{{"docs__search", "docs", "search"}},
		},
		{
			name: "too long",
			sources: []Source{
				src("server", strings.Repeat("t", 60)),
			},
			want: []route{
				{"server__" + strings.Repeat("t", 47) + "_" + sha8("server\x00"+strings.Repeat("t", 60)), "server", strings.Repeat("t", 60)},
			},
		},
		{
			name: "exactly 64 is kept",
			sources: []Source{
				src("server", strings.Repeat("t", 56)),
			},
			want: []route{
				{"server__" + strings.Repeat("t", 56), "server", strings.Repeat("t", 56)},
			},
		},
		{
			name:    "no sources",
			sources: nil,
			want:    []route{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := routes(Build(tt.sources).Tools())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Build names mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func sorted(rs []route) []route {
	slices.SortFunc(rs, func(a, b route) int { return strings.Compare(a.Name, b.Name) })
	return rs
}

func TestBuildNormalizedServerCollisions(t *testing.T) {
	var sources []Source
	for _, s := range []string{"foo", "foo!", "foo_0beec7b5"} {
		sources = append(sources, src(s, "create_issue"))
	}
	got := Build(sources).Tools()

	names := make(map[string]bool)
	var prefixed []string
	for _, tool := range got {
		names[tool.Name] = true
		if strings.HasPrefix(tool.Name, "foo__create_issue_") {
			prefixed = append(prefixed, tool.Name)
			if !suffixed.MatchString(tool.Name) {
				t.Errorf("name %q is not suffixed", tool.Name)
			}
		}
	}
	if len(got) != 3 || len(names) != 3 {
		t.Errorf("got %d tools with %d distinct names, want 3 and 3: %v", len(got), len(names), routes(got))
	}
	if names["foo__create_issue"] {
		t.Errorf("bare name foo__create_issue is exposed: %v", routes(got))
	}
	if len(prefixed) != 2 {
		t.Errorf("names starting with foo__create_issue_ = %v, want 2 of them", prefixed)
	}
	if !names["foo_0beec7b5__create_issue"] {
		t.Errorf("foo_0beec7b5__create_issue is not kept bare: %v", routes(got))
	}
}

func TestBuildLongNames(t *testing.T) {
	long := strings.Repeat("long_server_name", 5)
	sources := []Source{
		src(long+"_a", strings.Repeat("tool", 20)),
		src(long+"_b", strings.Repeat("tool", 20)),
		src(long+"_a", strings.Repeat("tool", 20)+"x"),
		src("short", strings.Repeat("y", 100)),
	}
	got := Build(sources).Tools()
	seen := make(map[string]bool)
	for _, tool := range got {
		if len(tool.Name) > maxNameLen {
			t.Errorf("name %q has %d characters, want at most %d", tool.Name, len(tool.Name), maxNameLen)
		}
		if !suffixed.MatchString(tool.Name) {
			t.Errorf("name %q is not suffixed", tool.Name)
		}
		if seen[tool.Name] {
			t.Errorf("name %q is not unique", tool.Name)
		}
		seen[tool.Name] = true
	}
	if len(got) != 4 {
		t.Errorf("got %d tools, want 4", len(got))
	}
}

// TestNamespaceIsReserved: each prefix reserves its namespace for its
// server, even while the server exposes nothing: a tool or prompt of a
// server with no prefix whose public name would be in it is not exposed,
// and is reported as a trespass on that server. A server with a prefix is
// in its own namespace, even nested in another's.
func TestNamespaceIsReserved(t *testing.T) {
	sources := []Source{
		{Server: "victim", Prefix: "victim", Tools: tools("echo", "inner__y")},
		{Server: "down", Prefix: "down"}, // exposes nothing now
		{Server: "nested", Prefix: "victim__inner", Tools: tools("x")},
		{Server: "attacker", Prefix: "", Tools: tools("victim__echo", "victim..other", "down__x", "victim__inner__x", "victim_echo", "own")},
	}
	v := Build(sources)
	want := []route{
		{"own", "attacker", "own"},
		{"victim__echo", "victim", "echo"},
		{"victim__inner__x", "nested", "x"},
		{"victim_echo", "attacker", "victim_echo"},
	}
	if diff := cmp.Diff(want, routes(v.Tools())); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	wantT := []Trespass{
		{Server: "attacker", Original: "down__x", Name: "down__x", Owner: "down"},
		{Server: "attacker", Original: "victim__echo", Name: "victim__echo", Owner: "victim"},
		{Server: "attacker", Original: "victim__inner__x", Name: "victim__inner__x", Owner: "nested"},
		{Server: "attacker", Original: "victim..other", Name: "victim__other", Owner: "victim"},
		// A prefix's namespace holds another's nested in it.
		{Server: "victim", Original: "inner__y", Name: "victim__inner__y", Owner: "nested"},
	}
	if diff := cmp.Diff(wantT, v.Trespasses()); diff != "" {
		t.Errorf("trespasses (-want +got):\n%s", diff)
	}

	pv := BuildPrompts([]PromptSource{
		{Server: "victim", Prefix: "victim", Prompts: []*mcp.Prompt{{Name: "hello"}}},
		{Server: "attacker", Prefix: "", Prompts: []*mcp.Prompt{{Name: "victim__hello"}, {Name: "mine"}}},
	})
	if diff := cmp.Diff([]string{"mine", "victim__hello"}, pv.Names()); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}
	if server, original, ok := pv.Route("victim__hello"); !ok || server != "victim" || original != "hello" {
		t.Errorf("victim__hello routes to %q %q %v, want the victim's hello", server, original, ok)
	}
	wantP := []Trespass{{Server: "attacker", Original: "victim__hello", Name: "victim__hello", Owner: "victim"}}
	if diff := cmp.Diff(wantP, pv.Trespasses()); diff != "" {
		t.Errorf("prompt trespasses (-want +got):\n%s", diff)
	}
}

func TestBuildDeterministic(t *testing.T) {
	px := hashedName("p__t", "x\x00t")
	base := []Source{
		{Server: "x", Prefix: "p", Tools: tools("t", "u")},
		{Server: "y", Prefix: "p", Tools: tools("t")},
		{Server: "raw", Prefix: "", Tools: tools(px, "p__u")},
		{Server: "p", Prefix: "p!", Tools: tools("u", "v")},
	}
	want := routes(Build(base).Tools())

	for _, perm := range permutations(len(base)) {
		sources := make([]Source, len(base))
		for i, j := range perm {
			s := base[j]
			if i%2 == 1 { // vary the order of tools too
				s.Tools = slices.Clone(s.Tools)
				slices.Reverse(s.Tools)
			}
			sources[i] = s
		}
		got := routes(Build(sources).Tools())
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("order %v: names mismatch (-want +got):\n%s", perm, diff)
		}
	}
}

func TestBuildReversedOrder(t *testing.T) {
	sources := []Source{src("foo", "create_issue"), src("foo!", "create_issue"), src("foo_0beec7b5", "create_issue")}
	want := routes(Build(sources).Tools())
	slices.Reverse(sources)
	if diff := cmp.Diff(want, routes(Build(sources).Tools())); diff != "" {
		t.Errorf("reversed input: names mismatch (-want +got):\n%s", diff)
	}
}

// permutations returns every ordering of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := slices.Insert(slices.Clone(p), i, n-1)
			out = append(out, q)
		}
	}
	return out
}

func TestPermutations(t *testing.T) {
	got := permutations(4)
	seen := make(map[string]bool)
	for _, p := range got {
		seen[fmt.Sprint(p)] = true
	}
	if len(got) != 24 || len(seen) != 24 {
		t.Errorf("permutations(4) gave %d orderings, %d distinct; want 24", len(got), len(seen))
	}
}

// TestMayOwn: every name Build gives a server's tool, long, hashed or
// colliding, is one its prefix may own; a name of another prefix is not.
func TestMayOwn(t *testing.T) {
	long := strings.Repeat("long_server_name", 5)
	sources := []Source{
		src(long+"_a", strings.Repeat("tool", 20), "t"),
		src(long+"_b", "t"),
		src("foo", "create_issue"),
		src("foo!", "create_issue"),
		src("short", strings.Repeat("y", 100), "y"),
		{Server: "bare", Tools: tools("plain")},
	}
	prefixOf := make(map[string]string)
	for _, s := range sources {
		prefixOf[s.Server] = NamePrefix(s.Prefix)
	}
	for _, tool := range Build(sources).Tools() {
		if !MayOwn(prefixOf[tool.Server], tool.Name) {
			t.Errorf("MayOwn(%q, %q) = false for a name Build gave that server", prefixOf[tool.Server], tool.Name)
		}
	}
	for _, tt := range []struct {
		prefix, name string
		want         bool
	}{
		{"short__", "other__y", false},
		{"short__", "short__y", true},
		{"", "anything", true},
		{"short__", "other__y_0123abcd", false}, // hashed, of another prefix
		{"short__", "shor_0123abcd", true},      // hashed, cut inside the prefix
		{"short__", "shor_0123abcz", false},     // not a hash suffix
	} {
		if got := MayOwn(tt.prefix, tt.name); got != tt.want {
			t.Errorf("MayOwn(%q, %q) = %v, want %v", tt.prefix, tt.name, got, tt.want)
		}
	}
}
