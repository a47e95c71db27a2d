package switchboard

import (
	"context"
	"maps"
	"slices"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/fifo"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

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
	pins    bool       // the item says that the pins file changed
}

// A serverSet is the servers of a reconfiguration, with the first
// snapshot of those it adds.
type serverSet struct {
	servers  []*upstream.Upstream
	byName   map[string]*upstream.Upstream
	rejected []config.Rejected
	added    map[string]upstream.Snapshot
	// toolSearch is the config's toolSearch.
	toolSearch config.ToolSearch
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
		if item.pins {
			lists, statuses = true, true
			continue
		}
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
		// A server's first list, the same as its cached one, is pinned
		// on first use: its check needs a new view.
		pinNow := before.Cached && !snap.Cached && m.pins.modeOf(snap.Config) != config.PinningOff
		lists = lists || !known || pinNow || listsDiffer(before, snap)
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
			base = &view{servers: set.servers, byName: set.byName, rejected: set.rejected, toolSearch: set.toolSearch,
				prepared: prev.prepared, revision: prev.revision}
		}
		next := m.build(base, e.snaps, lists)
		m.view.Store(next)
		if lists {
			m.search.follow(next)
			out = append(append(out, Event{Kind: eventRevised}), changes(prev, next)...)
			for _, ev := range heldChanges(prev, next) {
				if len(ev.Tools.Removed) > 0 {
					m.opts.Logger.Info("tool pinning: released", "server", ev.Server, "tools", ev.Tools.Removed)
				}
				out = append(out, ev)
			}
		}
	}
	for _, ev := range out {
		m.emit(ev)
	}
}

// listsDiffer reports whether what a server contributes to the catalogs
// changed between two of its snapshots: its lists (replaced, never
// mutated, so compared by identity), whether it exposes them, its prefix
// and filters, whether gateways keep its tools listed (alwaysLoad), or
// what tells gateways' search_tools and tool search what it is for (its
// description, its instructions, the name, title and description of its
// serverInfo), which makes a new revision for them. Whether its tools came
// from the cache is only status.
func listsDiffer(a, b upstream.Snapshot) bool {
	hasLists := func(s upstream.Snapshot) bool {
		return len(s.Tools)+len(s.Prompts)+len(s.Resources)+len(s.Templates) > 0
	}
	return exposes(a.State) != exposes(b.State) && (hasLists(a) || hasLists(b)) ||
		!same(a.Tools, b.Tools) || !same(a.Prompts, b.Prompts) || !same(a.Resources, b.Resources) || !same(a.Templates, b.Templates) ||
		a.Config.PublicPrefix() != b.Config.PublicPrefix() || a.Config.Pinning != b.Config.Pinning || a.Config.AlwaysLoad != b.Config.AlwaysLoad ||
		a.Config.Description != b.Config.Description || a.Instructions != b.Instructions || !sameInfo(a.ServerInfo, b.ServerInfo, false) || !slices.Equal(a.Config.Tools.Allow, b.Config.Tools.Allow) || !slices.Equal(a.Config.Tools.Deny, b.Config.Tools.Deny)
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
