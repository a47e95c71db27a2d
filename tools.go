package switchboard

import (
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/catalog"
)

// Tool is one exposed tool: its public name, the server that owns it, its
// original name there, and a copy of its definition whose Name is the public
// name.
type Tool = catalog.Tool

// Tools returns every exposed tool of every connected server, filtered and
// sorted by public name. The result is a copy.
func (m *Manager) Tools() []Tool {
	return m.view().Tools()
}

// CallTool calls the tool with the given public name on the server that
// owns it, by its original name. Nil arguments are sent as {}.
func (m *Manager) CallTool(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	server, original, ok := m.view().Route(name)
	if !ok {
		return nil, fmt.Errorf("call tool %q: %w", name, ErrUnknownTool)
	}
	return m.byName[server].up.CallTool(ctx, original, args)
}

// generation is a number that grows whenever any server's state or tools
// change: the sum of their versions.
func (m *Manager) generation() uint64 {
	var gen uint64
	for _, s := range m.servers {
		if s.up != nil {
			gen += s.up.Version()
		}
	}
	return gen
}

// view returns the merged view, rebuilding it if any server changed since it
// was built.
func (m *Manager) view() *catalog.View {
	gen := m.generation()
	m.viewMu.Lock()
	defer m.viewMu.Unlock()
	return m.viewLocked(gen)
}

func (m *Manager) viewLocked(gen uint64) *catalog.View {
	// The generation only grows, and a view is built from snapshots taken
	// after its generation was read: a view of a later generation is as new.
	if m.view_ != nil && m.viewGen >= gen {
		return m.view_
	}
	var sources []catalog.Source
	for _, s := range m.servers {
		if s.up == nil {
			continue
		}
		// A server that is reconnecting keeps its stale tools listed: calls
		// to them wait for the connection or say it is being restored.
		snap := s.up.Snapshot()
		if len(snap.Tools) == 0 {
			continue
		}
		sources = append(sources, catalog.Source{
			Server: s.cfg.Name,
			Prefix: s.cfg.PublicPrefix(),
			Allow:  s.cfg.Tools.Allow,
			Deny:   s.cfg.Tools.Deny,
			Tools:  snap.Tools,
		})
	}
	m.view_, m.viewGen = catalog.Build(sources), gen
	return m.view_
}

// publishToolChanges sends an EventToolsChanged if the set of public names
// differs from the last one sent. The view is rebuilt first, so a listener
// that reads Tools sees the change.
func (m *Manager) publishToolChanges() {
	gen := m.generation()
	m.viewMu.Lock()
	defer m.viewMu.Unlock()
	view := m.viewLocked(gen)
	now := make(map[string]bool, view.Len())
	var added, removed []string
	for _, name := range view.Names() {
		now[name] = true
		if !m.published[name] {
			added = append(added, name)
		}
	}
	for name := range m.published {
		if !now[name] {
			removed = append(removed, name)
		}
	}
	if len(added) == 0 && len(removed) == 0 {
		return
	}
	slices.Sort(removed)
	m.published = now
	// Sent under viewMu, so that change events keep the order of the views.
	m.events.send(Event{Kind: EventToolsChanged, Added: added, Removed: removed})
}

// Lookup returns the exposed tool with the given public name: which server
// owns it and its original name there.
func (m *Manager) Lookup(name string) (Tool, bool) {
	return m.view().Lookup(name)
}
