package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseChain(t *testing.T) {
	const a, b = "0123456789abcdef", "fedcba9876543210"
	for _, tc := range []struct {
		name, in string
		want     string // the chain encoded again
		depth    int
	}{
		{"unset", "", "", 0},
		{"one", a, a, 1},
		{"two", a + "," + b, a + "," + b, 2},
		{"garbage", "hello", "-", 1},
		{"upper case", strings.ToUpper(a), "-", 1},
		{"too short", a[:15], "-", 1},
		{"too long", a + "0", "-", 1},
		{"empty parts", ",", "-,-", 2},
		{"a part not an identity", a + ",x," + b, a + ",-," + b, 3},
		{"deeper than the cap", strings.Repeat(a+",", 10) + a, strings.TrimSuffix(strings.Repeat(a+",", MaxChainDepth), ",") + ",-", MaxChainDepth + 1},
		{"a megabyte", strings.Repeat("x", 1<<20), "-", 1},
		{"a megabyte of commas", strings.Repeat(",", 1<<20), strings.TrimSuffix(strings.Repeat("-,", MaxChainDepth+1), ","), MaxChainDepth + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ParseChain(tc.in)
			if got := c.String(); got != tc.want {
				t.Errorf("ParseChain(%.40q).String() = %q, want %q", tc.in, got, tc.want)
			}
			if got := c.Depth(); got != tc.depth {
				t.Errorf("ParseChain(%.40q).Depth() = %d, want %d", tc.in, got, tc.depth)
			}
			if again := ParseChain(c.String()); !cmp.Equal(again.ids, c.ids) {
				t.Errorf("the encoding does not decode to itself: %q, %q", again.ids, c.ids)
			}
		})
	}
}

func TestChainNext(t *testing.T) {
	srv := &Server{Name: "sb", Command: "switchboard", Args: []string{"serve", "--stdio"}}
	one := Chain{}.Next(srv)
	if one.Depth() != 1 || !isID(one.String()) {
		t.Fatalf("Next of the empty chain = %q, want one identity", one)
	}
	two := one.Next(srv)
	if want := one.String() + "," + one.String(); two.String() != want {
		t.Errorf("Next = %q, want %q", two, want)
	}
	if one.Depth() != 1 {
		t.Errorf("Next changed its receiver: %q", one)
	}
	// However deep the chain grows through Switchboards that do not check
	// it (a library host), it stays bounded, and over the cap.
	c := ParseChain("x")
	for range 100 {
		c = c.Next(srv)
	}
	if c.Depth() != MaxChainDepth+1 || len(c.String()) != (MaxChainDepth+1)*(idLen+1)-1 {
		t.Errorf("a chain grown 100 times: depth %d, %q", c.Depth(), c)
	}
}

// TestChainIdentity: an entry's identity is what its process is: its
// command, arguments, environment (unresolved), directory and inheritEnv.
// Its name, its source and the fields that concern only the manager (a
// timeout that SWITCHBOARD_TIMEOUT_MS sets in one Switchboard and not in
// the other, say) leave it as it is; none of it is a secret.
func TestChainIdentity(t *testing.T) {
	base := Server{Command: "npx", Args: []string{"-y", "switchboard-mcp", "serve", "--stdio"}, Env: map[string]string{"TOKEN": "${TOKEN}"}}
	id := chainID(&base)
	same := base.Clone()
	same.Name, same.Source, same.Timeout, same.Prefix, same.Required = "other", "/elsewhere.json", ptr[int64](5), ptr(""), true
	same.Tools.Allow = []string{"x"}
	if got := chainID(&same); got != id {
		t.Errorf("a change of what is not the process changed the identity: %s, want %s", got, id)
	}
	noArgs, emptyArgs := Server{Command: "x"}, Server{Command: "x", Args: []string{}, Env: map[string]string{}}
	if chainID(&noArgs) != chainID(&emptyArgs) {
		t.Error("absent and empty args and env give different identities")
	}
	for name, change := range map[string]func(*Server){
		"command":    func(s *Server) { s.Command = "switchboard" },
		"args":       func(s *Server) { s.Args = append(s.Args, "--config", "f.json") },
		"env":        func(s *Server) { s.Env = map[string]string{"TOKEN": "${OTHER}"} },
		"cwd":        func(s *Server) { s.Cwd = "/srv" },
		"inheritEnv": func(s *Server) { s.InheritEnv = true },
	} {
		c := base.Clone()
		change(&c)
		if chainID(&c) == id {
			t.Errorf("a change of %s left the identity as it was", name)
		}
	}
	resolved, _, err := base.Resolve(env(map[string]string{"TOKEN": "secret-value"}))
	if err != nil {
		t.Fatal(err)
	}
	if chainID(&resolved) == id {
		t.Error("the identity of the resolved entry is that of the unresolved one: it would depend on the secret")
	}
}

