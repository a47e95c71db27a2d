package switchboard_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
)

// TestForTool: a config narrowed to a tool keeps the servers that may own
// it, and the rejected entries it would belong to; it stays whole when
// the prefix does not tell.
func TestForTool(t *testing.T) {
	off := false
	long := strings.Repeat("p", 60) // its tools' names are cut and hashed
	server := func(name string, prefix *string, enabled *bool) config.Server {
		return config.Server{Name: name, Command: "x", Prefix: prefix, Enabled: enabled}
	}
	none, shared := "", "shared"
	cfg := &config.Config{
		Servers: []config.Server{
			server("a", nil, nil),
			server("b", nil, nil),
			server("bare", &none, nil),      // no prefix: may own any name
			server("bare-off", &none, &off), // disabled, without a prefix
			server("a-off", nil, &off),      // disabled, prefix a-off
			server(long, nil, nil),
			server("one", &shared, nil), // two enabled servers share the prefix
			server("two", &shared, nil),
			server("two-off", &shared, &off),
		},
		Rejected: []config.Rejected{{Name: "a", Err: errors.New("bad")}, {Name: "c", Err: errors.New("bad")}},
	}
	for _, tc := range []struct {
		tool              string
		servers, rejected []string
	}{
		{"a__echo", []string{"a", "bare"}, []string{"a"}},
		{"b__echo", []string{"b", "bare"}, nil},
		{"c__echo", []string{"bare"}, []string{"c"}},
		{"a-off__echo", []string{"bare", "a-off"}, nil},
		{"echo", []string{"bare"}, nil},
		{strings.Repeat("p", 55) + "_0123abcd", []string{"bare", long}, nil},
		{"shared__echo", nil, nil}, // the whole config
	} {
		got := switchboard.ForTool(cfg, tc.tool)
		want := cfg
		if tc.servers != nil {
			want = &config.Config{
				Servers:  pick(cfg.Servers, func(s config.Server) string { return s.Name }, tc.servers),
				Rejected: pick(cfg.Rejected, func(r config.Rejected) string { return r.Name }, tc.rejected),
			}
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
			t.Errorf("ForTool(%q) (-want +got):\n%s", tc.tool, diff)
		}
	}
	if got := switchboard.ForTool(nil, "a__echo"); got != nil {
		t.Errorf("ForTool(nil) = %+v, want nil", got)
	}
}

// pick returns the items called names, in their order in items.
func pick[T any](items []T, name func(T) string, names []string) []T {
	var out []T
	for _, it := range items {
		if slices.Contains(names, name(it)) {
			out = append(out, it)
		}
	}
	return out
}
