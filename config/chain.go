package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// ChainEnv names the environment variable that Switchboard sets for every
// stdio server it starts: the identities of the config entries that
// started each Switchboard above the server, outermost first, then that
// of the server's own entry, comma-separated. A Switchboard that a server
// of another one runs reads it, and refuses to run inside itself (see
// [Chain.Check]).
const ChainEnv = "SWITCHBOARD_CHAIN"

// MaxChainDepth is how many Switchboards may run one inside another, the
// outermost included: one whose chain already holds that many entries
// refuses to run. The identities of the entries stop a config that starts
// Switchboard on itself; the depth stops what they cannot tell, a chain
// whose entries differ at every level (a wrapper script that writes a new
// config for each Switchboard it starts, say).
const MaxChainDepth = 4

// ChainExitCode is the exit status of the switchboard command when it
// refuses to run inside itself. With the line it prints on stderr, which
// starts with "switchboard: " and [ChainRefusal], it tells the Switchboard
// that started it that its server will refuse again until a config
// changes.
const ChainExitCode = 3

// ChainRefusal starts the message of a [*ChainError].
const ChainRefusal = "refusing to start: "

// idLen is how many hex digits of an entry's fingerprint identify it in a
// chain: 64 bits, which no two entries share by accident.
const idLen = 16

// maxHops bounds what is read of a chain: a chain of that many entries is
// deeper than MaxChainDepth already, whatever follows.
const maxHops = MaxChainDepth + 1

// A Chain is what [ChainEnv] says: the entries that started the
// Switchboards above a process, outermost first, by their identities. Its
// zero value is the chain of a process that no Switchboard started.
type Chain struct {
	ids []string // idLen hex digits each; "" for a part that is not one
}

// ParseChain decodes the value of [ChainEnv]. Whatever the value, it reads
// at most MaxChainDepth+1 parts of it, and keeps a part that is not an
// identity as one of an unknown entry, which counts for the depth alone:
// a hostile or broken value can make a Switchboard refuse to run, never
// make it run deeper, nor cost it memory.
func ParseChain(v string) Chain {
	if v == "" {
		return Chain{}
	}
	parts := strings.SplitN(v, ",", maxHops)
	for i, p := range parts {
		if !isID(p) {
			parts[i] = ""
		}
	}
	return Chain{ids: parts}
}

// isID reports whether s is an identity: idLen lowercase hex digits.
func isID(s string) bool {
	if len(s) != idLen {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// String encodes c as the value of [ChainEnv]; an unknown entry is "-".
func (c Chain) String() string {
	parts := make([]string, len(c.ids))
	for i, id := range c.ids {
		parts[i] = id
		if id == "" {
			parts[i] = "-"
		}
	}
	return strings.Join(parts, ",")
}

// Depth returns how many Switchboards run above the process: the length of
// the chain, which stops counting past MaxChainDepth+1.
func (c Chain) Depth() int { return len(c.ids) }

// Next returns the chain of a process that srv, an entry of a Switchboard
// whose chain is c, starts: c and srv's identity. It keeps no more than
// MaxChainDepth+1 entries, the innermost.
func (c Chain) Next(srv *Server) Chain {
	ids := append(c.ids[:len(c.ids):len(c.ids)], chainID(srv))
	return Chain{ids: ids[max(0, len(ids)-maxHops):]}
}

// Check reports whether a Switchboard whose chain is c may start the
// servers of cfg. It may not, and Check returns a [*ChainError], if the
// chain is MaxChainDepth deep already, or if an enabled stdio entry of cfg
// is one that started a Switchboard above it: that Switchboard's config
// starts Switchboard on itself, and each would start the next without
// end.
func (c Chain) Check(cfg *Config) error {
	if c.Depth() >= MaxChainDepth {
		return &ChainError{Depth: c.Depth()}
	}
	for i := range cfg.Servers {
		srv := &cfg.Servers[i]
		if srv.IsEnabled() && srv.TransportType() == Stdio && c.has(chainID(srv)) {
			return &ChainError{Server: srv.Name, Source: srv.Source, Depth: c.Depth()}
		}
	}
	return nil
}

func (c Chain) has(id string) bool {
	for _, x := range c.ids {
		if x == id {
			return true
		}
	}
	return false
}

// chainID is the identity of srv in a chain: the first idLen hex digits of
// a SHA-256 of what its process is, unresolved: its command, arguments,
// environment, directory and whether it inherits the environment. Its
// name, its source and its other fields do not count: they may differ
// between the Switchboard that starts the process and the one that the
// process runs (SWITCHBOARD_TIMEOUT_MS changes every timeout of one of
// them), and the same process is the same recursion under any name.
func chainID(srv *Server) string {
	launch := struct {
		Command    string            `json:"command"`
		Args       []string          `json:"args,omitempty"`
		Env        map[string]string `json:"env,omitempty"`
		Cwd        string            `json:"cwd,omitempty"`
		InheritEnv bool              `json:"inheritEnv,omitempty"`
	}{srv.Command, srv.Args, srv.Env, srv.Cwd, srv.InheritEnv}
	// Map keys encode sorted, so the encoding is canonical; it cannot fail.
	b, _ := json.Marshal(&launch)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:idLen/2])
}

// A ChainError says why a Switchboard refuses to run inside others (see
// [Chain.Check]): an entry of its config started one of them, or too many
// of them run one inside another.
type ChainError struct {
	// Server is the entry of the config that started a Switchboard above
	// this one, and Source its file; Server is "" when the depth alone
	// is the reason.
	Server, Source string
	// Depth is how many Switchboards run above this one.
	Depth int
}

// theFix is what a user does about a config that starts Switchboard.
const theFix = "or give Switchboard a config of its own with --config"

func (e *ChainError) Error() string {
	if e.Server == "" {
		return fmt.Sprintf("%s%d Switchboards already run one inside another (%s), the most there may be: "+
			"a config starts Switchboard, maybe through another program; remove that entry from the config Switchboard reads, %s",
			ChainRefusal, e.Depth, ChainEnv, theFix)
	}
	where := ""
	if e.Source != "" {
		where = " (in " + e.Source + ")"
	}
	return fmt.Sprintf("%sserver %q%s started this Switchboard, so the config starts Switchboard itself, without end; "+
		"remove %q from the config Switchboard reads, %s", ChainRefusal, e.Server, where, e.Server, theFix)
}
