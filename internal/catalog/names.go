package catalog

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
)

const (
	// maxNameLen is the longest public name, the limit most model providers
	// put on function names.
	maxNameLen = 64
	// hashLen is the number of hex digits of the hash suffix.
	hashLen = 8
	// maxStemLen leaves room for "_" and the hash suffix.
	maxStemLen = maxNameLen - 1 - hashLen

	prefixFallback = "server"
	toolFallback   = "tool"
	stemFallback   = "mcp"
	separator      = "__"
	trimSet        = "_-"
)

// Sanitize returns part with every character outside ASCII [A-Za-z0-9_-]
// replaced by "_", then with leading and trailing "_" and "-" trimmed. The
// result may be empty; [Build] substitutes "server" for an empty prefix and
// "tool" for an empty tool name.
func Sanitize(part string) string {
	if isNameBytes(part) {
		return strings.Trim(part, trimSet) // the common case: nothing to replace
	}
	var b strings.Builder
	b.Grow(len(part))
	for _, r := range part {
		if r < 0x80 && isNameByte(byte(r)) {
			b.WriteByte(byte(r))
		} else {
			b.WriteByte('_')
		}
	}
	return strings.Trim(b.String(), trimSet)
}

// isNameByte reports whether c may appear in a public name.
func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// isPlainName reports whether s is already a valid public name: 1 to 64
// characters of [A-Za-z0-9_-].
func isPlainName(s string) bool {
	return len(s) > 0 && len(s) <= maxNameLen && isNameBytes(s)
}

