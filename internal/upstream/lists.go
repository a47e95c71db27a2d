package upstream

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A listSet keeps what a server offers, for the upstream's whole life: its
// lists (tools, with the index that calls check, prompts, resources and
// templates), which outlive every session, the resources the host
// subscribed to and the logging level it asked for, which every session
// is given. The owner goroutine loads and reloads the lists on the current
// session; notifications only count and signal.
//
// Its lock guards the lists, the subscriptions and the level (and the
// subscriptions of each session), for the change only: no request is sent
// and no event published under it. It may be taken under the supervisor's
// lock, never the other way round.
type listSet struct {
	settings *settingsRef
	red      *redactor
	log      *slog.Logger
	// publish publishes an event of the lists, with the upstream's
	// snapshot. It is called with no lock of the list set held.
	publish func(Event)
	// commit runs apply and publishes ev, both under the supervisor's lock,
	// if s is the upstream's session then, and reports whether it did: a
	// list loaded from another session is dropped, and no snapshot shows a
	// list before its event.
	commit func(s *session, apply func(), ev Event) bool

	refresh chan struct{} // a list changed: the owner reloads it

	// listGen counts the list_changed notifications of each list, and
	// fetched is the listGen each list was last fetched at. Only the owner
	// goroutine writes fetched; requests read both.
	listGen [numLists]atomic.Uint64
	fetched [numLists]atomic.Uint64
	// Owned by the owner goroutine.
	expires [numLists]time.Time // when each list's cache hint runs out; zero: never

	// loaded is closed once the first session has loaded every list (or
	// given up): see Upstream.Settle.
	loaded     chan struct{}
	loadedOnce sync.Once

	mu       sync.Mutex
	cur      lists           // its slices are replaced, never mutated: a copy stays as it was
	seeded   bool            // tools were seeded from the cache, once
	subs     map[string]bool // the resources the host subscribed to
	logLevel string          // the logging level the host asked the server to log at; "" if none
}

// lists are what the server offers. Each slice is replaced, never mutated.
type lists struct {
	tools     []*mcp.Tool
	toolIndex map[string]*toolInfo
	prompts   []*mcp.Prompt
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	cached    bool // tools came from Seed, not from the server
	listed    bool // the server has listed its tools at least once
}

func newListSet(settings *settingsRef, red *redactor, log *slog.Logger) *listSet {
	return &listSet{
		settings: settings, red: red, log: log,
		refresh: make(chan struct{}, 1),
		loaded:  make(chan struct{}),
		subs:    make(map[string]bool),
	}
}

// view returns the lists as they are now.
func (ls *listSet) view() lists {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.cur
}

// tool returns what is known of the tool called name, or nil: a tool the
// server did not list is not checked, and the server answers for it.
func (ls *listSet) tool(name string) *toolInfo {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.cur.toolIndex[name]
}

// listed reports whether the server has listed its tools, ever.
func (ls *listSet) listed() bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.cur.listed
}

// seed offers tools from a persistent cache, to be listed until the server
// lists its own, and reports whether it took them: not once the server has
// listed its tools. The supervisor publishes the change.
func (ls *listSet) seed(tools []*mcp.Tool) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.cur.listed || len(tools) == 0 {
		return false
	}
	ls.cur.tools, ls.cur.toolIndex, ls.cur.cached = tools, indexTools(tools), true
	ls.seeded = true
	return true
}

// unproven reports whether the list set has nothing to show for the
// server yet: no tools seeded, no session that loaded its lists.
func (ls *listSet) unproven() bool {
	select {
	case <-ls.loaded:
		return false // a reconnect, or a new config
	default:
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return !ls.seeded
}

// listedFirst takes the tools of the first session, listed during its
// handshake. The same list as the one seeded from the cache, as is usual,
// keeps the seeded definitions: they make no new view. The supervisor
// publishes the change.
func (ls *listSet) listedFirst(tools []*mcp.Tool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if !ls.cur.cached || !reflect.DeepEqual(ls.cur.tools, tools) {
		tools = keepUnchanged(ls.cur.tools, tools)
		ls.cur.tools, ls.cur.toolIndex = tools, indexTools(tools)
	}
	ls.cur.listed, ls.cur.cached = true, false
}

// reloadDelays are the waits before each attempt to reload a list that the
// server said changed: 4 attempts, then the previous list stays and an
// EventList with an error is published (LiveKit's policy).
var reloadDelays = [...]time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second}

