package switchboard

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/catalog"
	"github.com/switchboard-mcp/switchboard/internal/fifo"
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

	tools         *catalog.View
	exposed       []Tool // prepared for hosts: schemas with properties, maybe strict
	exposedByName map[string]int
	prepared      map[*mcp.Tool]*mcp.Tool // each raw tool of tools, prepared; kept for the next view
	prompts       *catalog.PromptView
	resources     *catalog.ResourceView
	statuses      []ServerStatus // configured order, then the rejected entries
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
	v := &view{servers: prev.servers, byName: prev.byName, rejected: prev.rejected}
	if lists {
		m.buildCatalogs(v, snaps, prev.prepared)
		m.warnTrespasses(prev, v)
	} else {
		v.tools, v.exposed, v.exposedByName, v.prepared = prev.tools, prev.exposed, prev.exposedByName, prev.prepared
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
		}
		if exposes(snap.State) {
			st.Tools, st.Prompts, st.Resources = tools[st.Name], prompts[st.Name], resources[st.Name]
			st.Deferred, st.Collisions = snap.Cached, lost[st.Name]
			st.Trespasses = slices.Sorted(slices.Values(trespassed[st.Name]))
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
		tools = append(tools, catalog.Source{Server: snap.Name, Prefix: prefix, Allow: cfg.Tools.Allow, Deny: cfg.Tools.Deny, Tools: snap.Tools})
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

// events applies the upstreams' events to the view, in the order they
// happened, from its queue's goroutine: it keeps each server's latest
// snapshot, swaps in a new view when anything changed, and then tells the
// subscribers, the observer and the tool cache. Upstreams hand it their
// events under their own locks, so it only queues them there.
type events struct {
	m *Manager
	*fifo.Queue[queued]
	started func() // releases the hold of newEvents

	// Owned by the queue's goroutine.
	snaps map[string]upstream.Snapshot
}

func newEvents(m *Manager) *events {
	e := &events{m: m}
	e.Queue = fifo.New(e.apply)
	e.started = e.Hold()
	return e
}

// start applies the events, with the first snapshot of every server.
// Events queued before wait for it.
func (e *events) start(snaps map[string]upstream.Snapshot) {
	e.snaps = snaps
	e.started()
}

// A queued item is an upstream's event, or a new set of servers.
type queued struct {
	from    *upstream.Upstream
	ev      upstream.Event
	servers *serverSet // if not nil, the item is a new set of servers
}

// A serverSet is the servers of a reconfiguration, with the first
// snapshot of those it adds.
type serverSet struct {
	servers  []*upstream.Upstream
	byName   map[string]*upstream.Upstream
	rejected []config.Rejected
	added    map[string]upstream.Snapshot
}

// add queues an event of up. It is every upstream's OnEvent.
func (e *events) add(up *upstream.Upstream, ev upstream.Event) {
	e.Push(queued{from: up, ev: ev})
}

// reset queues a new set of servers, applied in order with the events, and
// waits until it is applied.
func (e *events) reset(set *serverSet) {
	e.Push(queued{servers: set})
	e.Flush(context.Background()) // applying the set waits for no one
}

// apply applies a batch of events: one new view for all of them, then what
// they tell, in order, then a change event per server whose exposed names
// changed. A new set of servers applies in its place in the batch; the
// events of a server it removed are dropped.
func (e *events) apply(batch []queued) {
	m := e.m
	lists, statuses := false, false
	var out []Event
	servers := m.view.Load()
	var set *serverSet
	for _, item := range batch {
		if item.servers != nil {
			set = item.servers
			for name := range e.snaps {
				if set.byName[name] == nil {
					delete(e.snaps, name)
				}
			}
			maps.Copy(e.snaps, set.added)
			lists, statuses = true, true
			continue
		}
		byName := servers.byName
		if set != nil {
			byName = set.byName
		}
		if byName[item.ev.Snapshot.Name] != item.from {
			continue // a server that a reconfiguration removed or replaced
		}
		ev := item.ev
		snap := ev.Snapshot
		before, known := e.snaps[snap.Name]
		e.snaps[snap.Name] = snap
		lists = lists || !known || listsDiffer(before, snap)
		switch ev.Kind {
		case upstream.EventState:
			statuses = true
			out = append(out, m.stateEvent(ev, before))
		case upstream.EventList:
			statuses = true
			switch {
			case ev.Err != nil:
				out = append(out, Event{Kind: EventReloadFailed, At: ev.At, Server: snap.Name, List: ev.List.String(), Err: ev.Err})
			case !snap.Cached:
				out = append(out, Event{Kind: EventListed, At: ev.At, Server: snap.Name, List: ev.List.String()})
				if ev.List == upstream.Tools {
					m.writes.put(snap, m.redactor(snap.Name))
					m.listed(snap.Name)
				}
			}
		case upstream.EventConfig:
			statuses = true
		case upstream.EventAttemptFailed:
			statuses = true
			out = append(out, Event{Kind: EventAttemptFailed, At: ev.At, Server: snap.Name, Err: ev.Err})
			m.failed(snap, ev.Err)
		case upstream.EventResourceUpdated:
			out = append(out, Event{Kind: EventResourceUpdated, At: ev.At, Server: snap.Name, URI: ev.URI})
		}
	}
	if statuses {
		prev := m.view.Load()
		base := prev
		if set != nil {
			base = &view{servers: set.servers, byName: set.byName, rejected: set.rejected, prepared: prev.prepared}
		}
		next := m.build(base, e.snaps, lists)
		m.view.Store(next)
		if lists {
			m.search.follow(next)
			out = append(out, changes(prev, next)...)
		}
	}
	for _, ev := range out {
		m.emit(ev)
	}
}

// listsDiffer reports whether what a server contributes to the catalogs
// changed between two of its snapshots: its lists (replaced, never
// mutated, so compared by identity), whether it exposes them, or its
// prefix and filters. Whether its tools came from the cache is only
// status.
func listsDiffer(a, b upstream.Snapshot) bool {
	hasLists := func(s upstream.Snapshot) bool {
		return len(s.Tools)+len(s.Prompts)+len(s.Resources)+len(s.Templates) > 0
	}
	return exposes(a.State) != exposes(b.State) && (hasLists(a) || hasLists(b)) ||
		!same(a.Tools, b.Tools) || !same(a.Prompts, b.Prompts) || !same(a.Resources, b.Resources) || !same(a.Templates, b.Templates) ||
		a.Config.PublicPrefix() != b.Config.PublicPrefix() || !slices.Equal(a.Config.Tools.Allow, b.Config.Tools.Allow) || !slices.Equal(a.Config.Tools.Deny, b.Config.Tools.Deny)
}

// same reports whether two slices are the same slice.
func same[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// stateEvent is the public event of an upstream's transition from the
// snapshot before.
func (m *Manager) stateEvent(ev upstream.Event, before upstream.Snapshot) Event {
	snap := ev.Snapshot
	out := Event{Kind: EventState, At: ev.At, Server: snap.Name, State: snap.State, From: ev.From, Err: snap.Err,
		Reconnected: snap.State == upstream.Connected && snap.Reconnects > before.Reconnects}
	if out.State == StateFailed || out.State == StateCrashLoop || out.State == StateNeedsAuth {
		out.Source = snap.Config.Source
	}
	return out
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
