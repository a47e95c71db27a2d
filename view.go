package switchboard

import (
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/catalog"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// A view is what the manager exposes at one moment: the merged catalogs and
// every server's status. The event goroutine builds a new one from the
// servers' latest snapshots and swaps it in whole; readers load it with one
// atomic read, take no lock, and never see it change.
type view struct {
	servers  []*upstream.Upstream // configured order: every valid entry, enabled or not
	byName   map[string]*upstream.Upstream
	rejected []config.Rejected // the entries the config rejected
	// toolSearch is the config's toolSearch, for gateways.
	toolSearch config.ToolSearch
	// revision counts the views whose catalogs were built (the first is 1),
	// which every reconfiguration does: a gateway that saw a revision has
	// seen its lists and its config.
	revision uint64

	tools         *catalog.View
	exposed       []Tool // prepared for hosts: schemas with properties, maybe strict
	exposedByName map[string]int
	prepared      map[*mcp.Tool]*mcp.Tool // each raw tool of tools, prepared; kept for the next view
	// pins is how the tools of each server under pinning stand against
	// their pins; held maps the public name a held tool would have to it.
	pins      map[string]*serverPins
	held      map[string]heldTool
	prompts   *catalog.PromptView
	resources *catalog.ResourceView
	statuses  []ServerStatus // configured order, then the rejected entries
}

// unknownServer is the error of op on name, which names no server: an
// entry that the config rejected says why; any other name is unknown.
func (v *view) unknownServer(op, name string) error {
	for _, r := range v.rejected {
		if r.Name == name {
			return fmt.Errorf("%s %q: rejected by the config: %w", op, name, r.Err)
		}
	}
	return fmt.Errorf("%s %q: %w", op, name, ErrUnknownServer)
}

// exposes reports whether a server in state s contributes its lists: a
// server that is down keeps them listed; one that was stopped does not.
func exposes(s upstream.State) bool {
	switch s {
	case upstream.Disconnected, upstream.Disabled, upstream.Closed:
		return false
	}
	return true
}

// build makes the view of snaps, the latest snapshot of each server. It
// rebuilds the catalogs only if lists is set, and takes prev's otherwise.
func (m *Manager) build(prev *view, snaps map[string]upstream.Snapshot, lists bool) *view {
	v := &view{servers: prev.servers, byName: prev.byName, rejected: prev.rejected, toolSearch: prev.toolSearch, revision: prev.revision}
	if lists {
		v.revision++
		m.buildCatalogs(v, snaps, prev.prepared)
		m.warnTrespasses(prev, v)
	} else {
		v.tools, v.exposed, v.exposedByName, v.prepared = prev.tools, prev.exposed, prev.exposedByName, prev.prepared
		v.pins, v.held = prev.pins, prev.held
		v.prompts, v.resources = prev.prompts, prev.resources
	}
	tools, prompts, resources := v.tools.Counts(), v.prompts.Counts(), v.resources.Counts()
	lost := make(map[string][]string)
	for _, c := range v.resources.Collisions() {
		for _, loser := range c.Losers {
			lost[loser] = append(lost[loser], c.URI)
		}
	}
	trespassed := make(map[string][]string)
	for _, t := range v.trespasses() {
		trespassed[t.Server] = append(trespassed[t.Server], t.Name)
	}
	v.statuses = make([]ServerStatus, 0, len(v.servers)+len(v.rejected))
	for _, up := range v.servers {
		snap := snaps[up.Name()]
		cfg := snap.Config
		st := ServerStatus{
			Name:         snap.Name,
			State:        snap.State,
			Since:        snap.Since,
			Transport:    cfg.TransportType(),
			Source:       cfg.Source,
			Required:     cfg.Required,
			Err:          snap.Err,
			Instructions: snap.Instructions,
			ServerInfo:   snap.ServerInfo,
			Capabilities: snap.Capabilities,
			Reconnects:   snap.Reconnects,
			PID:          snap.PID,
			Pinning:      m.pins.modeOf(cfg),
		}
		if exposes(snap.State) {
			st.Tools, st.Prompts, st.Resources = tools[st.Name], prompts[st.Name], resources[st.Name]
			st.Deferred, st.Collisions = snap.Cached, lost[st.Name]
			st.Trespasses = slices.Sorted(slices.Values(trespassed[st.Name]))
			st.PinChanges = v.pinChanges(st.Name)
		}
		v.statuses = append(v.statuses, st)
	}
	for _, r := range v.rejected {
		v.statuses = append(v.statuses, ServerStatus{
			Name: r.Name, State: StateFailed, Since: m.created, Source: r.Source, Required: r.Required, Rejected: true, Err: r.Err,
		})
	}
	return v
}

// buildCatalogs merges the lists of the servers that expose them. A tool
// whose raw definition was prepared for the last view (the lists are
// replaced, never mutated, so the same pointer is the same tool) is not
// prepared again.
func (m *Manager) buildCatalogs(v *view, snaps map[string]upstream.Snapshot, prepared map[*mcp.Tool]*mcp.Tool) {
	var (
		tools     []catalog.Source
		prompts   []catalog.PromptSource
		resources []catalog.ResourceSource
	)
	v.pins, v.held = make(map[string]*serverPins), make(map[string]heldTool)
	for _, up := range v.servers {
		snap := snaps[up.Name()]
		cfg := snap.Config
		prefix := cfg.PublicPrefix()
		if !exposes(snap.State) {
			// It exposes nothing now, but its namespace stays its own.
			tools = append(tools, catalog.Source{Server: snap.Name, Prefix: prefix})
			prompts = append(prompts, catalog.PromptSource{Server: snap.Name, Prefix: prefix})
			continue
		}
		listed := snap.Tools
		// A server that never listed its tools (it failed at once, say)
		// has nothing to check: its pins are not removed tools.
		if mode := m.pins.modeOf(cfg); mode != config.PinningOff && (snap.State == upstream.Connected || len(snap.Tools) > 0) {
			sp := m.pins.check(snap.Name, cfg.Source, mode, snap.Tools, snap.Cached)
			v.pins[snap.Name] = sp
			listed = sp.visible
			for i := 0; sp.held > 0 && i < len(sp.tools); i++ {
				if sp.tools[i].Held && catalog.Allowed(sp.tools[i].Tool, cfg.Tools.Allow, cfg.Tools.Deny) {
					v.held[catalog.PublicName(prefix, sp.tools[i].Tool)] = heldTool{snap.Name, i}
				}
			}
		}
		tools = append(tools, catalog.Source{Server: snap.Name, Prefix: prefix, Allow: cfg.Tools.Allow, Deny: cfg.Tools.Deny, Tools: listed})
		prompts = append(prompts, catalog.PromptSource{Server: snap.Name, Prefix: prefix, Prompts: snap.Prompts})
		resources = append(resources, catalog.ResourceSource{Server: snap.Name, Resources: snap.Resources, Templates: snap.Templates})
	}
	v.tools, v.prompts, v.resources = catalog.Build(tools), catalog.BuildPrompts(prompts), catalog.BuildResources(resources)
	entries := v.tools.Entries()
	v.exposed = make([]Tool, len(entries))
	v.exposedByName = make(map[string]int, len(entries))
	v.prepared = make(map[*mcp.Tool]*mcp.Tool, len(entries))
	for i, t := range entries {
		def, ok := prepared[t.Tool]
		if !ok {
			def = m.prepare(t.Tool)
		}
		v.prepared[t.Tool] = def
		named := *def
		named.Name = t.Name
		v.exposed[i] = Tool{Name: t.Name, Server: t.Server, Original: t.Original, Title: def.Title, Description: def.Description, def: &named, src: def, approval: m.opts.Approval}
		v.exposedByName[t.Name] = i
	}
}

// trespasses returns the tools, then the prompts, that servers list in
// another server's namespace, and that the view does not
// expose.
func (v *view) trespasses() []catalog.Trespass {
	return append(v.tools.Trespasses(), v.prompts.Trespasses()...)
}

// warnTrespasses logs a warning for each tool or prompt that v leaves out
// for being in another server's namespace, and that prev did not: once,
// however many views leave it out after.
func (m *Manager) warnTrespasses(prev, v *view) {
	warn := func(kind string, was, now []catalog.Trespass) {
		if len(now) == 0 {
			return
		}
		known := make(map[catalog.Trespass]bool, len(was))
		for _, t := range was {
			known[t] = true
		}
		for _, t := range now {
			if !known[t] {
				m.opts.Logger.Warn("a server lists a "+kind+" in another server's namespace: not exposed",
					"server", t.Server, kind, t.Original, "name", t.Name, "owner", t.Owner)
			}
		}
	}
	warn("tool", prev.tools.Trespasses(), v.tools.Trespasses())
	warn("prompt", prev.prompts.Trespasses(), v.prompts.Trespasses())
}

// prepare returns raw as hosts get it: its input schema an object with
// properties, made strict if Options.StrictSchemas asks. The rest is
// shared with raw, which nothing mutates: every tool handed out is a deep
// copy.
func (m *Manager) prepare(raw *mcp.Tool) *mcp.Tool {
	def := *raw
	def.InputSchema = catalog.InputSchema(raw)
	if m.opts.StrictSchemas {
		def.InputSchema, _ = catalog.StrictSchema(def.InputSchema.(map[string]any))
	}
	return &def
}

// A named item of a view: a public name (or URI) and its server.
type named struct{ name, server string }

// changes returns an EventChanged for each server whose exposed tools,
// prompts or resources differ between two views, in configured order.
func changes(before, after *view) []Event {
	byServer := make(map[string]*Event)
	record := func(server string, pick func(*Event) *Diff, name string, added bool) {
		ev := byServer[server]
		if ev == nil {
			ev = &Event{Kind: EventChanged, At: time.Now(), Server: server}
			byServer[server] = ev
		}
		d := pick(ev)
		if added {
			d.Added = append(d.Added, name)
		} else {
			d.Removed = append(d.Removed, name)
		}
	}
	diffNamed(toolNames(before.tools), toolNames(after.tools), func(n named, added bool) {
		record(n.server, func(ev *Event) *Diff { return &ev.Tools }, n.name, added)
	})
	diffNamed(promptNames(before.prompts), promptNames(after.prompts), func(n named, added bool) {
		record(n.server, func(ev *Event) *Diff { return &ev.Prompts }, n.name, added)
	})
	diffNamed(resourceNames(before.resources), resourceNames(after.resources), func(n named, added bool) {
		record(n.server, func(ev *Event) *Diff { return &ev.Resources }, n.name, added)
	})
	// In configured order; then the servers a reconfiguration removed.
	var out []Event
	for _, servers := range [][]*upstream.Upstream{after.servers, before.servers} {
		for _, up := range servers {
			if ev := byServer[up.Name()]; ev != nil {
				out = append(out, *ev)
				delete(byServer, up.Name())
			}
		}
	}
	return out
}

// diffNamed walks two lists sorted by name and reports what was added and
// removed. An item whose name moved to another server is removed from the
// one and added to the other.
func diffNamed(before, after []named, report func(n named, added bool)) {
	i, j := 0, 0
	for i < len(before) || j < len(after) {
		switch {
		case j == len(after) || i < len(before) && before[i].name < after[j].name:
			report(before[i], false)
			i++
		case i == len(before) || after[j].name < before[i].name:
			report(after[j], true)
			j++
		default:
			if before[i].server != after[j].server {
				report(before[i], false)
				report(after[j], true)
			}
			i++
			j++
		}
	}
}

func toolNames(v *catalog.View) []named {
	var out []named
	for _, t := range v.Entries() {
		out = append(out, named{t.Name, t.Server})
	}
	return out
}

func promptNames(v *catalog.PromptView) []named {
	var out []named
	for _, p := range v.Entries() {
		out = append(out, named{p.Name, p.Server})
	}
	return out
}

func resourceNames(v *catalog.ResourceView) []named {
	var out []named
	for _, r := range v.Entries() {
		out = append(out, named{r.Resource.URI, r.Server})
	}
	return out
}

// heldTool is a tool that pinning holds: the i-th tool of its server's pins.
type heldTool struct {
	server string
	i      int
}

// pinChanges returns the tools of server that are not as pinned, each with
// its public name.
func (v *view) pinChanges(server string) []ToolPin {
	sp := v.pins[server]
	if sp == nil {
		return nil
	}
	filter := v.byName[server].Config().Tools
	var out []ToolPin
	for _, tp := range sp.tools {
		if tp.State != PinPinned && catalog.Allowed(tp.Tool, filter.Allow, filter.Deny) {
			c := *tp
			c.Pinned, c.Listed = nil, nil // Manager.Pins has them; a status is copied often
			c.Fields, c.Suspicious = slices.Clone(c.Fields), slices.Clone(c.Suspicious)
			out = append(out, c)
		}
	}
	return v.named(server, out)
}

// named sets the public name of each of server's tools in tps: the exposed
// tool's, else the name it would have.
func (v *view) named(server string, tps []ToolPin) []ToolPin {
	prefix := v.byName[server].PublicPrefix()
	var unnamed int
	for i := range tps {
		tp := &tps[i]
		tp.Name = catalog.PublicName(prefix, tp.Tool)
		if tp.Held || tp.Listed == nil {
			continue
		}
		if j, ok := v.exposedByName[tp.Name]; !ok || v.exposed[j].Server != server || v.exposed[j].Original != tp.Tool {
			tp.Name, unnamed = "", unnamed+1 // exposed under another name: a hash suffix
		}
	}
	for j := 0; unnamed > 0 && j < len(v.exposed); j++ {
		t := v.exposed[j]
		if t.Server != server {
			continue
		}
		for i := range tps {
			if tps[i].Name == "" && tps[i].Tool == t.Original {
				tps[i].Name, unnamed = t.Name, unnamed-1
			}
		}
	}
	for i := range tps {
		if tps[i].Name == "" { // not exposed: filtered out, or in another's namespace
			tps[i].Name = catalog.PublicName(prefix, tps[i].Tool)
		}
	}
	return tps
}