func TestChainCheck(t *testing.T) {
	cfg, err := Parse("/home/u/mcp.json", []byte(`{"mcpServers": {
		"files": {"command": "files-server"},
		"switchboard": {"command": "npx", "args": ["-y", "switchboard-mcp", "serve", "--stdio"]},
		"off": {"command": "off-server", "enabled": false},
		"web": {"url": "https://example.invalid/mcp"}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	server := func(name string) *Server {
		for i := range cfg.Servers {
			if cfg.Servers[i].Name == name {
				return &cfg.Servers[i]
			}
		}
		t.Fatalf("no server %q", name)
		return nil
	}
	other := &Server{Command: "some-gateway"}
	nested := func(n int) Chain {
		var c Chain
		for range n {
			c = c.Next(other)
		}
		return c
	}
	for _, tc := range []struct {
		name  string
		chain Chain
		want  *ChainError
	}{
		{"no chain", Chain{}, nil},
		{"started by another entry", Chain{}.Next(other), nil},
		{"started by one of its entries", Chain{}.Next(server("switchboard")), &ChainError{Server: "switchboard", Source: "/home/u/mcp.json", Depth: 1}},
		{"further up the chain", Chain{}.Next(server("switchboard")).Next(other), &ChainError{Server: "switchboard", Source: "/home/u/mcp.json", Depth: 2}},
		{"by a disabled entry", Chain{}.Next(server("off")), nil},
		{"an http entry never started a process", Chain{}.Next(server("web")), nil},
		{"below the cap", nested(MaxChainDepth - 1), nil},
		{"at the cap", nested(MaxChainDepth), &ChainError{Depth: MaxChainDepth}},
		{"over it", nested(MaxChainDepth + 1), &ChainError{Depth: MaxChainDepth + 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.chain.Check(cfg)
			var got *ChainError
			if err != nil && !errors.As(err, &got) {
				t.Fatalf("Check = %v, want a *ChainError", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChainErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		err  *ChainError
		want []string
	}{
		{&ChainError{Server: "switchboard", Source: "/home/u/claude_desktop_config.json", Depth: 1}, []string{
			`server "switchboard" (in /home/u/claude_desktop_config.json) started this Switchboard`,
			"the config starts Switchboard itself",
			`remove "switchboard" from the config Switchboard reads`,
			"or give Switchboard a config of its own with --config",
		}},
		{&ChainError{Depth: MaxChainDepth}, []string{
			"4 Switchboards already run one inside another (SWITCHBOARD_CHAIN)",
			"a config starts Switchboard",
			"or give Switchboard a config of its own with --config",
		}},
	} {
		msg := tc.err.Error()
		if !strings.HasPrefix(msg, ChainRefusal) || strings.Contains(msg, "\n") {
			t.Errorf("%q does not start with %q on one line", msg, ChainRefusal)
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q lacks %q", msg, w)
			}
		}
	}
}
