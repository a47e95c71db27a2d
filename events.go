package switchboard

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// EventKind says what an [Event] reports.
type EventKind int

const (
	// EventState reports that a server moved to a new State.
	EventState EventKind = iota
	// EventToolsChanged reports that the set of exposed public tool names
	// changed. The event is sent after the view is updated, so Tools
	// already returns the new list.
	EventToolsChanged
)

func (k EventKind) String() string {
	switch k {
	case EventState:
		return "state"
	case EventToolsChanged:
		return "tools-changed"
	default:
		return fmt.Sprintf("EventKind(%d)", int(k))
	}
}

// An Event reports a change in the manager.
type Event struct {
	Kind EventKind
	At   time.Time
	// Server and State are set for EventState. Err is the redacted cause of
	// a failure.
	Server string
	State  State
	Err    error
	// Added and Removed are the public tool names of EventToolsChanged,
	// sorted.
	Added   []string
	Removed []string
}

// Subscribe calls fn for every later event, in order, from one goroutine at
// a time. fn must not block for long: events queue behind it. A panic in fn
// is logged and does not affect other subscribers. The returned function
// unsubscribes; after it returns, fn is not called again, except for a call
// already in progress. It may be called from fn.
func (m *Manager) Subscribe(fn func(Event)) (unsubscribe func()) {
	return m.events.subscribe(fn)
}

// dispatcher delivers events to subscribers in FIFO order from its own
// goroutine, so that the goroutines that produce events never wait for them.
type dispatcher struct {
	logger *slog.Logger

	mu      sync.Mutex
	queue   []Event
	subs    map[int]func(Event)
	nextID  int
	wake    chan struct{} // buffered, 1
	closing bool
	done    chan struct{} // closed when the goroutine returns
}

func newDispatcher(logger *slog.Logger) *dispatcher {
	d := &dispatcher{
		logger: logger,
		subs:   make(map[int]func(Event)),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	go d.run()
	return d
}

func (d *dispatcher) send(ev Event) {
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		return
	}
	d.queue = append(d.queue, ev)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *dispatcher) subscribe(fn func(Event)) func() {
	d.mu.Lock()
	id := d.nextID
	d.nextID++
	d.subs[id] = fn
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		delete(d.subs, id)
		d.mu.Unlock()
	}
}

func (d *dispatcher) run() {
	defer close(d.done)
	for {
		d.mu.Lock()
		queue, closing := d.queue, d.closing
		d.queue = nil
		d.mu.Unlock()
		for _, ev := range queue {
			d.deliver(ev)
		}
		if closing && len(queue) == 0 {
			return
		}
		if len(queue) == 0 {
			<-d.wake
		}
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

// close delivers the queued events, then stops the goroutine.
func (d *dispatcher) close() {
	d.mu.Lock()
	d.closing = true
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
	<-d.done
}
