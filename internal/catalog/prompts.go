package catalog

import (
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// PromptSource is one server's raw prompts. Prompts get public names by the
// same rules as tools.
type PromptSource struct {
	Server  string // configured server name, unique across sources
	Prefix  string // effective prefix; "" means unprefixed
	Prompts []*mcp.Prompt
}

// Prompt is one exposed prompt.
type Prompt struct {
	Name     string      // public name
	Server   string      // the configured name of the server that owns it
	Original string      // its name on its server; gets use it
	Prompt   *mcp.Prompt // values returned by a PromptView hold a copy named by the public name
}

// PromptView is an immutable merged view of the prompts of many servers,
// sorted by public name. A nil *PromptView behaves as an empty one.
type PromptView struct {
	prompts    []Prompt
	byName     map[string]int
	trespasses []Trespass // sorted by server and name
}

// BuildPrompts allocates public names and returns the merged view. Each
// source's prefix reserves its namespace, as [Build]'s do. It does not
// depend on the order of sources.
func BuildPrompts(sources []PromptSource) *PromptView {
	var (
		prompts []Prompt
		keys    []nameKey
	)
	border := newBorder(sources, func(s PromptSource) (string, string) { return s.Server, s.Prefix })
	seen := make(map[string]bool)
	for _, src := range sources {
		prefix := NamePrefix(src.Prefix)
		for _, p := range src.Prompts {
			if p == nil || seen[src.Server+"\x00"+p.Name] {
				continue
			}
			seen[src.Server+"\x00"+p.Name] = true
			candidate, ok := border.admit(src.Server, prefix, p.Name)
			if !ok {
				continue
			}
			prompts = append(prompts, Prompt{Server: src.Server, Original: p.Name, Prompt: p})
			keys = append(keys, nameKey{candidate, src.Server, p.Name})
		}
	}
	for i, name := range allocate(keys) {
		prompts[i].Name = name
	}
	slices.SortFunc(prompts, func(a, b Prompt) int { return strings.Compare(a.Name, b.Name) })
	v := &PromptView{prompts: prompts, byName: make(map[string]int, len(prompts)), trespasses: border.trespasses()}
	for i, p := range prompts {
		v.byName[p.Name] = i
	}
	return v
}

// Trespasses returns the prompts that were not exposed because their
// public names would be in another server's namespace, sorted by server
// and name. The slice is new.
func (v *PromptView) Trespasses() []Trespass {
	if v == nil {
		return nil
	}
	return slices.Clone(v.trespasses)
}

// Prompts returns every exposed prompt, sorted by public name, as copies.
func (v *PromptView) Prompts() []Prompt {
	if v == nil {
		return []Prompt{}
	}
	out := make([]Prompt, len(v.prompts))
	for i, p := range v.prompts {
		out[i] = p
		out[i].Prompt = ClonePrompt(p.Prompt)
		out[i].Prompt.Name = p.Name
	}
	return out
}

// Entries returns every exposed prompt, sorted by public name, without
// copying: the slice and the definitions are the view's own, and must not
// be changed.
func (v *PromptView) Entries() []Prompt {
	if v == nil {
		return nil
	}
	return v.prompts
}

// Names returns the public names, sorted.
func (v *PromptView) Names() []string {
	if v == nil {
		return []string{}
	}
	out := make([]string, len(v.prompts))
	for i, p := range v.prompts {
		out[i] = p.Name
	}
	return out
}

// Route returns the server and original name behind a public prompt name.
func (v *PromptView) Route(public string) (server, original string, ok bool) {
	if v == nil {
		return "", "", false
	}
	i, ok := v.byName[public]
	if !ok {
		return "", "", false
	}
	return v.prompts[i].Server, v.prompts[i].Original, true
}

// Counts returns how many prompts each server exposes.
func (v *PromptView) Counts() map[string]int {
	counts := make(map[string]int)
	if v != nil {
		for _, p := range v.prompts {
			counts[p.Server]++
		}
	}
	return counts
}
