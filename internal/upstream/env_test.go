package upstream

import (
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/config"
)

func TestChildEnvIsMinimal(t *testing.T) {
	// The parent has every variable a child inherits on this platform, and
	// secrets.
	parent := map[string]string{"AWS_SECRET_ACCESS_KEY": "hunter2", "GITHUB_TOKEN": "ghp_x"}
	want := []string{"DEBUG=1", "PATH=/opt/bin", config.ChainEnv + "=0123456789abcdef"}
	for _, name := range inheritedEnv {
		parent[name] = "inherited " + name
		if name != "PATH" {
			want = append(want, name+"=inherited "+name)
		}
	}
	lookup := func(k string) (string, bool) { v, ok := parent[k]; return v, ok }
	srv := config.Server{Env: map[string]string{"DEBUG": "1", "PATH": "/opt/bin"}}
	got := childEnv(&srv, "0123456789abcdef", lookup)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("childEnv = %v, want %v", got, want)
	}
}

func TestChildEnvInherit(t *testing.T) {
	t.Setenv("SWITCHBOARD_TEST_INHERITED", "yes")
	srv := config.Server{InheritEnv: true, Env: map[string]string{"DEBUG": "1"}}
	got := childEnv(&srv, "0123456789abcdef", func(string) (string, bool) { return "", false })
	for _, want := range []string{"SWITCHBOARD_TEST_INHERITED=yes", "DEBUG=1"} {
		if !slices.Contains(got, want) {
			t.Errorf("childEnv with inheritEnv lacks %q", want)
		}
	}
}

// TestChildEnvWindowsRules runs Windows's rules on any platform: names
// ignore case, so the server's "Path" replaces the inherited "PATH" rather
// than giving the child two.
func TestChildEnvWindowsRules(t *testing.T) {
	parent := map[string]string{"PATH": `C:\Windows`, "SYSTEMROOT": `C:\Windows`, "GITHUB_TOKEN": "ghp_x"}
	lookup := func(k string) (string, bool) { v, ok := parent[strings.ToUpper(k)]; return v, ok }
	srv := config.Server{Env: map[string]string{"Path": `C:\node`}}
	got := buildEnv(&srv, "-", lookup, []string{"PATH", "SYSTEMROOT", "TEMP"}, strings.ToUpper)
	slices.Sort(got)
	want := []string{`Path=C:\node`, `SWITCHBOARD_CHAIN=-`, `SYSTEMROOT=C:\Windows`}
	if !slices.Equal(got, want) {
		t.Errorf("buildEnv = %v, want %v", got, want)
	}
}

// TestChildEnvCarriesTheChain: every stdio child gets the chain it is
// given, once, with or without inheritEnv, whatever the gateway's own
// environment and the server's env say.
func TestChildEnvCarriesTheChain(t *testing.T) {
	const chain = "0123456789abcdef,fedcba9876543210"
	t.Setenv(config.ChainEnv, "0123456789abcdef") // the gateway's own
	parent := map[string]string{config.ChainEnv: "0123456789abcdef", "PATH": "/bin"}
	lookup := func(k string) (string, bool) { v, ok := parent[k]; return v, ok }
	for _, inherit := range []bool{false, true} {
		srv := config.Server{InheritEnv: inherit, Env: map[string]string{config.ChainEnv: "forged"}}
		var got []string
		for _, kv := range childEnv(&srv, chain, lookup) {
			if strings.HasPrefix(kv, config.ChainEnv+"=") {
				got = append(got, kv)
			}
		}
		if want := []string{config.ChainEnv + "=" + chain}; !slices.Equal(got, want) {
			t.Errorf("inheritEnv %v: the child's chain is %q, want %q", inherit, got, want)
		}
	}
}

// TestChildChain: a child's chain is the gateway's, read through lookup,
// and the identity of the entry as configured, without its secrets; a
// gateway that no Switchboard started begins one.
func TestChildChain(t *testing.T) {
	entry := config.Server{Name: "sb", Command: "switchboard", Args: []string{"serve", "--stdio", "--token", "${TOKEN}"}}
	resolved := entry.Clone()
	resolved.Args[3] = "secret-value"
	own := config.ParseChain("").Next(&entry).String()
	for _, tc := range []struct{ name, parent, want string }{
		{"unset", "", own},
		{"started by a Switchboard", "0123456789abcdef", "0123456789abcdef," + own},
		{"garbage", "not a chain", "-," + own},
	} {
		lookup := func(k string) (string, bool) {
			if k == config.ChainEnv && tc.parent != "" {
				return tc.parent, true
			}
			return "", false
		}
		if got := childChain(&entry, lookup); got != tc.want {
			t.Errorf("%s: childChain = %q, want %q", tc.name, got, tc.want)
		}
	}
	if own == config.ParseChain("").Next(&resolved).String() {
		t.Error("the chain does not tell the resolved entry from the unresolved one: it depends on the secret")
	}
}
