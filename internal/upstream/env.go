package upstream

import (
	"os"
	"strings"

	"github.com/switchboard-mcp/switchboard/config"
)

// childEnv builds a stdio child's environment from the gateway's (through
// lookup) and the server's resolved env, which wins. Unless the server sets
// inheritEnv, the child gets only the variables named by inheritedEnv, of
// its platform: enough to find programs and a home, nothing that could
// carry the gateway's own secrets. Either way it gets chain as
// config.ChainEnv, whatever the gateway's or the server's env say: a
// Switchboard that the child runs must see where it stands.
func childEnv(srv *config.Server, chain string, lookup func(string) (string, bool)) []string {
	return buildEnv(srv, chain, lookup, inheritedEnv, envKey)
}

// buildEnv is childEnv with the platform's rules given: the names a child
// inherits, and key, which maps a name to what identifies it (on Windows,
// where names ignore case, Path and PATH are one variable).
func buildEnv(srv *config.Server, chain string, lookup func(string) (string, bool), inherited []string, key func(string) string) []string {
	type variable struct{ name, value string }
	vars := make(map[string]variable)
	set := func(name, value string) { vars[key(name)] = variable{name, value} }
	if srv.InheritEnv {
		for _, kv := range os.Environ() {
			// On Windows, names such as "=C:" begin with "=".
			if name, value, ok := strings.Cut(kv[min(1, len(kv)):], "="); ok {
				set(kv[:min(1, len(kv))]+name, value)
			}
		}
	} else {
		for _, name := range inherited {
			if value, ok := lookup(name); ok {
				set(name, value)
			}
		}
	}
	for name, value := range srv.Env {
		set(name, value)
	}
	set(config.ChainEnv, chain)
	env := make([]string, 0, len(vars))
	for _, v := range vars {
		env = append(env, v.name+"="+v.value)
	}
	return env
}

// childChain returns the chain of a process that cfg, a server's
// unresolved entry, starts in a Switchboard whose environment lookup
// reads: its own chain and the entry.
func childChain(cfg *config.Server, lookup func(string) (string, bool)) string {
	own, _ := lookup(config.ChainEnv)
	return config.ParseChain(own).Next(cfg).String()
}
