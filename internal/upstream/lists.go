package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// reloadDelays are the waits before each attempt to reload a list that the
// server said changed: 4 attempts, then the previous list stays and an
// EventReloadFailed is published (LiveKit's policy).
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
	if u.subs[uri] {
		u.pending = append(u.pending, Event{Kind: EventResourceUpdated, Server: u.name, At: time.Now(), URI: uri})
	}
	u.mu.Unlock()
	u.deliver()
}

// A burst of notifications is gathered into one fetch: after the first, the
// owner waits until none has come for reloadQuiet, but no longer than
// reloadMaxWait, so that an endless storm still gets a fetch now and then.
const (
	reloadQuiet   = 50 * time.Millisecond
	reloadMaxWait = time.Second
)

// reloadChanged reloads every list the server said changed since it was
// last fetched, until none is behind: notifications that arrive during a
// fetch cost one more fetch, not one each. It returns wakeNone, or why it
// stopped early.
func (u *Upstream) reloadChanged(s *session) wake {
	for u.behind() {
		if w := u.awaitQuiet(s); w != wakeNone {
			return w
		}
		for l := range numLists {
			if u.listGen[l].Load() != u.fetched[l].Load() {
				if w := u.reload(s, l); w != wakeNone {
					return w
				}
			}
		}
	}
	return wakeNone
}

