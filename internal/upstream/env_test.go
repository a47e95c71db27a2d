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
	want := []string{"DEBUG=1", "PATH=/opt/bin"}
	for _, name := range inheritedEnv {
		parent[name] = "inherited " + name
		if name != "PATH" {
			want = append(want, name+"=inherited "+name)
		}
	}
	lookup := func(k string) (string, bool) { v, ok := parent[k]; return v, ok }
	srv := config.Server{Env: map[string]string{"DEBUG": "1", "PATH": "/opt/bin"}}
	got := childEnv(&srv, lookup)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("childEnv = %v, want %v", got, want)
	}
}

func TestChildEnvInherit(t *testing.T) {
	t.Setenv("SWITCHBOARD_TEST_INHERITED", "yes")
	srv := config.Server{InheritEnv: true, Env: map[string]string{"DEBUG": "1"}}
	got := childEnv(&srv, func(string) (string, bool) { return "", false })
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
	got := buildEnv(&srv, lookup, []string{"PATH", "SYSTEMROOT", "TEMP"}, strings.ToUpper)
	slices.Sort(got)
	want := []string{`Path=C:\node`, `SYSTEMROOT=C:\Windows`}
	if !slices.Equal(got, want) {
		t.Errorf("buildEnv = %v, want %v", got, want)
	}
}
