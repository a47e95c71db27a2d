package catalog

import (
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Source is one server's raw tools and static policy.
type Source struct {
	// Server is the configured server name. It must be unique across the
	// sources given to one [Build], and it seeds the hash suffix.
	Server string
	// Prefix is the effective prefix of public names; "" means unprefixed.
	Prefix string
	// Allow and Deny are the static filters; see [Allowed].
	Allow []string
	Deny  []string
	// Tools are the server's raw, unfiltered tools. This package never
	// mutates them, and a [View] keeps references to them, so they must not
	// be mutated after [Build] either.
	Tools []*mcp.Tool
}

// Tool is one exposed tool.
type Tool struct {
	// Name is the public name.
	Name string
	// Server is the configured name of the server that owns the tool.
	Server string
	// Original is the tool's name on its server; calls use it.
	Original string
	// Tool is the server's definition. Values returned by a [View] hold a
	// copy made with [CloneTool] whose Name is the public name.
	Tool *mcp.Tool
}

// View is an immutable merged view of the tools of many servers, sorted by
// public name. It is safe for concurrent use. A nil *View behaves as an empty
// one.
type View struct {
	tools      []Tool         // sorted by Name; Tool.Tool is shared with the sources and never handed out
	byName     map[string]int // public name → index in tools
	trespasses []Trespass     // sorted by server and name
}

// Build applies each source's filters, allocates public names and returns
// the merged view. Filtered-out tools get no name and take no part in
// collision handling. A nil tool is skipped, and if a server lists the same
// tool name twice, only the first definition is used.
//
// Each source's prefix reserves its namespace (`prefix__`): a tool of
// another server whose public name would be in it (a server with no
// prefix, or with a prefix the namespace is nested in) is not exposed,
// and [View.Trespasses] lists it. A source with no tools (a server that
// exposes none now) still reserves its namespace.
//
// The result does not depend on the order of sources or of their tools.
func Build(sources []Source) *View {
	var (
		tools []Tool
		keys  []nameKey
	)
	border := newBorder(sources, func(s Source) (string, string) { return s.Server, s.Prefix })
	seen := make(map[string]bool)
	for _, src := range sources {
		prefix := NamePrefix(src.Prefix)
		for _, t := range src.Tools {
			if t == nil || !Allowed(t.Name, src.Allow, src.Deny) {
				continue
			}
			key := src.Server + "\x00" + t.Name
			if seen[key] {
				continue
			}
			seen[key] = true
			candidate, ok := border.admit(src.Server, prefix, t.Name)
			if !ok {
				continue
			}
			tools = append(tools, Tool{Server: src.Server, Original: t.Name, Tool: t})
			keys = append(keys, nameKey{candidate, src.Server, t.Name})
		}
	}
	for i, name := range allocate(keys) {
		tools[i].Name = name
	}
	sortByName(tools)
	v := &View{tools: tools, byName: make(map[string]int, len(tools)), trespasses: border.trespasses()}
	for i, t := range v.tools {
		v.byName[t.Name] = i
	}
	return v
}

// Trespasses returns the tools that were not exposed because their public
// names would be in another server's namespace, sorted by server and name.
// The slice is new; the caller may modify it.
func (v *View) Trespasses() []Trespass {
	if v == nil {
		return nil
	}
	return slices.Clone(v.trespasses)
}

// Len returns the number of exposed tools.
func (v *View) Len() int {
	if v == nil {
		return 0
	}
	return len(v.tools)
}

// Tools returns every exposed tool, sorted by public name. The slice and the
// tools in it are new, so the caller may modify them.
func (v *View) Tools() []Tool {
	if v == nil {
		return []Tool{}
	}
	out := make([]Tool, len(v.tools))
	for i, t := range v.tools {
		out[i] = t.export()
	}
	return out
}

// Entries returns every exposed tool, sorted by public name, without
// copying: the slice and the definitions are the view's own, and must not
// be changed.
func (v *View) Entries() []Tool {
	if v == nil {
		return nil
	}
	return v.tools
}

// Names returns the public names of every exposed tool, sorted, without
// copying the tools.
func (v *View) Names() []string {
	if v == nil {
		return []string{}
	}
	out := make([]string, len(v.tools))
	for i, t := range v.tools {
		out[i] = t.Name
	}
	return out
}

// Counts returns how many tools each server exposes, without copying them.
func (v *View) Counts() map[string]int {
	counts := make(map[string]int)
	if v == nil {
		return counts
	}
	for _, t := range v.tools {
		counts[t.Server]++
	}
	return counts
}

// Route returns the server and original tool name behind a public name,
// without copying the tool: the hot path of every call.
func (v *View) Route(public string) (server, original string, ok bool) {
	if v == nil {
		return "", "", false
	}
	i, ok := v.byName[public]
	if !ok {
		return "", "", false
	}
	return v.tools[i].Server, v.tools[i].Original, true
}

// Lookup routes a public name to its tool: the server and the original tool
// name to call. The returned Tool.Tool is a copy. It reports false if no tool
// has that name.
func (v *View) Lookup(public string) (Tool, bool) {
	if v == nil {
		return Tool{}, false
	}
	i, ok := v.byName[public]
	if !ok {
		return Tool{}, false
	}
	return v.tools[i].export(), true
}

// Server returns the exposed tools of one server, sorted by public name, as
// copies the caller may modify. It returns an empty slice for an unknown
// server.
func (v *View) Server(server string) []Tool {
	out := []Tool{}
	if v == nil {
		return out
	}
	for _, t := range v.tools {
		if t.Server == server {
			out = append(out, t.export())
		}
	}
	return out
}

// export returns a copy of t whose definition is a clone named by the public
// name.
func (t Tool) export() Tool {
	t.Tool = CloneTool(t.Tool)
	t.Tool.Name = t.Name
	return t
}
