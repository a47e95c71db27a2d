package switchboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/fifo"
)

// EventKind says what an [Event] reports.
type EventKind int

const (
	// EventState reports that a server moved From one state to State:
	// connecting, connected, reconnecting, failed (with the config file it
	// came from, in Source, and the cause in Err), crash-loop, disconnected,
	// disabled or closed.
	EventState EventKind = iota
	// EventChanged reports that the tools, prompts or resources a server
	// exposes changed, with what was added and removed. It is sent after
	// the views are updated, so Tools, Prompts and Resources already return
	// the new lists. A change of one server may rename another's tools (a
	// name two servers now share gets a hash suffix): each server gets its
	// own event.
	EventChanged
	// EventReloadFailed reports that a server said a list (List: "tools",
	// "prompts" or "resources") changed, and it could not be reloaded, even
	// after retries; the previous list stays.
	EventReloadFailed
	// EventResourceUpdated reports that a subscribed resource (URI) changed.
	EventResourceUpdated
	// EventListed reports that a server's list (List) was fetched from the
	// server: every fetch, the first included. A fetch that failed even
	// after retries is an EventReloadFailed instead. The EventChanged that
	// a fetch causes may come before or after it.
	EventListed
	// EventAttemptFailed reports that a connection attempt failed, with the
	// cause in Err. The state need not change: a server that stays down
	// fails attempt after attempt.
	EventAttemptFailed
	// EventHeld reports that tool pinning held tools of a server, in
	// Tools.Added, or released them, in Tools.Removed, by public name (see
	// Options.Pinning). It comes with the EventChanged that takes them out
	// of the lists or puts them back.
	EventHeld
)

// eventRevised reports a new revision of the view (see view.revision), to
// the gateway's hooks alone (see gatewayHooks.Follow): Subscribe never
// delivers it.
const eventRevised EventKind = -1

var eventKindNames = [...]string{
	EventState:           "state",
	EventChanged:         "changed",
	EventReloadFailed:    "reload-failed",
	EventResourceUpdated: "resource-updated",
	EventListed:          "listed",
	EventAttemptFailed:   "attempt-failed",
	EventHeld:            "held",
}

