package policy

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/identity"
)

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"memory", "memory", true},
		{"memory", "memory2", false},
		{"memory", "", false},
		{"*", "", true},
		{"*", "anything/at all", true},
		{"memory__*", "memory__read", true},
		{"memory__*", "memory__", true},
		{"memory__*", "github__read", false},
		{"*__delete*", "github__delete_repo", true},
		{"*__delete*", "github__undelete", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "acb", false},
		{"a*a", "a", false}, // prefix and suffix must not overlap
		{"a*a", "aa", true},
		{"file:///docs/*", "file:///docs/a/b.md", true},
		{"file:///docs/*", "file:///etc/passwd", false},
		{"x?", "xy", false}, // ? is literal
		{"x?", "x?", true},
		{"[a]", "a", false}, // no classes
	} {
		g, err := compileGlob(tc.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tc.pattern, err)
		}
		if got := g.match(tc.s); got != tc.want {
			t.Errorf("%q matches %q = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
	if _, err := compileGlob(""); err == nil {
		t.Error("empty glob: no error")
	}
}

func must(t testing.TB, rules ...Rule) *Engine {
	t.Helper()
	e, err := New(rules, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func tool(server, name string) Target { return Target{Server: server, Tool: server + "__" + name} }

// TestDecide: no rules allow all; deny wins over allow; once a rule exists
// what no rule allows is denied; lists match by kind.
func TestDecide(t *testing.T) {
	eng := &identity.Identity{Subject: "ann", Groups: []string{"eng"}}
	admin := &identity.Identity{Subject: "root", Scopes: []string{"admin"}}
	design := []Rule{
		{Effect: Allow, Servers: []string{"memory"}, When: "'eng' in identity.groups"},
		{Effect: Allow, When: "'admin' in identity.scopes"},
		{Effect: Deny, Tools: []string{"*__delete*"}},
	}
	for _, tc := range []struct {
		name  string
		rules []Rule
		id    *identity.Identity
		t     Target
		want  Decision
	}{
		{"no rules", nil, nil, tool("any", "x"), Decision{Allowed: true, Rule: -1}},
		{"eng on memory", design, eng, tool("memory", "read"), Decision{Allowed: true, Rule: 0}},
		{"eng elsewhere", design, eng, tool("github", "read"), Decision{Rule: -1}},
		{"eng prompt on memory", design, eng, Target{Server: "memory", Prompt: "memory__p"}, Decision{Allowed: true, Rule: 0}},
		{"admin anywhere", design, admin, tool("github", "read"), Decision{Allowed: true, Rule: 1}},
		{"deny wins", design, admin, tool("github", "delete_repo"), Decision{Rule: 2}},
		{"deny wins for eng", design, eng, tool("memory", "delete_entity"), Decision{Rule: 2}},
		{"deny for tools only", design, admin, Target{Server: "github", Prompt: "github__delete"}, Decision{Allowed: true, Rule: 1}},
		{"anonymous", design, nil, tool("memory", "read"), Decision{Rule: -1}},
		{"allow tools only", []Rule{{Effect: Allow, Tools: []string{"memory__*"}}}, nil, Target{Server: "memory", Prompt: "memory__p"}, Decision{Rule: -1}},
		{"allow prompts", []Rule{{Effect: Allow, Tools: []string{"x"}, Prompts: []string{"memory__*"}}}, nil, Target{Server: "memory", Prompt: "memory__p"}, Decision{Allowed: true, Rule: 0}},
		{"allow resources", []Rule{{Effect: Allow, Resources: []string{"file:///docs/*"}}}, nil, Target{Server: "fs", URI: "file:///docs/a"}, Decision{Allowed: true, Rule: 0}},
		{"resource outside", []Rule{{Effect: Allow, Resources: []string{"file:///docs/*"}}}, nil, Target{Server: "fs", URI: "file:///etc/passwd"}, Decision{Rule: -1}},
		{"empty list matches nothing", []Rule{{Effect: Allow, Servers: []string{}}}, nil, tool("memory", "read"), Decision{Rule: -1}},
		{"empty rule matches all", []Rule{{Effect: Allow}}, nil, tool("memory", "read"), Decision{Allowed: true, Rule: 0}},
		{"deny only", []Rule{{Effect: Deny, Servers: []string{"github"}}}, nil, tool("memory", "read"), Decision{Rule: -1}},
		{"first allow decides", []Rule{{Effect: Allow, Servers: []string{"m*"}}, {Effect: Allow}}, nil, tool("memory", "read"), Decision{Allowed: true, Rule: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := must(t, tc.rules...).Decide(tc.id, tc.t)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
	var nilEngine *Engine
	if !nilEngine.Decide(nil, tool("a", "b")).Allowed {
		t.Error("a nil engine denies")
	}
}

// TestWhenVariables: each variable a condition sees.
func TestWhenVariables(t *testing.T) {
	f := false
	id := &identity.Identity{Subject: "ann", Client: "cli", Scopes: []string{"mcp", "tools:read"}, Groups: []string{"eng"},
		Claims: map[string]any{"tenant": "acme", "level": float64(3), "roles": []any{"a", "b"}, "org": map[string]any{"id": "o1"}}}
	target := Target{Server: "memory", Tool: "memory__read", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f}}
	for _, tc := range []struct {
		when string
		want bool
	}{
		{"identity.subject == 'ann'", true},
		{"identity.subject == 'bob'", false},
		{"identity.client == 'cli'", true},
		{"'tools:read' in identity.scopes", true},
		{"identity.scopes.exists(s, s.startsWith('tools:'))", true},
		{"'ops' in identity.groups", false},
		{"identity.claims.tenant == 'acme'", true},
		{"identity.claims['level'] >= 3.0", true},
		{"'b' in identity.claims.roles", true},
		{"identity.claims.org.id == 'o1'", true},
		{"has(identity.claims.missing)", false},
		{"'missing' in identity.claims", false},
		{"server == 'memory'", true},
		{"tool.endsWith('__read')", true},
		{"prompt == '' && uri == ''", true},
		{"annotations.readOnlyHint", true},
		{"annotations.destructiveHint", true}, // the spec's default
		{"annotations.idempotentHint", false},
		{"annotations.openWorldHint", false},
	} {
		e := must(t, Rule{Effect: Allow, When: tc.when})
		if got := e.Decide(id, target); got.Allowed != tc.want || got.Err != nil {
			t.Errorf("%s: %+v, want allowed %v", tc.when, got, tc.want)
		}
	}
	// Without annotations, the spec's defaults; without identity, empty.
	e := must(t, Rule{Effect: Allow, When: "!annotations.readOnlyHint && annotations.destructiveHint && annotations.openWorldHint && identity.subject == '' && size(identity.groups) == 0 && size(identity.claims) == 0"})
	if got := e.Decide(nil, tool("a", "b")); !got.Allowed {
		t.Errorf("defaults: %+v", got)
	}
}

// TestLoadErrors: a bad rule is refused with its index, field and, for a
// condition, the position in it.
func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		rules []Rule
		want  string
		line  int
		col   int
	}{
		{[]Rule{{Effect: Allow}, {Effect: Deny, Tools: []string{"a", ""}}}, "rule 1: tools[1]: invalid policy rule: empty glob", 0, 0},
		{[]Rule{{Effect: Allow, Servers: []string{""}}}, "rule 0: servers[0]: invalid policy rule: empty glob", 0, 0},
		{[]Rule{{Effect: Allow, When: "identity.subject"}}, "rule 0: when: invalid policy rule: 1:1: the expression is string; want a bool", 1, 1},
		{[]Rule{{Effect: Allow, When: "1 + 2"}}, "rule 0: when: invalid policy rule: 1:1: the expression is int; want a bool", 1, 1},
		{[]Rule{{Effect: Allow, When: "identity.claims.x"}}, "want a bool", 1, 1}, // dyn is not enough
		{[]Rule{{Effect: Allow, When: "'a' in identity.groups &&"}}, "rule 0: when: invalid policy rule: 1:26: Syntax error", 1, 26},
		{[]Rule{{Effect: Allow, When: "true &&\n  identity.sbject == 'x'"}}, "rule 0: when: invalid policy rule: 2:11: undefined field 'sbject'", 2, 11},
		{[]Rule{{Effect: Allow, When: "groups == 'x'"}}, "rule 0: when: invalid policy rule: 1:1: undeclared reference to 'groups'", 1, 1},
		{[]Rule{{Effect: Allow, When: "identity.subject == 1"}}, "rule 0: when: invalid policy rule: 1:18: found no matching overload for '_==_'", 1, 18},
		{[]Rule{{Effect: Allow, When: strings.Repeat("true && ", 600) + "true"}}, "more than MaxExpressionBytes (4096)", 0, 0},
		{[]Rule{{Effect: Effect(7)}}, "rule 0: effect: invalid policy rule: unknown effect 7", 0, 0},
	} {
		_, err := New(tc.rules, nil)
		var re *RuleError
		if !errors.As(err, &re) || !errors.Is(err, ErrInvalidRule) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a RuleError with %q", tc.rules, err, tc.want)
			continue
		}
		if re.Line != tc.line || re.Column != tc.col {
			t.Errorf("%+v: at %d:%d, want %d:%d", tc.rules, re.Line, re.Column, tc.line, tc.col)
		}
	}
}

// TestCostBounded: a condition sure to cost too much is refused at load;
// one that reaches the limit at run time is stopped and fails closed, and
// is logged once.
func TestCostBounded(t *testing.T) {
	// Five nested maps over ten elements: 10^5 steps, known at load.
	ten := "[0,1,2,3,4,5,6,7,8,9]"
	nested := "x0"
	for i := range 5 {
		nested = fmt.Sprintf("%s.map(x%d, %s)", ten, i, nested)
	}
	if _, err := New([]Rule{{Effect: Allow, When: "size(" + nested + ") > 0"}}, nil); !errors.Is(err, ErrInvalidRule) || !strings.Contains(err.Error(), "is more than CostLimit (10000)") {
		t.Errorf("nested maps: %v, want refused for its cost", err)
	}

	// Ten nested loops that might stop early, so their least estimate is
	// small, but they run 10^10 steps: stopped at the limit, fail closed.
	nested = "true"
	for i := range 10 {
		nested = fmt.Sprintf("%s.all(x%d, %s)", ten, i, nested)
	}
	e := must(t, Rule{Effect: Allow, When: nested})
	if got := e.Decide(nil, tool("m", "t")); got.Allowed || got.Rule != -1 {
		t.Errorf("nested loops: %+v, want denied", got)
	}

	// A loop whose size comes from the identity: bounded only at run time.
	var logs bytes.Buffer
	long := "identity.groups.all(a, identity.groups.all(b, identity.groups.all(c, a + b + c != 'x')))"
	for _, effect := range []Effect{Allow, Deny} {
		logs.Reset()
		when := long
		if effect == Deny {
			when = "!(" + long + ")"
		}
		e, err := New([]Rule{{Effect: effect, When: when}, {Effect: Allow}}, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		small := &identity.Identity{Groups: []string{"a", "b"}}
		if got := e.Decide(small, tool("m", "t")); !got.Allowed || got.Err != nil {
			t.Errorf("%v, small identity: %+v", effect, got)
		}
		groups := make([]string, 1000)
		for i := range groups {
			groups[i] = fmt.Sprint(i)
		}
		huge := &identity.Identity{Groups: groups}
		for range 3 {
			got := e.Decide(huge, tool("m", "t"))
			switch effect {
			case Deny:
				if got.Allowed || got.Rule != 0 || got.Err == nil || !strings.Contains(got.Err.Error(), "cost limit") {
					t.Errorf("deny rule over its cost: %+v, want denied by rule 0 with the cost error", got)
				}
			case Allow:
				// The failing allow rule allows nothing; the next one decides.
				if !got.Allowed || got.Rule != 1 {
					t.Errorf("allow rule over its cost: %+v, want rule 1 to decide", got)
				}
			}
		}
		if n := strings.Count(logs.String(), "policy condition failed"); n != 1 {
			t.Errorf("%v: logged %d times, want once:\n%s", effect, n, logs.String())
		}
	}
}

// TestMissingClaim: a condition over a claim the token lacks fails closed.
func TestMissingClaim(t *testing.T) {
	e := must(t, Rule{Effect: Allow, When: "identity.claims.admin == true"})
	for _, id := range []*identity.Identity{nil, {}, {Claims: map[string]any{"other": 1}}, {Claims: map[string]any{"admin": "yes"}}} {
		if got := e.Decide(id, tool("m", "t")); got.Allowed {
			t.Errorf("%+v: allowed", id)
		}
	}
	if got := e.Decide(&identity.Identity{Claims: map[string]any{"admin": true}}, tool("m", "t")); !got.Allowed {
		t.Errorf("admin: %+v", got)
	}
	d := must(t, Rule{Effect: Deny, When: "identity.claims.tier != 'gold'"}, Rule{Effect: Allow})
	if got := d.Decide(&identity.Identity{}, tool("m", "t")); got.Allowed || got.Err == nil {
		t.Errorf("deny over a missing claim: %+v, want denied with the error", got)
	}
}

// TestConcurrentDecide runs Decide from many goroutines (under -race).
func TestConcurrentDecide(t *testing.T) {
	e := must(t,
		Rule{Effect: Allow, Servers: []string{"memory"}, When: "'eng' in identity.groups"},
		Rule{Effect: Deny, Tools: []string{"*__delete*"}, When: "identity.claims.x == 1"},
	)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			id := &identity.Identity{Groups: []string{"eng"}, Claims: map[string]any{"g": g}}
			for range 200 {
				if !e.Decide(id, tool("memory", "read")).Allowed {
					t.Error("denied")
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkDecide: 20 rules over 1,000 tools, the cost of filtering one
// list. ns/op is per list.
func BenchmarkDecide(b *testing.B) {
	var rules []Rule
	for i := range 18 {
		rules = append(rules, Rule{Effect: Allow, Servers: []string{fmt.Sprintf("server%d", i)}, When: fmt.Sprintf("'group%d' in identity.groups", i)})
	}
	rules = append(rules,
		Rule{Effect: Deny, Tools: []string{"*__delete*"}},
		Rule{Effect: Deny, When: "annotations.destructiveHint && !('admin' in identity.scopes)"},
	)
	e := must(b, rules...)
	f := false
	tools := make([]Target, 1000)
	for i := range tools {
		tools[i] = Target{Server: fmt.Sprintf("server%d", i%20), Tool: fmt.Sprintf("server%d__tool%d", i%20, i), Annotations: &mcp.ToolAnnotations{DestructiveHint: &f}}
	}
	id := &identity.Identity{Subject: "ann", Scopes: []string{"mcp"}, Groups: []string{"group3", "group17", "staff"}, Claims: map[string]any{"tenant": "acme"}}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, t := range tools {
			if e.Decide(id, t).Allowed {
				n++
			}
		}
		if n != 100 {
			b.Fatalf("%d allowed, want 100", n)
		}
	}
}