// listChanged records a list_changed notification. It runs on the session's
// receive loop, so it only counts and signals: the owner goroutine fetches.
// It counts even before the session is attached, so that a notification
// that arrives during the first list is not lost.
func (ls *listSet) listChanged(l List) {
	ls.listGen[l].Add(1)
	signal(ls.refresh)
}

// A burst of notifications is gathered into one fetch: after the first, the
// owner waits until none has come for reloadQuiet, but no longer than
// reloadMaxWait, so that an endless storm still gets a fetch now and then.
const (
	reloadQuiet   = 50 * time.Millisecond
	reloadMaxWait = time.Second
)

// Why the owner stopped waiting early.
type wake int

const (
	wakeNone wake = iota
	wakeLost      // the session was lost
	wakeStop      // its context ended: a command, or Close
)

// reloadChanged reloads every list the server said changed since it was
// last fetched, until none is behind: notifications that arrive during a
// fetch cost one more fetch, not one each. It returns wakeNone, or why it
// stopped early.
func (ls *listSet) reloadChanged(ctx context.Context, s *session) wake {
	for ls.behind() {
		if w := ls.awaitQuiet(ctx, s); w != wakeNone {
			return w
		}
		for l := range numLists {
			if ls.listGen[l].Load() != ls.fetched[l].Load() {
				if w := ls.reload(ctx, s, l); w != wakeNone {
					return w
				}
			}
		}
	}
	return wakeNone
}

// awaitQuiet waits until no notification has come for reloadQuiet, or
// reloadMaxWait has passed.
func (ls *listSet) awaitQuiet(ctx context.Context, s *session) wake {
	deadline := time.Now().Add(reloadMaxWait)
	for {
		before := ls.notified()
		wait := min(reloadQuiet, time.Until(deadline))
		if w := pause(ctx, s, wait); w != wakeNone {
			return w
		}
		if ls.notified() == before || !time.Now().Before(deadline) {
			return wakeNone
		}
	}
}

// notified sums the notifications of every list.
func (ls *listSet) notified() uint64 {
	var sum uint64
	for l := range numLists {
		sum += ls.listGen[l].Load()
	}
	return sum
}

// behind reports whether a list was notified changed since its last fetch.
func (ls *listSet) behind() bool {
	for l := range numLists {
		if ls.listGen[l].Load() != ls.fetched[l].Load() {
			return true
		}
	}
	return false
}

// reload fetches list l, retrying on reloadDelays (a list over a limit is
// not retried). On final failure the
// previous list stays, an EventList with the error names the server, and
// the list is not fetched again until the next notification.
func (ls *listSet) reload(ctx context.Context, s *session, l List) wake {
	var err error
	for _, delay := range reloadDelays {
		if w := pause(ctx, s, delay); w != wakeNone {
			return w
		}
		if err = ls.load(ctx, s, l, ls.listGen[l].Load(), noRetries()); err == nil {
			return wakeNone
		}
		ls.log.Warn("reloading a list failed", "list", l.String(), "error", ls.red.redact(err.Error()))
		if errors.Is(err, ErrListTooLarge) {
			break // it would be as large again
		}
	}
	ls.fetched[l].Store(ls.listGen[l].Load())
	ls.loadFailed("reload "+l.String(), l, err)
	return wakeNone
}

// loadFailed publishes that list l could not be fetched by op.
func (ls *listSet) loadFailed(op string, l List, err error) {
	ls.publish(Event{Kind: EventList, List: l, Err: ls.red.wrap(op, err)})
}

// pause waits d while s is the session and ctx lasts: wakeNone when the
// time is up, or why it stopped.
func pause(ctx context.Context, s *session, d time.Duration) wake {
	if d <= 0 {
		return wakeNone
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return wakeNone
	case <-s.lost:
		return wakeLost
	case <-ctx.Done():
		return wakeStop
	}
}

// loadAll fetches the lists of a new session, best effort: a list that
// cannot be fetched keeps its previous value until the next notification.
func (ls *listSet) loadAll(ctx context.Context, s *session, lists ...List) {
	for _, l := range lists {
		gen := ls.listGen[l].Load()
		if err := ls.load(ctx, s, l, gen, newRetryBudget(ls.settings.Load().cfg.Retry)); err != nil {
			if ctx.Err() != nil {
				return
			}
			ls.log.Info("listing failed", "list", l.String(), "error", ls.red.redact(err.Error()))
			ls.loadFailed("list "+l.String(), l, err)
		}
		ls.fetched[l].Store(gen)
	}
}

