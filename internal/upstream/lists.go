package upstream

import (
	"context"
	"errors"
	"reflect"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// reloadDelays are the waits before each attempt to reload a list that the
// server said changed: 4 attempts, then the previous list stays and an
// EventList with an error is published (LiveKit's policy).
var reloadDelays = [...]time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second}

// listChanged records a list_changed notification. It runs on the session's
// receive loop, so it only counts and signals: the owner goroutine fetches.
// It counts even before the session is attached, so that a notification
// that arrives during the first list is not lost.
func (u *Upstream) listChanged(l List) {
	u.listGen[l].Add(1)
	signal(u.refresh)
}

// resourceUpdated publishes notifications/resources/updated for a
// subscribed resource; others are ignored.
func (u *Upstream) resourceUpdated(uri string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.subs[uri] {
		u.publishLocked(Event{Kind: EventResourceUpdated, URI: uri})
	}
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
func (u *Upstream) reloadChanged(ctx context.Context, s *session) wake {
	for u.behind() {
		if w := u.awaitQuiet(ctx, s); w != wakeNone {
			return w
		}
		for l := range numLists {
			if u.listGen[l].Load() != u.fetched[l].Load() {
				if w := u.reload(ctx, s, l); w != wakeNone {
					return w
				}
			}
		}
	}
	return wakeNone
}

// awaitQuiet waits until no notification has come for reloadQuiet, or
// reloadMaxWait has passed.
func (u *Upstream) awaitQuiet(ctx context.Context, s *session) wake {
	deadline := time.Now().Add(reloadMaxWait)
	for {
		before := u.notified()
		wait := min(reloadQuiet, time.Until(deadline))
		if w := pause(ctx, s, wait); w != wakeNone {
			return w
		}
		if u.notified() == before || !time.Now().Before(deadline) {
			return wakeNone
		}
	}
}

// notified sums the notifications of every list.
func (u *Upstream) notified() uint64 {
	var sum uint64
	for l := range numLists {
		sum += u.listGen[l].Load()
	}
	return sum
}

// behind reports whether a list was notified changed since its last fetch.
func (u *Upstream) behind() bool {
	for l := range numLists {
		if u.listGen[l].Load() != u.fetched[l].Load() {
			return true
		}
	}
	return false
}

// reload fetches list l, retrying on reloadDelays. On final failure the
// previous list stays, an EventList with the error names the server, and
// the list is not fetched again until the next notification.
func (u *Upstream) reload(ctx context.Context, s *session, l List) wake {
	var err error
	for _, delay := range reloadDelays {
		if w := pause(ctx, s, delay); w != wakeNone {
			return w
		}
		if err = u.load(ctx, s, l, u.listGen[l].Load(), noRetries()); err == nil {
			return wakeNone
		}
		u.opts.Logger.Warn("reloading a list failed", "list", l.String(), "error", u.redact(err.Error()))
	}
	u.fetched[l].Store(u.listGen[l].Load())
	u.loadFailed("reload "+l.String(), l, err)
	return wakeNone
}

// loadFailed publishes that list l could not be fetched by op.
func (u *Upstream) loadFailed(op string, l List, err error) {
	err = u.wrap(op, err) // before locking: wrap takes the lock
	u.mu.Lock()
	defer u.mu.Unlock()
	u.publishLocked(Event{Kind: EventList, List: l, Err: err})
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
func (u *Upstream) loadAll(ctx context.Context, s *session, lists ...List) {
	for _, l := range lists {
		gen := u.listGen[l].Load()
		if err := u.load(ctx, s, l, gen, newRetryBudget(u.settings.Load().cfg.Retry)); err != nil {
			if ctx.Err() != nil {
				return
			}
			u.opts.Logger.Info("listing failed", "list", l.String(), "error", u.redact(err.Error()))
			u.loadFailed("list "+l.String(), l, err)
		}
		u.fetched[l].Store(gen)
	}
}

// load fetches list l from s and, if s is still the session, makes it the
// current one, records it as fetched at gen (the list's generation when the
// fetch began), and publishes an EventList. A list equal to the current one
// (as a reload on a cache hint usually finds) keeps its slice, whose
// identity tells whoever reads the event that nothing changed.
func (u *Upstream) load(ctx context.Context, s *session, l List, gen uint64, budget *retryBudget) error {
	if d := u.settings.Load().cfg.TimeoutDuration(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	caps := s.capabilities()
	var (
		apply func(*lists) (changed bool)
		ttl   time.Duration
	)
	switch l {
	case Tools:
		tools, t, err := u.listTools(ctx, s, budget)
		if err != nil {
			return err
		}
		ttl, apply = t, func(ls *lists) bool {
			// Seeded tools equal to the server's are its own now.
			ls.listed, ls.cached = true, false
			if !replace(&ls.tools, tools) {
				return false
			}
			ls.toolIndex = indexTools(tools)
			return true
		}
	case Prompts:
		if caps.Prompts == nil {
			return nil
		}
		prompts, t, err := u.listPrompts(ctx, s, budget)
		if err != nil {
			return err
		}
		ttl, apply = t, func(ls *lists) bool { return replace(&ls.prompts, prompts) }
	case Resources:
		if caps.Resources == nil {
			return nil
		}
		resources, t, err := u.listResources(ctx, s, budget)
		if err != nil {
			return err
		}
		templates, known := u.loadTemplates(ctx, s, budget)
		ttl, apply = t, func(ls *lists) bool {
			changed := replace(&ls.resources, resources)
			if known {
				changed = replace(&ls.templates, templates) || changed
			}
			return changed
		}
	}
	u.mu.Lock()
	current := u.sess == s
	if current {
		u.fetched[l].Store(gen)
		if apply(&u.lists) {
			u.bumpLocked()
		}
		u.publishLocked(Event{Kind: EventList, List: l})
	}
	u.mu.Unlock()
	if current {
		u.setExpiry(l, ttl)
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

// minListTTL keeps a server's tiny cache hints from making us poll it.
const minListTTL = time.Second

// setExpiry starts the cache hint of list l; 0 means none.
func (u *Upstream) setExpiry(l List, ttl time.Duration) {
	if ttl > 0 {
		u.expires[l] = time.Now().Add(max(ttl, minListTTL))
	} else {
		u.expires[l] = time.Time{}
	}
}

// nextExpiry returns when the first list's cache hint runs out, or zero.
func (u *Upstream) nextExpiry() time.Time {
	var next time.Time
	for _, t := range u.expires {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// expire marks the lists whose cache hint ran out as changed.
func (u *Upstream) expire() {
	now := time.Now()
	for l, t := range u.expires {
		if !t.IsZero() && !now.Before(t) {
			u.expires[l] = time.Time{}
			u.listGen[l].Add(1)
		}
	}
}

// loadTemplates lists the resource templates. "Method not found" means the
// server has none, and is kept as such (oh-my-pi's rule); any other failure
// keeps what was known, without failing the resources.
func (u *Upstream) loadTemplates(ctx context.Context, s *session, budget *retryBudget) ([]*mcp.ResourceTemplate, bool) {
	templates, _, err := u.listTemplates(ctx, s, budget)
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil:
		return templates, true
	case errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeMethodNotFound:
		return []*mcp.ResourceTemplate{}, true // known: none
	default:
		u.opts.Logger.Info("listing resource templates failed", "error", u.redact(err.Error()))
		return nil, false
	}
}

// resubscribe subscribes a new session to every resource the host
// subscribed to, and restores its logging level. It runs once per session,
// whatever kind of reconnect made it: a list_changed never sends the
// subscriptions again.
func (u *Upstream) resubscribe(ctx context.Context, s *session) {
	u.restoreLogLevel(ctx, s)
	if caps := s.capabilities(); caps.Resources == nil || !caps.Resources.Subscribe {
		return
	}
	u.mu.Lock()
	var uris []string
	for uri := range u.subs {
		uris = append(uris, uri)
	}
	u.mu.Unlock()
	serial := u.settings.Load().serial
	for _, uri := range uris {
		if !u.claim(s, uri) {
			continue // subscribed meanwhile
		}
		err := serially(ctx, serial, func() error { return s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}) })
		if err != nil {
			u.unclaim(s, uri)
			if ctx.Err() != nil {
				return
			}
			u.opts.Logger.Info("resubscribing failed", "uri", uri, "error", u.redact(err.Error()))
		}
	}
}

// claim marks uri as subscribed on s, and reports whether it was not
// already: whoever claims a subscription sends it, once per session.
func (u *Upstream) claim(s *session, uri string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if s.subs[uri] {
		return false
	}
	if s.subs == nil {
		s.subs = make(map[string]bool)
	}
	s.subs[uri] = true
	return true
}

// unclaim forgets that uri is subscribed on s.
func (u *Upstream) unclaim(s *session, uri string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(s.subs, uri)
}

// wanted reports whether the host is subscribed to uri.
func (u *Upstream) wanted(uri string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.subs[uri]
}

// Subscribe subscribes to updates of the resource uri; they arrive as
// EventResourceUpdated. The subscription belongs to the upstream, not to a
// session: every new session subscribes again, whatever kind of reconnect
// made it. A subscription that completes after the host unsubscribed is
// undone; one that fails leaves the subscriptions as they were.
func (u *Upstream) Subscribe(ctx context.Context, uri string) error {
	u.mu.Lock()
	had := u.subs[uri]
	u.subs[uri] = true
	u.mu.Unlock()
	err := u.do(ctx, u.settings.Load(), request{"subscribe", uri}, true, func(ctx context.Context, s *session) error {
		if caps := s.capabilities(); caps.Resources == nil || !caps.Resources.Subscribe {
			return ErrNotSupported
		}
		if u.claim(s, uri) {
			if err := s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				u.unclaim(s, uri)
				return err
			}
		}
		if !u.wanted(uri) {
			// Unsubscribed while this was in flight: roll it back.
			u.unclaim(s, uri)
			return s.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
		}
		return nil
	})
	if err != nil && !had {
		u.mu.Lock()
		delete(u.subs, uri)
		u.mu.Unlock()
	}
	return err
}

// Unsubscribe ends a subscription to the resource uri.
func (u *Upstream) Unsubscribe(ctx context.Context, uri string) error {
	u.mu.Lock()
	had := u.subs[uri]
	delete(u.subs, uri)
	u.mu.Unlock()
	if !had {
		return nil
	}
	return u.do(ctx, u.settings.Load(), request{"unsubscribe", uri}, true, func(ctx context.Context, s *session) error {
		u.unclaim(s, uri)
		return s.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
}

// GetPrompt gets the prompt params.Name, as the server knows it.
func (u *Upstream) GetPrompt(ctx context.Context, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	get := *params
	var end func()
	ctx, get.Meta, end = u.beginPeer(ctx, get.Meta)
	defer end()
	var res *mcp.GetPromptResult
	err := u.do(ctx, u.settings.Load(), request{"get prompt", params.Name}, true, func(ctx context.Context, s *session) (err error) {
		res, err = s.cs.GetPrompt(ctx, &get)
		return err
	})
	return res, err
}

// ReadResource reads the resource params.URI.
func (u *Upstream) ReadResource(ctx context.Context, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	read := *params
	var end func()
	ctx, read.Meta, end = u.beginPeer(ctx, read.Meta)
	defer end()
	var res *mcp.ReadResourceResult
	err := u.do(ctx, u.settings.Load(), request{"read resource", params.URI}, true, func(ctx context.Context, s *session) (err error) {
		res, err = s.cs.ReadResource(ctx, &read)
		return err
	})
	return res, err
}

// Complete asks the server for completions of a prompt's or a resource
// template's argument, named as the server knows them.
func (u *Upstream) Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	var what string
	if params.Ref != nil {
		what = params.Ref.Name + params.Ref.URI
	}
	complete := *params
	var end func()
	ctx, complete.Meta, end = u.beginPeer(ctx, complete.Meta)
	defer end()
	var res *mcp.CompleteResult
	err := u.do(ctx, u.settings.Load(), request{"complete", what}, true, func(ctx context.Context, s *session) (err error) {
		if caps := s.capabilities(); caps.Completions == nil {
			return ErrNotSupported
		}
		res, err = s.cs.Complete(ctx, &complete)
		return err
	})
	return res, err
}