// isNameBytes reports whether every byte of s may appear in a public name.
func isNameBytes(s string) bool {
	for i := range len(s) {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

// NamePrefix returns what the public names of a server's tools start with
// under prefix: the sanitized prefix and the separator, or "" for no prefix.
func NamePrefix(prefix string) string {
	if prefix == "" {
		return ""
	}
	return cmp.Or(Sanitize(prefix), prefixFallback) + separator
}

// MayOwn reports whether the public name may be that of a tool of a server
// whose names start with namePrefix (what [NamePrefix] gives): it starts
// with it, or it is a name cut to fit and hashed whose stem the prefix
// starts with, or the server has no prefix. It is true of every name that
// [Build] gives the server's tools; it may be true of others.
func MayOwn(namePrefix, name string) bool {
	if namePrefix == "" || strings.HasPrefix(name, namePrefix) {
		return true
	}
	stem, hashed := hashedStem(name)
	return hashed && strings.HasPrefix(namePrefix, stem)
}

// Trespass is a tool or prompt that a server lists under a public name in
// another server's namespace: a server with no prefix that lists
// `victim__echo` while a server has the prefix "victim", or one with the
// prefix "victim" that lists `inner__x` while a server has the prefix
// "victim__inner". It is not
// exposed, so that the name, and a policy's `victim__*` glob, keep
// meaning the server they name.
type Trespass struct {
	Server   string // the configured name of the server that listed it
	Original string // its name on that server
	Name     string // the public name it would have had
	Owner    string // the configured name of the server whose namespace it is in
}

// namespaces maps each namespace that a source's prefix reserves (what
// [NamePrefix] gives) to the server it is reserved for. A namespace that
// several servers share is reserved for the first in name order.
type namespaces map[string]string

func (ns namespaces) reserve(server, prefix string) {
	if p := NamePrefix(prefix); p != "" {
		if owner, ok := ns[p]; !ok || server < owner {
			ns[p] = server
		}
	}
}

// trespass returns the server whose namespace the public name candidate,
// of a server whose names start with namePrefix, would be in, and whether
// that is another's. Of nested namespaces, the longest is the owner's: a
// server with the prefix "a" that lists "b__x" is in the namespace of a
// server with the prefix "a__b". A namespace that servers share (their
// prefix is the same) is each one's own.
func (ns namespaces) trespass(namePrefix, candidate string) (owner string, ok bool) {
	best := ""
	for p, server := range ns {
		if len(p) > len(best) && strings.HasPrefix(candidate, p) {
			best, owner = p, server
		}
	}
	return owner, best != "" && best != namePrefix
}

// A border admits the names of a build into their namespaces, and keeps
// those it refuses.
type border struct {
	reserved namespaces
	refused  []Trespass
}

// newBorder reserves the namespace of each of sources, whose server and
// prefix of says.
func newBorder[S any](sources []S, of func(S) (server, prefix string)) *border {
	b := &border{reserved: make(namespaces)}
	for _, src := range sources {
		b.reserved.reserve(of(src))
	}
	return b
}

// admit returns the public name candidate of original, listed by server,
// whose names start with namePrefix, and whether it is in no other server's
// namespace; if it is, it is kept as a trespass.
func (b *border) admit(server, namePrefix, original string) (candidate string, ok bool) {
	candidate = candidateName(namePrefix, original)
	if owner, in := b.reserved.trespass(namePrefix, candidate); in {
		b.refused = append(b.refused, Trespass{Server: server, Original: original, Name: candidate, Owner: owner})
		return candidate, false
	}
	return candidate, true
}

// trespasses returns the names refused, sorted by server, then public name.
func (b *border) trespasses() []Trespass {
	slices.SortFunc(b.refused, func(x, y Trespass) int {
		return cmp.Or(strings.Compare(x.Server, y.Server), strings.Compare(x.Name, y.Name), strings.Compare(x.Original, y.Original))
	})
	return b.refused
}

// hashedStem returns the stem of a name that [hashedName] may have made,
// and whether it looks like one.
func hashedStem(name string) (string, bool) {
	cut := len(name) - hashLen - 1
	if cut < 1 || name[cut] != '_' {
		return "", false
	}
	for _, c := range []byte(name[cut+1:]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", false
		}
	}
	return name[:cut], true
}

// PublicName returns the public name that tool of a server with the given
// prefix has when no other name is too long or shared: the name a person
// expects for a tool that is not exposed (held, say).
func PublicName(prefix, tool string) string { return candidateName(NamePrefix(prefix), tool) }

// candidateName returns the public name of tool under namePrefix (what
// [NamePrefix] gives) before any length or collision handling. With no
// prefix, a tool name that is already a valid public name is kept exactly,
// untrimmed.
func candidateName(namePrefix, tool string) string {
	if namePrefix == "" {
		if isPlainName(tool) {
			return tool
		}
		return cmp.Or(Sanitize(tool), toolFallback)
	}
	return namePrefix + cmp.Or(Sanitize(tool), toolFallback)
}

// hashSeed returns the seed of the hash suffix for tool on server. Round 0 is
// the first try; later rounds resolve a suffixed name that is still taken.
func hashSeed(server, tool string, round int) string {
	seed := server + "\x00" + tool
	if round > 0 {
		seed += "\x00" + strconv.Itoa(round)
	}
	return seed
}

// hashedName returns candidate cut to fit, followed by "_" and the first 8
// hex digits of the SHA-1 of seed.
func hashedName(candidate, seed string) string {
	stem := candidate
	if len(stem) > maxStemLen {
		stem = stem[:maxStemLen]
	}
	stem = cmp.Or(strings.TrimRight(stem, trimSet), stemFallback)
	sum := sha1.Sum([]byte(seed))
	return stem + "_" + hex.EncodeToString(sum[:])[:hashLen]
}

// A nameKey is what a public name is made from: the candidate name, and the
// configured server and original name that seed its hash.
type nameKey struct {
	candidate, server, original string
}

// allocate returns the public name of each key, in the keys' order.
// Allocation runs in sorted order of (candidate, server, original), so the
// names never depend on the order of the keys.
//
// A candidate that is too long, or that more than one key shares, is
// suffixed for all keys that share it. Bare names are reserved first, so a
// suffixed name never displaces a bare one: a suffixed name that is taken is
// hashed again with the round appended to its seed until it is free.
func allocate(keys []nameKey) []string {
	counts := make(map[string]int, len(keys))
	for _, k := range keys {
		counts[k.candidate]++
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		ka, kb := keys[a], keys[b]
		return cmp.Or(
			strings.Compare(ka.candidate, kb.candidate),
			strings.Compare(ka.server, kb.server),
			strings.Compare(ka.original, kb.original),
		)
	})
	needsHash := func(k nameKey) bool {
		return len(k.candidate) > maxNameLen || counts[k.candidate] > 1
	}

	names := make([]string, len(keys))
	used := make(map[string]bool, len(keys))
	for _, i := range order {
		if k := keys[i]; !needsHash(k) {
			names[i] = k.candidate
			used[k.candidate] = true
		}
	}
	for _, i := range order {
		k := keys[i]
		if !needsHash(k) {
			continue
		}
		name := hashedName(k.candidate, hashSeed(k.server, k.original, 0))
		for round := 1; used[name]; round++ {
			name = hashedName(k.candidate, hashSeed(k.server, k.original, round))
		}
		names[i] = name
		used[name] = true
	}
	return names
}

// sortByName sorts tools by public name. Public names are unique, so the
// order is total.
func sortByName(tools []Tool) {
	slices.SortFunc(tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
}