// String returns the kind's name.
func (k EventKind) String() string {
	if k >= 0 && int(k) < len(eventKindNames) {
		return eventKindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// An Event reports a change in the manager. Every event names its server.
type Event struct {
	Kind   EventKind
	At     time.Time
	Server string
	// State is the new state of an EventState, and From the one it left.
	// Source is the config file of a server that failed. Err is the
	// redacted cause of a failure.
	State, From State
	Source      string
	Err         error
	// Reconnected reports an EventState into connected that is not the
	// server's first connection.
	Reconnected bool
	// Tools, Prompts and Resources are what an EventChanged changed, by
	// public name (resources: URI).
	Tools     Diff
	Prompts   Diff
	Resources Diff
	// List is the list of an EventListed or an EventReloadFailed.
	List string
	// URI is the resource of an EventResourceUpdated.
	URI string
}

// String describes the event in one line, for logs: "state web:
// reconnecting; last error: ...", "changed web: tools +web__a -web__b",
// "reload-failed web: tools: ...", "resource-updated web: file:///x",
// "held web: tools +web__a -web__b".
func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s:", e.Kind, e.Server)
	switch e.Kind {
	case EventState:
		b.WriteString(" " + e.State.String())
		if e.Err != nil {
			b.WriteString("; last error: " + causeText(e.Err))
		}
	case EventChanged:
		for _, d := range []struct {
			list string
			diff Diff
		}{{"tools", e.Tools}, {"prompts", e.Prompts}, {"resources", e.Resources}} {
			if !d.diff.empty() {
				fmt.Fprintf(&b, " %s%s", d.list, d.diff)
			}
		}
	case EventReloadFailed, EventAttemptFailed:
		b.WriteString(" " + causeText(e.Err))
	case EventHeld:
		b.WriteString(" tools" + e.Tools.String())
	case EventListed:
		b.WriteString(" " + e.List)
	case EventResourceUpdated:
		b.WriteString(" " + e.URI)
	}
	return b.String()
}

// Diff lists names added and removed, each sorted.
type Diff struct {
	Added   []string
	Removed []string
}

func (d Diff) empty() bool { return len(d.Added) == 0 && len(d.Removed) == 0 }

// String gives the names, each with "+" if added or "-" if removed.
func (d Diff) String() string {
	var b strings.Builder
	for _, n := range d.Added {
		b.WriteString(" +" + n)
	}
	for _, n := range d.Removed {
		b.WriteString(" -" + n)
	}
	return b.String()
}

// Subscribe calls fn for every later event, in order, from one goroutine at
// a time. Events that came before the first subscriber, up to the last 100,
// are kept for it. fn must not block for long: events queue behind it, and
// Connect, Reconnect, Disconnect and Reconfigure wait for it before they
// return. For that reason fn must not call them either: they would wait
// for it until their context ends, or Options.CloseTimeout passes. A
// panic in fn is logged and does not affect other subscribers. The returned
// function unsubscribes; after it returns, fn is not called again, except
// for a call already in progress. It may be called from fn.
func (m *Manager) Subscribe(fn func(Event)) (unsubscribe func()) {
	return m.subs.subscribe(func(ev Event) {
		if ev.Kind != eventRevised {
			fn(ev)
		}
	})
}

// told waits until every change made so far is in the views and every
// subscriber has been told of it, which Connect, Reconnect, Disconnect and
// Reconfigure do before they return: a host that acts on their return
// finds its subscribers, the gateway's among them, in step. It waits
// within ctx and at most Options.CloseTimeout: a subscriber that blocks,
// or that calls one of those methods (which would wait for it), delays
// them by that much, and the rest of its events follow.
func (m *Manager) told(ctx context.Context) {
	ctx, cancel := context.WithTimeoutCause(ctx, m.opts.CloseTimeout, errSlowSubscriber)
	defer cancel()
	err := m.events.Flush(ctx)
	if err == nil {
		err = m.subs.flush(ctx)
	}
	if err != nil && context.Cause(ctx) == errSlowSubscriber {
		m.opts.Logger.Warn("returning before every subscriber was told", "error", errSlowSubscriber)
	}
}

// errSlowSubscriber is why a lifecycle method stopped waiting for its
// subscribers.
var errSlowSubscriber = errors.New("a subscriber is slow to take its events, or calls a lifecycle method, which waits for it")

// emit queues an event for the subscribers.
func (m *Manager) emit(ev Event) { m.subs.send(ev) }

// backlogSize is how many events are kept until the first subscriber comes
// (oh-my-pi keeps 100 and drops the oldest).
const backlogSize = 100

// dispatcher delivers events to subscribers in FIFO order from its queue's
// goroutine, so that the goroutines that produce events never wait for them.
type dispatcher struct {
	logger *slog.Logger
	queue  *fifo.Queue[Event]

	mu      sync.Mutex
	backlog []Event // sent before anyone subscribed
	subs    map[int]func(Event)
	nextID  int
	ever    bool // someone has subscribed
}

func newDispatcher(logger *slog.Logger) *dispatcher {
	d := &dispatcher{logger: logger, subs: make(map[int]func(Event))}
	d.queue = fifo.New(func(batch []Event) {
		for _, ev := range batch {
			d.deliver(ev)
		}
	})
	return d
}

func (d *dispatcher) send(ev Event) {
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ever {
		d.queue.Push(ev)
		return
	}
	if ev.Kind == eventRevised {
		return // for the gateway's hooks, which follow the view from its start
	}
	d.backlog = append(d.backlog, ev)
	if len(d.backlog) > backlogSize {
		d.backlog = slices.Delete(d.backlog, 0, len(d.backlog)-backlogSize)
	}
}

func (d *dispatcher) subscribe(fn func(Event)) func() {
	d.mu.Lock()
	id := d.nextID
	d.nextID++
	d.subs[id] = fn
	if !d.ever {
		// The first subscriber gets what came before it.
		d.ever = true
		d.queue.Push(d.backlog...)
		d.backlog = nil
	}
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		delete(d.subs, id)
		d.mu.Unlock()
	}
}

func (d *dispatcher) deliver(ev Event) {
	d.mu.Lock()
	ids := make([]int, 0, len(d.subs))
	for id := range d.subs {
		ids = append(ids, id)
	}
	d.mu.Unlock()
	slices.Sort(ids) // subscription order
	for _, id := range ids {
		d.mu.Lock()
		fn := d.subs[id] // it may have unsubscribed meanwhile
		d.mu.Unlock()
		if fn != nil {
			d.call(fn, ev)
		}
	}
}

func (d *dispatcher) call(fn func(Event), ev Event) {
	defer func() {
		if r := recover(); r != nil {
			d.logger.Error("event subscriber panicked", "event", ev.Kind.String(), "panic", r)
		}
	}()
	fn(ev)
}

// flush waits until every event sent before it has been delivered, within
// ctx.
func (d *dispatcher) flush(ctx context.Context) error { return d.queue.Flush(ctx) }

// close delivers the queued events, then stops the goroutine.
func (d *dispatcher) close() { d.queue.Close() }

// causeText is the message of err without the server's name, which the
// event names already.
func causeText(err error) string {
	if e, ok := errors.AsType[*ServerError](err); ok {
		return e.Op + ": " + e.Err.Error()
	}
	return err.Error()
}