// load fetches list l from s and, if s is still the session, makes it the
// current one, records it as fetched at gen (the list's generation when the
// fetch began), and publishes an EventList, with the supervisor's lock held
// across both and its own for the change only. A
// list equal to the current one (as a reload on a cache hint usually finds)
// keeps its slice, whose identity tells whoever reads the event that
// nothing changed.
func (ls *listSet) load(ctx context.Context, s *session, l List, gen uint64, budget *retryBudget) error {
	set := ls.settings.Load()
	if d := set.cfg.TimeoutDuration(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	caps := s.capabilities()
	var (
		apply func(*lists)
		ttl   time.Duration
	)
	switch l {
	case Tools:
		tools, t, err := listTools(ctx, s, set.serial, budget)
		if err != nil {
			return err
		}
		ttl, apply = t, func(cur *lists) {
			// Seeded tools equal to the server's are its own now.
			cur.listed, cur.cached = true, false
			if replace(&cur.tools, keepUnchanged(cur.tools, tools)) {
				cur.toolIndex = indexTools(tools)
			}
		}
	case Prompts:
		if caps.Prompts == nil {
			return nil
		}
		prompts, t, err := listPrompts(ctx, s, set.serial, budget)
		if err != nil {
			return err
		}
		ttl, apply = t, func(cur *lists) { replace(&cur.prompts, prompts) }
	case Resources:
		if caps.Resources == nil {
			return nil
		}
		resources, t, err := listResources(ctx, s, set.serial, budget)
		if err != nil {
			return err
		}
		templates, known := ls.loadTemplates(ctx, s, budget)
		ttl, apply = t, func(cur *lists) {
			replace(&cur.resources, resources)
			if known {
				replace(&cur.templates, templates)
			}
		}
	}
	applied := ls.commit(s, func() {
		ls.mu.Lock()
		apply(&ls.cur)
		ls.mu.Unlock()
	}, Event{Kind: EventList, List: l})
	if applied {
		ls.fetched[l].Store(gen)
		ls.setExpiry(l, ttl)
	}
	return nil
}

// replace sets *list to fresh, unless they are equal, and reports whether
// it did.
func replace[T any](list *[]T, fresh []T) bool {
	if reflect.DeepEqual(*list, fresh) {
		return false
	}
	*list = fresh
	return true
}

// keepUnchanged returns fresh, a server's new tool list, with each tool
// that is the same as in old, by name and definition, replaced by old's:
// a tool keeps its identity for as long as its server lists it unchanged,
// whatever else changes in the list, so that what follows the lists (the
// manager's prepared definitions, its search index, the gateway) redoes
// only the tools that changed.
func keepUnchanged(old, fresh []*mcp.Tool) []*mcp.Tool {
	if len(old) == 0 {
		return fresh
	}
	byName := make(map[string]*mcp.Tool, len(old))
	for _, t := range old {
		if t != nil {
			byName[t.Name] = t
		}
	}
	out := make([]*mcp.Tool, len(fresh))
	for i, t := range fresh {
		out[i] = t
		if t == nil {
			continue
		}
		if o := byName[t.Name]; o != nil && reflect.DeepEqual(o, t) {
			out[i] = o
		}
	}
	return out
}

// minListTTL keeps a server's tiny cache hints from making us poll it.
const minListTTL = time.Second

// setExpiry starts the cache hint of list l; 0 means none.
func (ls *listSet) setExpiry(l List, ttl time.Duration) {
	if ttl > 0 {
		ls.expires[l] = time.Now().Add(max(ttl, minListTTL))
	} else {
		ls.expires[l] = time.Time{}
	}
}

// nextExpiry returns when the first list's cache hint runs out, or zero.
func (ls *listSet) nextExpiry() time.Time {
	var next time.Time
	for _, t := range ls.expires {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// expire marks the lists whose cache hint ran out as changed.
func (ls *listSet) expire() {
	now := time.Now()
	for l, t := range ls.expires {
		if !t.IsZero() && !now.Before(t) {
			ls.expires[l] = time.Time{}
			ls.listGen[l].Add(1)
		}
	}
}

// loadTemplates lists the resource templates. "Method not found" means the
// server has none, and is kept as such (oh-my-pi's rule); any other failure
// keeps what was known, without failing the resources.
func (ls *listSet) loadTemplates(ctx context.Context, s *session, budget *retryBudget) ([]*mcp.ResourceTemplate, bool) {
	templates, _, err := listTemplates(ctx, s, ls.settings.Load().serial, budget)
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil:
		return templates, true
	case errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeMethodNotFound:
		return []*mcp.ResourceTemplate{}, true // known: none
	default:
		ls.log.Info("listing resource templates failed", "error", ls.red.redact(err.Error()))
		return nil, false
	}
}