// awaitQuiet waits until no notification has come for reloadQuiet, or
// reloadMaxWait has passed.
func (u *Upstream) awaitQuiet(s *session) wake {
	deadline := time.Now().Add(reloadMaxWait)
	for {
		before := u.notified()
		wait := min(reloadQuiet, time.Until(deadline))
		if w := u.pause(s, wait); w != wakeNone {
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
// previous list stays, an EventReloadFailed names the server, and the list
// is not fetched again until the next notification.
func (u *Upstream) reload(s *session, l List) wake {
	var err error
	for _, delay := range reloadDelays {
		if w := u.pause(s, delay); w != wakeNone {
			return w
		}
		if err = u.load(s, l, u.listGen[l].Load(), noRetries()); err == nil {
			return wakeNone
		}
		u.opts.Logger.Warn("reloading a list failed", "list", l.String(), "error", u.redact(err.Error()))
	}
	u.fetched[l].Store(u.listGen[l].Load())
	err = u.wrap("reload "+l.String(), err) // before locking: wrap takes the lock
	u.mu.Lock()
	u.pending = append(u.pending, Event{Kind: EventReloadFailed, Server: u.name, At: time.Now(), List: l, Err: err})
	u.mu.Unlock()
	u.deliver()
	return wakeNone
}

// pause waits d while s is the session: wakeNone when the time is up, or why
// it stopped.
func (u *Upstream) pause(s *session, d time.Duration) wake {
	if d <= 0 {
		return wakeNone
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return wakeNone
		case <-s.lost:
			return wakeLost
		case <-u.ctx.Done():
			return wakeClose
		case <-u.manual:
			if u.manualPending() {
				return wakeManual
			}
		}
	}
}

// loadAll fetches the lists of a new session, best effort: a list that
// cannot be fetched keeps its previous value until the next notification.
func (u *Upstream) loadAll(s *session, lists ...List) {
	for _, l := range lists {
		gen := u.listGen[l].Load()
		if err := u.load(s, l, gen, newRetryBudget(u.cfg.Retry)); err != nil {
			u.opts.Logger.Info("listing failed", "list", l.String(), "error", u.redact(err.Error()))
		}
		u.fetched[l].Store(gen)
	}
}

// load fetches list l from s and, if s is still the session, makes it the
// current one, records it as fetched at gen (the list's generation when the
// fetch began), and publishes an EventList.
func (u *Upstream) load(s *session, l List, gen uint64, budget *retryBudget) error {
	ctx := u.ctx
	if d := u.cfg.TimeoutDuration(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	release, err := u.acquireSerial(ctx)
	if err != nil {
		return err
	}
	defer release()
	caps := s.capabilities()
	var (
		apply func()
		ttl   time.Duration
	)
	switch l {
	case Tools:
		tools, t, err := listTools(ctx, s.cs, budget)
		if err != nil {
			return err
		}
		index := indexTools(tools)
		ttl, apply = t, func() { u.tools, u.toolIndex = tools, index }
	case Prompts:
		if caps.Prompts == nil {
			return nil
		}
		prompts, t, err := listPages(ctx, budget, func(ctx context.Context, cursor string) (page[*mcp.Prompt], error) {
			res, err := s.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
			if err != nil {
				return page[*mcp.Prompt]{}, err
			}
			return page[*mcp.Prompt]{res.Prompts, res.NextCursor, res.TTLMs}, nil
		})
		if err != nil {
			return err
		}
		ttl, apply = t, func() { u.prompts = prompts }
	case Resources:
		if caps.Resources == nil {
			return nil
		}
		resources, t, err := listPages(ctx, budget, func(ctx context.Context, cursor string) (page[*mcp.Resource], error) {
			res, err := s.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				return page[*mcp.Resource]{}, err
			}
			return page[*mcp.Resource]{res.Resources, res.NextCursor, res.TTLMs}, nil
		})
		if err != nil {
			return err
		}
		templates, known := u.loadTemplates(ctx, s, budget)
		ttl, apply = t, func() {
			u.resources = resources
			if known {
				u.templates = templates
			}
		}
		u.resubscribe(ctx, s)
	}
	u.mu.Lock()
	current := u.sess == s
	if current {
		apply()
		u.fetched[l].Store(gen)
		u.bumpLocked()
		u.pending = append(u.pending, Event{Kind: EventList, Server: u.name, At: time.Now(), List: l})
	}
	u.mu.Unlock()
	if current {
		u.deliver()
		u.setExpiry(l, ttl)
	}
	return nil
}

// minListTTL keeps a server's tiny cache hints from making us poll it.
const minListTTL = time.Second

// loadTemplates lists the resource templates. "Method not found" means the
// server has none, and is kept as such (oh-my-pi's rule); any other failure
// keeps what was known, without failing the resources.
func (u *Upstream) loadTemplates(ctx context.Context, s *session, budget *retryBudget) ([]*mcp.ResourceTemplate, bool) {
	templates, _, err := listPages(ctx, budget, func(ctx context.Context, cursor string) (page[*mcp.ResourceTemplate], error) {
		res, err := s.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return page[*mcp.ResourceTemplate]{}, err
		}
		return page[*mcp.ResourceTemplate]{res.ResourceTemplates, res.NextCursor, res.TTLMs}, nil
	})
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
// subscribed to.
func (u *Upstream) resubscribe(ctx context.Context, s *session) {
	if caps := s.capabilities(); caps.Resources == nil || !caps.Resources.Subscribe {
		return
	}
	u.mu.Lock()
	uris := make([]string, 0, len(u.subs))
	for uri := range u.subs {
		uris = append(uris, uri)
	}
	u.mu.Unlock()
	for _, uri := range uris {
		if err := s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			u.opts.Logger.Info("resubscribing failed", "uri", uri, "error", u.redact(err.Error()))
		}
	}
}

// ErrNotSupported means the server does not offer what was asked.
var ErrNotSupported = errors.New("not supported by the server")

// Subscribe subscribes to updates of the resource uri; they arrive as
// EventResourceUpdated. The subscription is kept across reconnects. A
// subscription that completes after the host unsubscribed is undone, and
// one that completes on a replaced session is left to the new session.
func (u *Upstream) Subscribe(ctx context.Context, uri string) error {
	op := fmt.Sprintf("subscribe %q", uri)
	u.mu.Lock()
	u.subs[uri] = true
	u.mu.Unlock()
	err := u.do(ctx, op, "", true, func(ctx context.Context, s *session) error {
		if caps := s.capabilities(); caps.Resources == nil || !caps.Resources.Subscribe {
			return ErrNotSupported
		}
		if err := s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			return err
		}
		u.mu.Lock()
		wanted := u.subs[uri]
		u.mu.Unlock()
		if !wanted {
			// Unsubscribed while this was in flight: roll it back.
			return s.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
		}
		return nil
	})
	if err != nil {
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
	return u.do(ctx, fmt.Sprintf("unsubscribe %q", uri), "", true, func(ctx context.Context, s *session) error {
		return s.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
}

// GetPrompt gets the prompt named name, as the server knows it.
func (u *Upstream) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	var res *mcp.GetPromptResult
	err := u.do(ctx, fmt.Sprintf("get prompt %q", name), "", true, func(ctx context.Context, s *session) (err error) {
		res, err = s.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
		return err
	})
	return res, err
}

// ReadResource reads the resource uri.
func (u *Upstream) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	var res *mcp.ReadResourceResult
	err := u.do(ctx, fmt.Sprintf("read resource %q", uri), "", true, func(ctx context.Context, s *session) (err error) {
		res, err = s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		return err
	})
	return res, err
}
